// The kernel matrix for the tests (instances.hpp): float16 sources.
#include "instances.hpp"

LOWBIT_TEST_CONVERT_FLOAT16(template)
