// Time intervals [start, end) in picoseconds, as the report and the bottleneck analysis sum them:
// merged into a sorted, disjoint cover, and the part of a span that a cover leaves open.
#pragma once

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

}  // namespace cs::sim
