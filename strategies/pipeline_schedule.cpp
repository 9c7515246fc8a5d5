#include "strategies/pipeline_schedule.h"

#include <algorithm>

namespace cs::strategy {
namespace {

// Megatron's get_model_chunk_id and micro-batch of virtual micro-batch k (interleaved schedule).
Slot virtual_slot(int k, int p, int v, bool forward) {
  const int in_group = k % (p * v);
  int chunk = in_group / p;
  if (!forward) chunk = v - 1 - chunk;
  return {forward, chunk, (k / (p * v)) * p + k % p};
}

}  // namespace

std::vector<Slot> pipeline_schedule(PipelineSchedule kind, int p, int v, int s, int m) {
  std::vector<Slot> out;
  if (kind == PipelineSchedule::gpipe) {
    for (int i = 0; i < m; ++i) out.push_back({true, 0, i});
    for (int i = 0; i < m; ++i) out.push_back({false, 0, i});
    return out;
  }
  if (kind == PipelineSchedule::one_f_one_b || v == 1) {
    const int warmup = std::min(p - s - 1, m);
    for (int i = 0; i < warmup; ++i) out.push_back({true, 0, i});
    for (int i = 0; i < m - warmup; ++i) {
      out.push_back({true, 0, warmup + i});
      out.push_back({false, 0, i});
    }
    for (int i = m - warmup; i < m; ++i) out.push_back({false, 0, i});
    return out;
  }
  const int total = m * v;
  // With as many micro-batches as stages Megatron runs every forward first.
  const int warmup = m == p ? total : std::min((p - s - 1) * 2 + (v - 1) * p, total);
  for (int k = 0; k < warmup; ++k) out.push_back(virtual_slot(k, p, v, true));
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back(virtual_slot(warmup + k, p, v, true));
    out.push_back(virtual_slot(k, p, v, false));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(virtual_slot(k, p, v, false));
  return out;
}

}  // namespace cs::strategy
