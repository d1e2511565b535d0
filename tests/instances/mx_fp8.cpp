// The kernel matrix for the tests (instances.hpp): MXFP8 and MXINT8.
#include "instances.hpp"

LOWBIT_TEST_MX_FP8(template)
