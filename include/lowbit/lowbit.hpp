// lowbit: low-bit numeric formats for LLM inference. Umbrella header: includes every part of the
// core (nothing here needs more than the standard library). See README.md and docs/.
#ifndef LOWBIT_LOWBIT_HPP
#define LOWBIT_LOWBIT_HPP

#include "core/checks.hpp"
#include "core/config.hpp"
#include "core/cpu.hpp"
#include "core/rounding.hpp"
#include "core/status.hpp"
#include "core/packing.hpp"
#include "core/span.hpp"
#include "formats/spec.hpp"
#include "formats/minifloat.hpp"
#include "formats/types.hpp"
#include "formats/limits.hpp"
#include "formats/io.hpp"
#include "convert.hpp"
#include "estimates.hpp"
#include "linalg.hpp"
#include "metrics.hpp"
#include "schemes/export.hpp"
#include "schemes/fp8.hpp"
#include "schemes/integer.hpp"
#include "schemes/layouts.hpp"
#include "schemes/mx.hpp"
#include "schemes/nvfp4.hpp"
#include "schemes/quantized_matrix.hpp"
#include "schemes/storage.hpp"
#include "transforms.hpp"

#endif  // LOWBIT_LOWBIT_HPP
