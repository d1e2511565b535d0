// The kernel matrix for the tests (instances.hpp): NVFP4.
#include "instances.hpp"

LOWBIT_TEST_NVFP4(template)
