// lowbit: transforms that choose a layer's quantized weights from calibration data
// (docs/transforms.md): the streaming Hessian of a layer's inputs and GPTQ on the integer grids.
#ifndef LOWBIT_TRANSFORMS_HPP
#define LOWBIT_TRANSFORMS_HPP

#include "transforms/gptq.hpp"
#include "transforms/hessian.hpp"

#endif  // LOWBIT_TRANSFORMS_HPP
