#include "strategies/pipeline_schedule.h"

#include <algorithm>

namespace cs::strategy {
namespace {

// Megatron's get_model_chunk_id and micro-batch of virtual micro-batch k (interleaved schedule).
Slot virtual_slot(int k, int p, int v, bool forward) {
  const int in_group = k % (p * v);
  int chunk = in_group / p;
  if (!forward) chunk = v - 1 - chunk;
  return {forward ? Pass::forward : Pass::backward, chunk, (k / (p * v)) * p + k % p};
}

// ZB-H1 (Qi et al. 2024, section 2.1): 1F1B's order, p - s - 1 warm-up forwards then one F one
// B, with each backward split into B and W and stage s letting at most s W passes wait behind
// their B. Why s: under 1F1B stage s holds at most p - s micro-batches' activations (its warm-up
// forwards and the one in flight), the first stage p. A pending W keeps part of a micro-batch's
// activations (the linears' inputs), so s of them bring stage s to at most p micro-batches' worth,
// the first stage's 1F1B peak; the first stage defers none. The paper states the W passes start
// later by the number of warm-up micro-batches; the authors' Megatron code (sail-sg, ZB-H1 mode)
// splits B from W in rank r's first r steady iterations and runs one held W after each B from
// then on, the same count as here. Here the oldest held W runs first (theirs runs the newest W
// at once and the held ones in the cool-down): which micro-batch's W waits does not change the
// memory or the time. The held W passes fill the cool-down, which is where the bubble shrinks:
// with F = B = W the step is (m + p - 1) x 3 - 2 (p - 1) units against 1F1B's (m + p - 1) x 3.
std::vector<Slot> zero_bubble_h1(int p, int s, int m) {
  std::vector<Slot> out;
  out.reserve(static_cast<size_t>(3 * m));
  int f = 0, b = 0, w = 0;
  auto forward = [&] { out.push_back({Pass::forward, 0, f++}); };
  auto backward = [&] {
    out.push_back({Pass::input_grad, 0, b++});
    while (b - w > s) out.push_back({Pass::weight_grad, 0, w++});
  };
  const int warmup = std::min(p - s - 1, m);
  while (f < warmup) forward();
  while (f < m) forward(), backward();
  while (b < m) backward();
  while (w < m) out.push_back({Pass::weight_grad, 0, w++});
  return out;
}

}  // namespace

std::vector<Slot> pipeline_schedule(PipelineSchedule kind, int p, int v, int s, int m) {
  std::vector<Slot> out;
  if (kind == PipelineSchedule::gpipe) {
    for (int i = 0; i < m; ++i) out.push_back({Pass::forward, 0, i});
    for (int i = 0; i < m; ++i) out.push_back({Pass::backward, 0, i});
    return out;
  }
  if (kind == PipelineSchedule::zb_h1 && p > 1) return zero_bubble_h1(p, s, m);
  if (kind != PipelineSchedule::interleaved || v == 1) {
    const int warmup = std::min(p - s - 1, m);
    for (int i = 0; i < warmup; ++i) out.push_back({Pass::forward, 0, i});
    for (int i = 0; i < m - warmup; ++i) {
      out.push_back({Pass::forward, 0, warmup + i});
      out.push_back({Pass::backward, 0, i});
    }
    for (int i = m - warmup; i < m; ++i) out.push_back({Pass::backward, 0, i});
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
