// The kernel matrix for the tests (instances.hpp): the byte formats as sources, and the decoders.
#include "instances.hpp"

LOWBIT_TEST_CONVERT_BYTE_SOURCES(template)
