// The kernel matrix for the tests (instances.hpp): the scaled FP8 scheme in E4M3FNUZ and E5M2FNUZ.
#include "instances.hpp"

LOWBIT_TEST_FP8_FNUZ(template)
