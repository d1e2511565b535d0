// lowbit: storage layouts of integer codes, and the checkpoint formats that engines read. A
// "code" is the unsigned b-bit value an engine stores (0..2^b-1): the integer schemes of
// schemes/integer.hpp produce exactly these (symmetric codes in offset binary, q + 2^(b-1)).
// docs/integer-schemes.md draws every layout.
//
//   layouts/bitstream.hpp  lowbit's bit stream: pack_codes, unpack_codes
//   layouts/gptq.hpp       GPTQ qweight / qzeros / g_idx, transpose_group_params
//   layouts/awq.hpp        AWQ GEMM qweight / qzeros
//   layouts/ggml.hpp       ggml Q4_0 / Q8_0 blocks
//
// Nothing here allocates or throws; every call follows docs/api.md and returns a status.
#ifndef LOWBIT_SCHEMES_LAYOUTS_HPP
#define LOWBIT_SCHEMES_LAYOUTS_HPP

#include "layouts/awq.hpp"
#include "layouts/bitstream.hpp"
#include "layouts/ggml.hpp"
#include "layouts/gptq.hpp"

#endif  // LOWBIT_SCHEMES_LAYOUTS_HPP
