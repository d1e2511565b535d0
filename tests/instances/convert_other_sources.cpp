// The kernel matrix for the tests (instances.hpp): FP6, FP4 and E8M0 sources, and the decoders.
#include "instances.hpp"

LOWBIT_TEST_CONVERT_OTHER_SOURCES(template)
