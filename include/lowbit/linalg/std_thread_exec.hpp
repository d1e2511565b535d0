// lowbit: a linalg_exec (linalg/exec.hpp) backed by std::thread, for tests, benchmarks and
// simple programs. Not included by linalg.hpp: the core headers never start threads.
//
//   lowbit::std_thread_exec pool(2);            // 2 workers (the calling thread is one of them)
//   lowbit::status s = lowbit::gemm(..., pool.exec());
//
// Each parallel_for starts threads - 1 threads, runs tasks i = w, w + threads, ... on worker w
// (the caller is worker 0) and joins them: simple, not fast for tiny calls. Thread creation
// failure (std::system_error, or std::terminate under -fno-exceptions) is not handled: use a
// real pool in production code.
#ifndef LOWBIT_LINALG_STD_THREAD_EXEC_HPP
#define LOWBIT_LINALG_STD_THREAD_EXEC_HPP

#include <cstddef>
#include <thread>
#include <vector>

#include "exec.hpp"

namespace lowbit {

class std_thread_exec {
 public:
  explicit std_thread_exec(std::size_t threads) noexcept : threads_(threads == 0 ? 1 : threads) {}

  std::size_t threads() const noexcept { return threads_; }
  linalg_exec exec() noexcept { return linalg_exec{this, &run}; }

 private:
  static void run(void* context, std::size_t tasks, void (*task)(void*, std::size_t), void* arg) {
    const std::size_t threads = static_cast<std_thread_exec*>(context)->threads_;
    const std::size_t workers = threads < tasks ? threads : tasks;
    auto work = [=](std::size_t w) {
      for (std::size_t i = w; i < tasks; i += workers) task(arg, i);
    };
    std::vector<std::thread> pool;
    pool.reserve(workers - 1);
    for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
    work(0);
    for (std::thread& t : pool) t.join();
  }

  std::size_t threads_;
};

}  // namespace lowbit

#endif  // LOWBIT_LINALG_STD_THREAD_EXEC_HPP
