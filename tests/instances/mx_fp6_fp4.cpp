// The kernel matrix for the tests (instances.hpp): MXFP6 and MXFP4.
#include "instances.hpp"

LOWBIT_TEST_MX_FP6_FP4(template)
