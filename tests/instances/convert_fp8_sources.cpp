// The kernel matrix for the tests (instances.hpp): FP8 sources.
#include "instances.hpp"

LOWBIT_TEST_CONVERT_FP8_SOURCES(template)
