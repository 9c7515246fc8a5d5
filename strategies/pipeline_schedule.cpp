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

// ZB-H1's order, found as Qi et al. describe it: run every stage with unit-time F, B and W
// passes and, at each step, take B when its gradient has arrived, else F while the stage holds
// fewer than p - s micro-batches (1F1B's memory bound), else a pending W. Static orders from
// this greedy list schedule keep 1F1B's activation memory and fill its cool-down with W passes.
std::vector<Slot> zero_bubble_h1(int p, int stage, int m) {
  std::vector<std::vector<Slot>> order(static_cast<size_t>(p));
  std::vector<int> f_done(static_cast<size_t>(p), 0), b_done(static_cast<size_t>(p), 0), w_done(static_cast<size_t>(p), 0);
  // Finish times (in unit steps) of each stage's F and B of each micro-batch; -1 while not run.
  std::vector<std::vector<int>> f_end(static_cast<size_t>(p), std::vector<int>(static_cast<size_t>(m), -1));
  std::vector<std::vector<int>> b_end = f_end;
  for (int t = 0; std::any_of(w_done.begin(), w_done.end(), [m](int w) { return w < m; }); ++t) {
    for (int s = 0; s < p; ++s) {
      const size_t si = static_cast<size_t>(s);
      const int b = b_done[si], f = f_done[si];
      const bool b_ready = b < f && (s == p - 1 || (b_end[si + 1][static_cast<size_t>(b)] >= 0 && b_end[si + 1][static_cast<size_t>(b)] <= t));
      const bool f_ready = f < m && f - b < p - s && (s == 0 || (f_end[si - 1][static_cast<size_t>(f)] >= 0 && f_end[si - 1][static_cast<size_t>(f)] <= t));
      if (b_ready) {
        order[si].push_back({Pass::input_grad, 0, b});
        b_end[si][static_cast<size_t>(b)] = t + 1;
        ++b_done[si];
      } else if (f_ready) {
        order[si].push_back({Pass::forward, 0, f});
        f_end[si][static_cast<size_t>(f)] = t + 1;
        ++f_done[si];
      } else if (w_done[si] < b_done[si]) {
        order[si].push_back({Pass::weight_grad, 0, w_done[si]++});
      }
    }
  }
  return order[static_cast<size_t>(stage)];
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
