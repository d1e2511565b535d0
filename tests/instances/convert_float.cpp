// The kernel matrix for the tests (instances.hpp): float32 and double sources.
#include "instances.hpp"

LOWBIT_TEST_CONVERT_FLOAT(template)
