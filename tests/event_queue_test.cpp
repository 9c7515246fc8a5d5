// The engine's event queue (a radix heap): events leave in time order and, at equal times, in push
// order, exactly as a (time, push number) priority queue would give them; next_time() may be
// asked before pushes that are earlier than its answer (the flow-level loop does) and stays
// right.
#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <queue>
#include <random>
#include <tuple>

namespace cs::sim {
namespace {

// The reference: a binary heap on (time, push number), the order the engine promises.
struct Reference {
  using Entry = std::tuple<int64_t, uint64_t, ir::TaskId>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  uint64_t pushes = 0;
  void push(SimTime t, ir::TaskId task) { heap.emplace(t.ps, pushes++, task); }
};

TEST(EventQueue, SmallCaseByHand) {
  EventQueue q;
  q.push({SimTime{30}, 1});
  q.push({SimTime{10}, 2});
  q.push({SimTime{30}, 3});  // ties with task 1, pushed after it
  q.push({SimTime{20}, 4});
  EXPECT_EQ(q.next_time(), SimTime{10});
  EXPECT_EQ(q.take().task, 2u);
  q.push({SimTime{10}, 5});  // at the time just taken: next, before the later ones
  EXPECT_EQ(q.take().task, 5u);
  EXPECT_EQ(q.take().task, 4u);
  EXPECT_EQ(q.take().task, 1u);
  EXPECT_EQ(q.take().task, 3u);
  EXPECT_TRUE(q.empty());
}

// Random pushes never before the last time taken (the engine's rule), clustered so that ties and
// pushes at the current time are common, with next_time() asked at random points between them.
TEST(EventQueue, SameOrderAsATimeThenPushOrderHeap) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    EventQueue q;
    Reference ref;
    int64_t now = 0;
    ir::TaskId next_task = 0;
    const int64_t spread = int64_t{1} << (5 + round * 2);  // 32 ps .. ~2^43 ps apart
    for (int step = 0; step < 20000; ++step) {
      const int pushes = static_cast<int>(rng() % 3);
      for (int i = 0; i < pushes; ++i) {
        const int64_t dt = rng() % 4 == 0 ? 0 : static_cast<int64_t>(rng() % spread);
        q.push({SimTime{now + dt}, next_task});
        ref.push(SimTime{now + dt}, next_task);
        ++next_task;
      }
      if (ref.heap.empty()) continue;
      ASSERT_FALSE(q.empty());
      ASSERT_EQ(q.next_time().ps, std::get<0>(ref.heap.top())) << "round " << round;
      if (rng() % 4 == 0) {
        // Like a flow finishing between events: a push at a time between the last taken and
        // the next pending, after next_time() was asked.
        const int64_t at =
            now + static_cast<int64_t>(rng() % (std::get<0>(ref.heap.top()) - now + 1));
        q.push({SimTime{at}, next_task});
        ref.push(SimTime{at}, next_task);
        ++next_task;
        ASSERT_EQ(q.next_time().ps, std::get<0>(ref.heap.top()));
        now = at;
      }
      const Event e = q.take();
      ASSERT_EQ(e.time.ps, std::get<0>(ref.heap.top()));
      ASSERT_EQ(e.task, std::get<2>(ref.heap.top())) << "a tie left out of push order";
      ref.heap.pop();
      now = e.time.ps;
    }
    while (!ref.heap.empty()) {
      ASSERT_EQ(q.take().task, std::get<2>(ref.heap.top()));
      ref.heap.pop();
    }
    EXPECT_TRUE(q.empty());
  }
}

}  // namespace
}  // namespace cs::sim
