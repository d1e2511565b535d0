// The kernel matrix for the tests (instances.hpp): the scaled FP8 scheme in E4M3FN and E5M2.
#include "instances.hpp"

LOWBIT_TEST_FP8_OCP(template)
