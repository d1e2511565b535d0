// lowbit: transforms that choose a layer's quantized weights from calibration data
// (docs/transforms.md): the streaming Hessian of a layer's inputs and GPTQ on the integer grids;
// activation statistics, per-input-channel scaling, SmoothQuant and AWQ.
#ifndef LOWBIT_TRANSFORMS_HPP
#define LOWBIT_TRANSFORMS_HPP

#include "transforms/activation_stats.hpp"
#include "transforms/awq.hpp"
#include "transforms/channel_scaling.hpp"
#include "transforms/gptq.hpp"
#include "transforms/hessian.hpp"
#include "transforms/smoothquant.hpp"

#endif  // LOWBIT_TRANSFORMS_HPP
