#include "sim/intervals.h"

#include <algorithm>
#include <cstdint>

namespace cs::sim {

std::vector<Interval> merge_intervals(std::vector<Interval> v) {
  // A stream's tasks run in order, so one stream's intervals arrive sorted: skip the sort then.
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

void CoverBuilder::merge() {
  v_ = merge_intervals(std::move(v_));
  next_merge_ = std::max(2 * v_.size(), kFirstMerge);
}

int64_t covered_length(const std::vector<Interval>& merged) {
  int64_t len = 0;
  for (const auto& iv : merged) len += iv.second - iv.first;
  return len;
}

int64_t overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t both = 0;
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    both += std::max<int64_t>(0, std::min(i->second, j->second) - std::max(i->first, j->first));
    if (i->second < j->second) {  // the one that ends first meets nothing further in the other
      ++i;
    } else {
      ++j;
    }
  }
  return both;
}

int64_t uncovered_length(const std::vector<Interval>& merged, int64_t a, int64_t b) {
  int64_t covered = 0;
  auto it = std::upper_bound(merged.begin(), merged.end(), Interval{a, INT64_MAX});
  if (it != merged.begin()) --it;
  for (; it != merged.end() && it->first < b; ++it)
    covered += std::max<int64_t>(0, std::min(b, it->second) - std::max(a, it->first));
  return (b - a) - covered;
}

}  // namespace cs::sim
