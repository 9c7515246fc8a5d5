// The memory accounting both executor backends share: which blocks of each category are alive,
// how many bytes, the peak and what was alive at it. The backends own the memory itself (host
// vectors for the cpu, cudaMallocAsync for the cuda backend); the ledger decides which block a
// free releases and which a later step takes back.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "taskgraph/task_graph.h"

namespace cs::exec {

// `Block` has an `int64_t bytes` member and whatever the backend keeps with it (the data).
template <class Block>
class MemoryLedger {
 public:
  using ByCategory = std::array<int64_t, ir::kMemoryCategoryCount>;

  // A later step's allocation of what is still alive from the step before (parameters,
  // gradients, optimizer state: the graph is one step) takes that block back: true when it did
  // (nothing new is allocated or counted).
  bool take_back(ir::MemoryCategory cat, int64_t bytes) {
    auto& kept = kept_[index(cat)];
    auto reuse =
        std::find_if(kept.begin(), kept.end(), [&](const Block& b) { return b.bytes == bytes; });
    if (reuse == kept.end()) return false;
    live_[index(cat)].push_back(std::move(*reuse));
    kept.erase(reuse);
    return true;
  }

  // Whether `bytes` more would go beyond `limit` (0: no limit).
  bool beyond(int64_t limit, int64_t bytes) const { return limit > 0 && current_ + bytes > limit; }

  // A new block, counted; true when it makes a new peak.
  bool add(ir::MemoryCategory cat, Block block) {
    const int64_t bytes = block.bytes;
    live_[index(cat)].push_back(std::move(block));
    return count(cat, bytes);
  }

  // A free of `bytes`: the most recent live block of that size, or else the most recent ones
  // until the freed bytes are covered; `release` gets each block before it leaves.
  void free(ir::MemoryCategory cat, int64_t bytes, const std::function<void(Block&)>& release) {
    auto& live = live_[index(cat)];
    int64_t left = bytes;
    auto exact =
        std::find_if(live.rbegin(), live.rend(), [&](const Block& b) { return b.bytes == left; });
    if (exact != live.rend()) {
      release(*exact);
      live.erase(std::next(exact).base());
      left = 0;
    }
    while (left > 0 && !live.empty()) {
      release(live.back());
      left -= live.back().bytes;
      live.pop_back();
    }
    count(cat, -bytes);
  }

  // End of a step: what is still alive persists into the next one.
  void end_step() {
    for (size_t c = 0; c < live_.size(); ++c) {
      for (auto& b : live_[c]) kept_[c].push_back(std::move(b));
      live_[c].clear();
    }
  }

  // The peak starts again from what is alive now (after the warm-up steps).
  void reset_peak() {
    peak_ = current_;
    at_peak_ = by_category_;
  }

  // "parameters 1.00 MiB, gradients 1.00 MiB" (categories with bytes alive), or "nothing".
  std::string alive_text(const std::function<std::string(int64_t)>& bytes_text) const {
    std::string alive;
    for (int c = 0; c < ir::kMemoryCategoryCount; ++c) {
      if (by_category_[static_cast<size_t>(c)] == 0) continue;
      alive += std::string(alive.empty() ? "" : ", ") +
               std::string(ir::to_string(static_cast<ir::MemoryCategory>(c))) + " " +
               bytes_text(by_category_[static_cast<size_t>(c)]);
    }
    return alive.empty() ? "nothing" : alive;
  }

  const std::vector<Block>& live(ir::MemoryCategory cat) const { return live_[index(cat)]; }
  std::vector<Block>& live(ir::MemoryCategory cat) { return live_[index(cat)]; }
  // Every block, alive or kept from the step before (to release them all at the end).
  template <class F>
  void for_each_block(F&& f) {
    for (auto* blocks : {&live_, &kept_}) {
      for (auto& cat : *blocks) {
        for (Block& b : cat) f(b);
        cat.clear();
      }
    }
  }

  int64_t current() const { return current_; }
  int64_t peak() const { return peak_; }
  const ByCategory& at_peak() const { return at_peak_; }

 private:
  static size_t index(ir::MemoryCategory cat) { return static_cast<size_t>(cat); }

  bool count(ir::MemoryCategory cat, int64_t delta) {
    current_ += delta;
    by_category_[index(cat)] += delta;
    if (current_ <= peak_) return false;
    peak_ = current_;
    at_peak_ = by_category_;
    return true;
  }

  std::array<std::vector<Block>, ir::kMemoryCategoryCount> live_, kept_;
  int64_t current_ = 0, peak_ = 0;
  ByCategory by_category_{}, at_peak_{};
};

}  // namespace cs::exec
