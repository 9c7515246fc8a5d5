// Runs f(0) .. f(n-1) on `threads` workers (0: every core), the calling thread among them. Work
// is handed out one index at a time, so results stored by index come out in the same order
// whatever the scheduling. f must not throw (a worker's exception would end the program): catch
// inside and record the failure by index.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace cs {

template <typename F>
void parallel_for(size_t n, unsigned threads, F&& f) {
  const unsigned workers =
      threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) f(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < workers && t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace cs
