// lowbit: how the linear-algebra calls run their independent pieces of work (docs/linalg.md).
//
// Every call in linalg/ takes an optional linalg_exec as its last argument. By default (a
// default-constructed one) the work runs on the calling thread; lowbit never starts a thread.
// A caller with a thread pool hands in its parallel_for, which must run task(arg, i) once for
// every i in [0, tasks), in any order and on any threads, and return when all have finished.
//
//   struct my_pool { ... };
//   void pool_for(void* pool, std::size_t tasks, void (*task)(void*, std::size_t), void* arg) {
//     static_cast<my_pool*>(pool)->run(tasks, [&](std::size_t i) { task(arg, i); });
//   }
//   lowbit::linalg_exec exec{&pool, &pool_for};
//   lowbit::status s = lowbit::gemm(a, k, b, n, m, n, k, {}, c, n, exec);
//
// The tasks of one parallel_for write disjoint memory and each computes its outputs in a fixed
// order, so results never depend on the number of threads or on the schedule. Each task runs in
// the IEEE default floating-point environment (kernels/fp_env.hpp), whatever the worker
// thread's MXCSR holds. linalg/std_thread_exec.hpp has a small std::thread implementation for
// tests and benchmarks.
#ifndef LOWBIT_LINALG_EXEC_HPP
#define LOWBIT_LINALG_EXEC_HPP

#include <cstddef>

#include "../kernels/fp_env.hpp"

namespace lowbit {

struct linalg_exec {
  void* context = nullptr;
  // nullptr: run every task on the calling thread, in index order.
  void (*parallel_for)(void* context, std::size_t tasks, void (*task)(void* arg, std::size_t i), void* arg) = nullptr;
};

namespace detail {

// Runs f(i) for i in [0, tasks) through exec. f must be callable concurrently on distinct i.
template <class F>
void linalg_parallel_for(const linalg_exec& exec, std::size_t tasks, F& f) {
  if (tasks == 0) return;
  if (exec.parallel_for == nullptr || tasks == 1) {
    for (std::size_t i = 0; i < tasks; ++i) f(i);
    return;
  }
  exec.parallel_for(
      exec.context, tasks,
      [](void* arg, std::size_t i) {
        const kernels::ieee_scope fp;  // the worker's MXCSR is its own
        (*static_cast<F*>(arg))(i);
      },
      &f);
}

}  // namespace detail
}  // namespace lowbit

#endif  // LOWBIT_LINALG_EXEC_HPP
