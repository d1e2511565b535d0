// lowbit: dense single-precision linear algebra for the transforms (GPTQ and its Hessian):
// matrix multiply, symmetric rank-k update, Cholesky factorisation, inverse from the factor and
// triangular solves, header-only and without BLAS. docs/linalg.md has the conventions.
// linalg/std_thread_exec.hpp (not included here) provides a std::thread-based linalg_exec.
#ifndef LOWBIT_LINALG_HPP
#define LOWBIT_LINALG_HPP

#include "linalg/cholesky.hpp"
#include "linalg/exec.hpp"
#include "linalg/gemm.hpp"
#include "linalg/types.hpp"

#endif  // LOWBIT_LINALG_HPP
