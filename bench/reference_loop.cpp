// The bench's yardstick (bench/run.sh): a fixed amount of work shaped like the simulator's, timed
// in the same run as every row, so that each row can be read as a multiple of it. A row measured
// on a loaded or slower machine takes longer, and so does this loop: their ratio moves only when
// the row's own code does (a regression cannot hide behind a quiet machine, nor a gain be faked
// by a busy one).
//
// The work: a discrete-event loop on a plain binary heap (std::priority_queue), 65,536 pending
// events, 1 M pops each pushing one event a pseudo-random time later (xorshift), as the engine
// pops a task's end and pushes its successor's. No allocation inside the timed loop (the heap's
// storage is reserved and touched first): the yardstick must not absorb a page-fault storm that a
// row pays. Prints the loop's wall and CPU seconds (each the median of 3 passes, as run.sh takes
// the median of 3 runs of a short row) and a checksum that keeps the loop from being optimised
// away.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace {

constexpr int kPending = 1 << 16;
constexpr int kEvents = 1 << 20;

using Event = std::pair<uint64_t, uint32_t>;  // time, id

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

uint64_t run_once() {
  std::vector<Event> storage;
  storage.reserve(kPending + 1);
  std::priority_queue<Event, std::vector<Event>, std::greater<>> heap(std::greater<>{},
                                                                      std::move(storage));
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (uint32_t i = 0; i < kPending; ++i) heap.emplace(next() % 1000000, i);
  uint64_t checksum = 0;
  for (int i = 0; i < kEvents; ++i) {
    const auto [time, id] = heap.top();
    heap.pop();
    checksum += time ^ id;
    heap.emplace(time + 1 + next() % 1000000, id);
  }
  return checksum;
}

}  // namespace

int main() {
  std::array<double, 3> wall{}, cpu{};
  uint64_t checksum = 0;
  for (size_t pass = 0; pass < wall.size(); ++pass) {
    const auto wall0 = std::chrono::steady_clock::now();
    const double cpu0 = cpu_seconds();
    checksum ^= run_once();
    cpu[pass] = cpu_seconds() - cpu0;
    wall[pass] = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  std::printf("%.4f %.4f %016llx\n", wall[1], cpu[1], static_cast<unsigned long long>(checksum));
  return 0;
}
