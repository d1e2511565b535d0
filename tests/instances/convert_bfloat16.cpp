// The kernel matrix for the tests (instances.hpp): bfloat16 sources.
#include "instances.hpp"

LOWBIT_TEST_CONVERT_BFLOAT16(template)
