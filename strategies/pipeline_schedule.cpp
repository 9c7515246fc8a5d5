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

// PipeDream-Flush / Megatron's 1F1B: p - s - 1 warm-up forwards, one forward one backward, then
// the remaining backwards.
std::vector<Slot> one_f_one_b(int p, int s, int m) {
  std::vector<Slot> out;
  const int warmup = std::min(p - s - 1, m);
  for (int i = 0; i < warmup; ++i) out.push_back({Pass::forward, 0, i});
  for (int i = 0; i < m - warmup; ++i) {
    out.push_back({Pass::forward, 0, warmup + i});
    out.push_back({Pass::backward, 0, i});
  }
  for (int i = m - warmup; i < m; ++i) out.push_back({Pass::backward, 0, i});
  return out;
}

// Megatron-LM has no flag for the schedules other than 1F1B and its interleaved form.
LaunchArgs megatron_runs_one_f_one_b(std::string_view name) {
  return {{},
          {"schedule " + std::string(name) +
           ": Megatron-LM runs 1F1B (interleaved with virtual stages)"}};
}

// Which frameworks run which schedule (Stack::ideal runs every one: a bound, not a framework):
//   megatron_core  1F1B and interleaved 1F1B only (megatron/core/pipeline_parallel/schedules.py:
//                  forward_backward_pipelining_without_interleaving / _with_interleaving);
//   pytorch_eager  torch.distributed.pipelining: ScheduleGPipe, Schedule1F1B,
//                  ScheduleInterleaved1F1B, ScheduleInterleavedZeroBubble (ZB1P, which is ZB-H1
//                  with one stage per rank); ScheduleZBVZeroBubble (ZB-V) is not modelled;
//   torch_compile  the same but zero bubble: torch.distributed.pipelining refuses the split
//                  backward on compiled stages (_check_torch_compile_compatibility);
//   deepspeed      its PipelineEngine's TrainSchedule, 1F1B without interleaving.
bool any_of_stacks(model::Stack s, std::initializer_list<model::Stack> stacks) {
  return s == model::Stack::ideal || std::find(stacks.begin(), stacks.end(), s) != stacks.end();
}
using model::Stack;

class GPipe final : public PipelineScheduleFlavour {
 public:
  GPipe() : PipelineScheduleFlavour(PipelineSchedule::gpipe, "gpipe") {}
  std::vector<Slot> order(int /*p*/, int /*v*/, int /*s*/, int m) const override {
    std::vector<Slot> out;
    for (int i = 0; i < m; ++i) out.push_back({Pass::forward, 0, i});
    for (int i = 0; i < m; ++i) out.push_back({Pass::backward, 0, i});
    return out;
  }
  // Every micro-batch's activations live until its backward.
  HeldMicroBatches held_at_peak(int /*p*/, int /*s*/, int64_t m) const override { return {m, 0}; }
  bool memory_grows_with_micro_batches() const override { return true; }
  bool run_by(Stack s) const override {
    return any_of_stacks(s, {Stack::pytorch_eager, Stack::torch_compile});
  }
  LaunchArgs megatron_args(const Layout&) const override { return megatron_runs_one_f_one_b(name); }
  std::string_view torch_schedule_class() const override { return "GPipe"; }
};

class OneFOneB final : public PipelineScheduleFlavour {
 public:
  OneFOneB() : PipelineScheduleFlavour(PipelineSchedule::one_f_one_b, "1f1b") {}
  std::vector<Slot> order(int p, int /*v*/, int s, int m) const override {
    return one_f_one_b(p, s, m);
  }
  bool run_by(Stack) const override { return true; }
  std::string_view torch_schedule_class() const override { return "1F1B"; }
};

class Interleaved final : public PipelineScheduleFlavour {
 public:
  Interleaved() : PipelineScheduleFlavour(PipelineSchedule::interleaved, "interleaved") {}
  bool interleaves() const override { return true; }
  std::vector<Slot> order(int p, int v, int s, int m) const override {
    if (v == 1) return one_f_one_b(p, s, m);
    std::vector<Slot> out;
    const int total = m * v, warmup = warmup_forwards(p, v, s, m);
    for (int k = 0; k < warmup; ++k) out.push_back(virtual_slot(k, p, v, true));
    for (int k = 0; k < total - warmup; ++k) {
      out.push_back(virtual_slot(warmup + k, p, v, true));
      out.push_back(virtual_slot(k, p, v, false));
    }
    for (int k = total - warmup; k < total; ++k) out.push_back(virtual_slot(k, p, v, false));
    return out;
  }
  // Megatron's steady state runs a forward and a backward, then one exchange for both
  // (send_forward_backward_recv_forward_backward, schedules.py
  // forward_backward_pipelining_with_interleaving); warm-up and cool-down exchange after each pass.
  size_t passes_per_exchange(int p, int v, int s, int m, size_t first) const override {
    if (v == 1) return 1;
    const auto warmup = static_cast<size_t>(warmup_forwards(p, v, s, m));
    const auto steady_end = warmup + 2 * (static_cast<size_t>(m * v) - warmup);
    return first >= warmup && first < steady_end && (first - warmup) % 2 == 0 ? 2 : 1;
  }
  // Forwards before the first backward (Megatron's num_warmup_microbatches); with as many
  // micro-batches as stages Megatron runs every forward first.
  static int warmup_forwards(int p, int v, int s, int m) {
    const int total = m * v;
    return m == p ? total : std::min((p - s - 1) * 2 + (v - 1) * p, total);
  }
  // The bubble shrinks by v (Narayanan et al. 2021, section 2.2).
  double fill_seconds(double fill, int /*p*/, int v, double /*weight_grad*/) const override {
    return fill / v;
  }
  // The micro-batch count must be a multiple of p (refusal).
  int64_t second_short_run(int p) const override { return 2 * p; }
  std::string refusal(const Layout& l, int64_t micro_batches) const override {
    if (l.pp < 2 || l.virtual_stages < 2)
      return "the interleaved schedule needs pp > 1 and virtual_stages > 1";
    if (micro_batches % l.pp != 0) {
      return "the interleaved schedule needs the micro-batch count (" +
             std::to_string(micro_batches) + ") to be a multiple of pp (" + std::to_string(l.pp) +
             ")";
    }
    return "";
  }
  bool run_by(Stack s) const override {
    return any_of_stacks(s, {Stack::megatron_core, Stack::pytorch_eager, Stack::torch_compile});
  }
  // Megatron-LM: every v >= 2 dividing the layers per stage (its chunks are
  // num_layers_per_virtual_pipeline_stage >= 1 layers each, the same on every chunk), no cap by
  // default; where the layers do not divide but the layers + 2 do (2 or more a chunk), the split
  // with the embedding and the loss counted as layers, as Megatron-Bridge's recipes set it for
  // Llama 3.1 405B (126 + 2 over pp 8 x vp 8) and Qwen3-235B (94 + 2 over pp 8 x vp 4). Where
  // neither divides for any v, the uneven default split, which Megatron-LM runs given as
  // --pipeline-model-parallel-layout: Megatron-Bridge places DeepSeek-V3's 61 layers so on 8 to
  // 32 chunks (set_deepseek_v3_pipeline_model_parallel_layout). torch.distributed.pipelining
  // splits pp x v stages of uneven layer counts too: v = 2 .. 4 by default (kDefaultMaxChunks),
  // each chunk a layer at least.
  std::vector<PlannedChunks> planned_chunks(Stack stack, int layers, int pp,
                                            int max_chunks) const override {
    std::vector<PlannedChunks> out;
    if (pp < 2) return out;
    const bool megatron = stack == Stack::megatron_core;
    if (max_chunks <= 0) max_chunks = megatron ? layers : kDefaultMaxChunks;
    auto even = [&](int chunks) { return layers % chunks == 0; };
    auto even_counting_ends = [&](int chunks) {
      return (layers + 2) % chunks == 0 && (layers + 2) / chunks >= 2;
    };
    // The uneven splits only where no v at all splits evenly (a prime 61): elsewhere they would
    // double the search for splits no recipe uses.
    bool some_even = false;
    for (int v = 2; pp * v <= layers; ++v)
      some_even = some_even || even(pp * v) || even_counting_ends(pp * v);
    for (int v = 2; v <= max_chunks && pp * v <= layers; ++v) {
      const int chunks = pp * v;
      if (!megatron || even(chunks))
        out.push_back({v, false});
      else if (even_counting_ends(chunks))
        out.push_back({v, true});
      else if (!some_even)
        out.push_back({v, false});
    }
    return out;
  }
  // The chunks per stage tried without a cap where a stack has none of its own: the bubble shrinks
  // by v, the point-to-point transfers grow by v; past 4 the gain is small.
  static constexpr int kDefaultMaxChunks = 4;
  LaunchArgs megatron_args(const Layout& l) const override {
    return {{"--num-virtual-stages-per-pipeline-rank " + std::to_string(l.virtual_stages)}, {}};
  }
  std::string_view torch_schedule_class() const override { return "Interleaved1F1B"; }
};

class ZeroBubbleH1 final : public PipelineScheduleFlavour {
 public:
  ZeroBubbleH1() : PipelineScheduleFlavour(PipelineSchedule::zb_h1, "zb_h1") {}
  bool splits_backward() const override { return true; }
  std::vector<Slot> order(int p, int /*v*/, int s, int m) const override {
    return p > 1 ? zero_bubble_h1(p, s, m) : one_f_one_b(p, s, m);
  }
  // ZB-H1's order on stage s (zero_bubble_h1): w = min(p - s - 1, m) warm-up forwards, then F, B
  // and the oldest held W while more than s wait. The k-th steady forward (k = 0 .. m - w - 1)
  // finds B done k times and W max(0, k - s) times, so after it the stage holds min(p - s, m)
  // micro-batches awaiting B, as 1F1B does, and min(k, s) awaiting W; the last forward has
  // k = m - p + s. Every later pass trades one held micro-batch's activations for its linears'
  // inputs (a B) or frees them (a W), so this is the peak where a micro-batch awaiting W holds no
  // more than one awaiting B; under full recomputation (a layer's input saved, its linears'
  // inputs re-materialised and kept for W) it is a state the stage passes through, so a bound.
  HeldMicroBatches held_at_peak(int p, int s, int64_t m) const override {
    return {std::min<int64_t>(p - s, m), std::clamp<int64_t>(m - p + s, 0, s)};
  }
  // The held W passes fill the cool-down: with equal F, B and W the bubble is (p - 1)(F + B - W)
  // against 1F1B's (p - 1)(F + B + W).
  double fill_seconds(double fill, int p, int /*v*/, double weight_grad) const override {
    return std::max(0.0, fill - 2.0 * (p - 1) * weight_grad);
  }
  std::string refusal(const Layout& l, int64_t /*micro_batches*/) const override {
    if (l.virtual_stages != 1) return "zb_h1 runs one model chunk per stage (virtual_stages: 1)";
    return "";
  }
  bool run_by(Stack s) const override { return any_of_stacks(s, {Stack::pytorch_eager}); }
  LaunchArgs megatron_args(const Layout&) const override { return megatron_runs_one_f_one_b(name); }
  std::string_view torch_schedule_class() const override { return "InterleavedZeroBubble"; }
};

}  // namespace

// 1F1B (and the interleaved schedule, which holds at least as many): stage s runs p - s warm-up
// forwards.
HeldMicroBatches PipelineScheduleFlavour::held_at_peak(int p, int s, int64_t m) const {
  return {std::min<int64_t>(p - s, m), 0};
}

double PipelineScheduleFlavour::fill_seconds(double fill, int /*p*/, int /*chunks_per_stage*/,
                                             double /*weight_grad*/) const {
  return fill;
}

std::string PipelineScheduleFlavour::refusal(const Layout& l, int64_t /*micro_batches*/) const {
  if (l.virtual_stages != 1) return "virtual_stages > 1 needs schedule: interleaved";
  return "";
}

LaunchArgs PipelineScheduleFlavour::megatron_args(const Layout&) const { return {}; }

const PipelineScheduleFlavour& pipeline_schedule_flavour(PipelineSchedule s) {
  static const GPipe gpipe;
  static const OneFOneB one_f_one_b;
  static const Interleaved interleaved;
  static const ZeroBubbleH1 zb_h1;
  switch (s) {
    case PipelineSchedule::gpipe:
      return gpipe;
    case PipelineSchedule::one_f_one_b:
      return one_f_one_b;
    case PipelineSchedule::interleaved:
      return interleaved;
    case PipelineSchedule::zb_h1:
      return zb_h1;
  }
  return one_f_one_b;
}

const std::vector<const PipelineScheduleFlavour*>& pipeline_schedule_flavours() {
  static const std::vector<const PipelineScheduleFlavour*> all = {
      &pipeline_schedule_flavour(PipelineSchedule::gpipe),
      &pipeline_schedule_flavour(PipelineSchedule::one_f_one_b),
      &pipeline_schedule_flavour(PipelineSchedule::interleaved),
      &pipeline_schedule_flavour(PipelineSchedule::zb_h1)};
  return all;
}

std::vector<std::pair<std::string, PipelineSchedule>> pipeline_schedule_names() {
  std::vector<std::pair<std::string, PipelineSchedule>> out;
  for (const PipelineScheduleFlavour* f : pipeline_schedule_flavours())
    out.emplace_back(std::string(f->name), f->id);
  return out;
}

std::vector<Slot> pipeline_schedule(PipelineSchedule kind, int p, int v, int s, int m) {
  return pipeline_schedule_flavour(kind).order(p, v, s, m);
}

int64_t blocking_exchanges(PipelineSchedule kind, int p, int v, int s, int m) {
  const PipelineScheduleFlavour& f = pipeline_schedule_flavour(kind);
  const size_t passes = f.order(p, v, s, m).size();
  int64_t exchanges = 0;
  for (size_t first = 0; first < passes; first += f.passes_per_exchange(p, v, s, m, first))
    ++exchanges;
  return exchanges;
}

}  // namespace cs::strategy
