// The engine's pending events: a monotone priority queue (a radix heap) over integer picosecond
// times. Events leave in time order and, at equal times, in push order.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "common/units.h"
#include "taskgraph/task_graph.h"

namespace cs::sim {

struct Event {
  SimTime time;
  ir::TaskId task;
  uint32_t version : 31 = 0;  // an event older than its task's latest re-timing is stale
  uint32_t starts : 1 = 0;    // a compute task held back by its host starts now (it does not end)
};
static_assert(sizeof(Event) == 16, "keep events small: the queue moves them on every push and pop");

// Pending events, earliest time first and, at equal times, in the order they were pushed, so the
// same input always gives the same Timeline. A radix heap: event times never go below the last one
// taken (`last_`), so an event is filed in the bucket of the highest bit in which its time differs
// from last_ (bucket 0: equal to it). Taking from an empty bucket 0 finds the lowest non-empty
// bucket's earliest time, makes it last_ and refiles that bucket's events, each into a lower
// bucket: an event moves at most 64 times, in practice two or three, by sequential copies where a
// binary or 4-ary heap pays a chain of dependent, unpredictable comparisons per pop. Equal times
// always share a bucket and refiling keeps their order, so ties leave in push order.
class EventQueue {
 public:
  bool empty() const { return size_ == 0; }
  // The earliest pending time (the queue must not be empty). Does not reorganise the queue, so
  // pushes before the next take() may still be earlier than it, as long as they are not before
  // the last event taken.
  SimTime next_time() {
    if (head_ < buckets_[0].size) return SimTime{static_cast<int64_t>(last_)};
    if (!peeked_) {
      peek_ = UINT64_MAX;
      for (const Event& e : buckets_[lowest_bucket()].events()) peek_ = std::min(peek_, key(e));
      peeked_ = true;
    }
    return SimTime{static_cast<int64_t>(peek_)};
  }
  Event take() {  // removes and returns the earliest event (the queue must not be empty)
    Bucket& now = buckets_[0];
    if (head_ == now.size) refill_now();
    const Event e = now.slots[head_];
    if (++head_ == now.size) now.size = head_ = 0;
    --size_;
    return e;
  }
  // `e.time` is never before the last event taken. By value, in two registers: a 16-byte load
  // of an event just stored field by field cannot be forwarded from the stores and stalls.
  void push(Event e) {
    const uint64_t k = key(e);
    // An event at last_ goes to bucket 0, which next_time() reads first; peek_ stays the earliest
    // time above it (buckets hold ever later times: bucket b's are all before bucket b + 1's).
    if (peeked_ && k != last_ && k < peek_) peek_ = k;
    ++size_;
    file(e, k);
  }

 private:
  // Events in push order; its slots only grow (no per-push capacity check beyond one compare, and
  // no call: std::vector::push_back is not inlined here).
  struct Bucket {
    std::vector<Event> slots;
    size_t size = 0;
    void add(Event e) {
      if (size == slots.size()) slots.resize(std::max<size_t>(64, 2 * size));
      slots[size++] = e;
    }
    std::span<const Event> events() const { return {slots.data(), size}; }
  };
  static uint64_t key(const Event& e) { return static_cast<uint64_t>(e.time.ps); }
  int lowest_bucket() const { return std::countr_zero(filled_) + 1; }
  void file(Event e, uint64_t k) {
    if (k == last_) {
      buckets_[0].add(e);
      return;
    }
    const int b = std::bit_width(k ^ last_);  // 1..64
    buckets_[b].add(e);
    filled_ |= uint64_t{1} << (b - 1);
  }
  // Bucket 0 is empty: the lowest non-empty bucket's earliest time becomes last_ and its events
  // are refiled in order (those at last_ into bucket 0, the others into buckets below it: they
  // agree with last_ above the bucket's bit).
  void refill_now() {
    const int b = lowest_bucket();
    Bucket& from = buckets_[b];
    filled_ &= ~(uint64_t{1} << (b - 1));
    uint64_t least = UINT64_MAX;
    for (const Event& e : from.events()) least = std::min(least, key(e));
    last_ = least;
    for (const Event& e : from.events()) file(e, key(e));
    from.size = 0;
    peeked_ = false;
  }

  std::array<Bucket, 65> buckets_;
  uint64_t filled_ = 0;  // bit b - 1 set: bucket b (1..64) holds events
  size_t head_ = 0;      // bucket 0's next event; [head_, size) pending
  uint64_t last_ = 0;    // the time of the last refill: bucket 0's events are at it
  size_t size_ = 0;
  uint64_t peek_ = 0;  // with bucket 0 empty, next_time()'s answer, while no refill since
  bool peeked_ = false;
};

}  // namespace cs::sim
