// Time intervals [start, end) in picoseconds, as the report and the bottleneck analysis sum them:
// merged into a sorted, disjoint cover, and the part of a span that a cover leaves open.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace cs::sim {

using Interval = std::pair<int64_t, int64_t>;

// Sorted, disjoint, empty intervals dropped; overlapping or touching ones joined.
std::vector<Interval> merge_intervals(std::vector<Interval> v);
// The summed length of a merged cover.
int64_t covered_length(const std::vector<Interval>& merged);
// The length covered by both of two merged covers (a sweep, no allocation): the union covers
// covered_length(a) + covered_length(b) - overlap_length(a, b).
int64_t overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b);
// The length of [a, b) that the merged cover leaves uncovered.
int64_t uncovered_length(const std::vector<Interval>& merged, int64_t a, int64_t b);

// A merged cover built one interval at a time in bounded memory: what was added is merged
// whenever it has doubled since the last merge, so a rank's million back-to-back kernels are held
// as the gaps between them, not a million pairs (16 MB each; a 64-GPU step's report held 270 MB).
// take() gives what merge_intervals of everything added would.
class CoverBuilder {
 public:
  void add(int64_t start, int64_t end) {
    v_.emplace_back(start, end);
    if (v_.size() >= next_merge_) merge();
  }
  std::vector<Interval> take() {
    merge();
    return std::move(v_);
  }

 private:
  static constexpr size_t kFirstMerge = 4096;  // intervals (64 KiB) held before the first merge
  void merge();
  std::vector<Interval> v_;
  size_t next_merge_ = kFirstMerge;
};

}  // namespace cs::sim
