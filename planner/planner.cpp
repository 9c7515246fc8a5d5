#include "planner/planner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "common/parallel.h"
#include "driver/simulation.h"
#include "models/layers/embedding.h"
#include "models/model_work.h"
#include "planner/plan_summary.h"
#include "planner/step_estimate.h"
#include "strategies/data_parallel/flavour.h"
#include "strategies/memory_reserve.h"
#include "strategies/pipeline_schedule.h"
#include "strategies/training_step.h"
#include "strategies/work_shape.h"

namespace cs::planner {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

// A reason class for counting: the message with its numbers blanked, so "tp 16 must divide ..."
// and "tp 32 must divide ..." count together.
std::string reason_class(const std::string& message) {
  std::string out;
  bool in_number = false;
  for (char c : message) {
    const bool digit = c >= '0' && c <= '9';
    if (digit && !in_number) out += '#';
    if (!digit) out += c;
    in_number = digit;
  }
  return out;
}

std::string bytes_label(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lldMiB", static_cast<long long>(b.count >> 20));
  return buf;
}

}  // namespace

// Per-rank means over the simulated ranks, and the largest stage bubble; it fits when its peak
// leaves the headroom free (`capacity`: the usable memory).
Evaluation summarise(const driver::SimulationResult& r, size_t candidate, bool detailed,
                     int64_t capacity) {
  Evaluation e;
  e.candidate = candidate;
  e.detailed = detailed;
  e.step_time = r.report.step_time;
  e.tokens_per_second = r.report.tokens_per_second;
  e.mfu = r.report.mfu;
  e.peak_memory = r.report.peak_memory;
  e.at_peak = r.report.ranks[r.report.peak_index].memory.at_peak;
  e.fits = r.report.fits && (capacity == 0 || e.peak_memory <= capacity);
  e.memory_left = capacity == 0 ? 0 : capacity - e.peak_memory;
  for (size_t st = 0; st < r.report.stages.size(); ++st)
    e.bubble = std::max(e.bubble, r.report.bubble_fraction(st));
  const sim::MeanRankTimes mean = sim::mean_rank_times(r.report);
  e.compute = mean.compute;
  e.exposed_communication = mean.exposed_communication;
  e.idle = mean.idle;
  return e;
}

namespace {

// Linear extrapolation in the micro-batch count from runs at m1 and m2 to m. Memory grows with m
// only under GPipe (every micro-batch's activations live until the backward pass); other
// schedules cap what is in flight, and the run at m2 has reached the cap.
Evaluation extrapolate(const Evaluation& a, const Evaluation& b, int64_t m1, int64_t m2, int64_t m,
                       bool memory_grows, double tokens, double model_flops, double gpus,
                       double peak_flops, int64_t capacity) {
  const double f = static_cast<double>(m - m1) / static_cast<double>(m2 - m1);
  auto lerp_ps = [&](SimTime x, SimTime y) {
    return SimTime{x.ps + static_cast<int64_t>(static_cast<double>(y.ps - x.ps) * f)};
  };
  Evaluation e = b;
  e.step_time = lerp_ps(a.step_time, b.step_time);
  e.compute = lerp_ps(a.compute, b.compute);
  e.exposed_communication = lerp_ps(a.exposed_communication, b.exposed_communication);
  e.idle = lerp_ps(a.idle, b.idle);
  if (memory_grows) {
    e.peak_memory = a.peak_memory +
                    static_cast<int64_t>(static_cast<double>(b.peak_memory - a.peak_memory) * f);
    for (size_t c = 0; c < e.at_peak.size(); ++c) {
      e.at_peak[c] =
          a.at_peak[c] + static_cast<int64_t>(static_cast<double>(b.at_peak[c] - a.at_peak[c]) * f);
    }
  }
  const double bubble_idle_a = a.bubble * a.step_time.seconds(),
               bubble_idle_b = b.bubble * b.step_time.seconds();
  e.bubble = (bubble_idle_a + (bubble_idle_b - bubble_idle_a) * f) / e.step_time.seconds();
  e.tokens_per_second = tokens / e.step_time.seconds();
  e.mfu = model_flops / (e.step_time.seconds() * gpus * peak_flops);
  e.fits = capacity == 0 || e.peak_memory <= capacity;
  e.memory_left = capacity == 0 ? 0 : capacity - e.peak_memory;
  e.detailed = false;
  return e;
}

bool better(const Evaluation& a, const Evaluation& b, Objective o) {
  if (o == Objective::memory) {
    if (a.peak_memory != b.peak_memory) return a.peak_memory < b.peak_memory;
    if (a.step_time != b.step_time) return a.step_time < b.step_time;
  } else {
    if (a.step_time != b.step_time) return a.step_time < b.step_time;
    if (a.peak_memory != b.peak_memory) return a.peak_memory < b.peak_memory;
  }
  return a.candidate < b.candidate;
}

// parallel_for with progress reports (one call at a time, from the workers), counted from
// `before` of `total` (batches of one stage report as one run).
template <typename F>
void parallel_for_reporting(size_t n, unsigned threads, const char* stage, const PlanOptions& o,
                            F&& f, size_t before = 0, size_t total = 0) {
  std::atomic<size_t> done{0};
  std::mutex progress_mutex;
  parallel_for(n, threads, [&](size_t i) {
    f(i);
    const size_t d = ++done;
    if (o.progress) {
      std::lock_guard lock(progress_mutex);
      o.progress(stage, before + d, std::max(total, before + n));
    }
  });
}

// A layout's structure: everything but micro-batch size, recompute and bucket size.
using StructureKey = std::array<int, 12>;
StructureKey structure_key(const Candidate& c) {
  const auto& l = c.layout;
  return {l.cp,
          l.tp,
          l.pp,
          l.dp,
          l.ep,
          l.etp,
          static_cast<int>(l.data_parallel),
          static_cast<int>(l.schedule),
          l.virtual_stages,
          l.first_stage_layers,
          l.last_stage_layers,
          static_cast<int>(l.embedding_in_split) * 2 + static_cast<int>(l.loss_in_split)};
}

// A structure with its micro-batch and recompute: the candidates that differ only in bucket size.
using SettingKey = std::pair<StructureKey, std::pair<int64_t, int>>;
SettingKey setting_key(const Candidate& c) {
  return {structure_key(c), {c.training.micro_batch, static_cast<int>(c.training.recompute)}};
}

// Whether candidate `b` (same structure as `a`) needs at least the memory `a` needs: micro-batch
// and bucket no smaller, recompute no stronger (full < selective < none; op_selective only
// compares with itself). Under 1F1B the micro-batches in flight, min(p, m) x micro-batch, do not
// shrink as the micro-batch grows; under GPipe all m x micro-batch = the batch are in flight.
bool needs_no_more_memory(const Candidate& a, const Candidate& b) {
  auto rank = [](model::Recompute r) {
    switch (r) {
      case model::Recompute::full:
        return 0;
      case model::Recompute::selective:
        return 1;
      case model::Recompute::none:
        return 2;
      case model::Recompute::op_selective:
        return -1;
    }
    return -1;
  };
  const int ra = rank(a.training.recompute), rb = rank(b.training.recompute);
  const bool recompute_ok =
      a.training.recompute == b.training.recompute || (ra >= 0 && rb >= 0 && rb >= ra);
  return recompute_ok && b.training.micro_batch >= a.training.micro_batch &&
         b.layout.bucket_size.count >= a.layout.bucket_size.count;
}

}  // namespace

namespace {
// Memory left counts where it is scarce: a layout with a tenth of the usable memory free (8 GiB of
// an 80 GB GPU, about twice the default headroom) is as safe from an out-of-memory as one with
// more, so beyond that the next figure decides. Whole GiB below it.
int64_t scarce_memory_left_gib(const Evaluation& e) {
  if (e.memory_left <= 0) return 0;
  const int64_t comfortable = (e.peak_memory + e.memory_left) / 10;
  return std::min(e.memory_left, comfortable) >> 30;
}
}  // namespace

RobustnessFigure robustness_difference(const Evaluation& a, const Evaluation& b) {
  if (scarce_memory_left_gib(a) != scarce_memory_left_gib(b)) return RobustnessFigure::memory_left;
  // Exposed communication and bubble count when they differ by 1% of the step or more: below that
  // the difference is within what the simulation resolves (the model's error is larger still).
  const double step = std::min(a.step_time.seconds(), b.step_time.seconds());
  if (std::abs(a.exposed_communication.seconds() - b.exposed_communication.seconds()) >=
      0.01 * step)
    return RobustnessFigure::exposed_communication;
  if (std::abs(a.bubble - b.bubble) >= 0.01) return RobustnessFigure::bubble;
  return RobustnessFigure::none;
}

size_t PlanResult::out_of_memory() const {
  return static_cast<size_t>(
      std::count_if(evaluations.begin(), evaluations.end(),
                    [](const Evaluation& e) { return e.error.empty() && !e.fits; }));
}

size_t PlanResult::failed() const {
  return static_cast<size_t>(std::count_if(evaluations.begin(), evaluations.end(),
                                           [](const Evaluation& e) { return !e.error.empty(); }));
}

std::map<std::string, size_t> PlanResult::pruned_reasons() const {
  std::map<std::string, size_t> out;
  for (const Pruned& p : pruned) ++out[p.reason];
  return out;
}

std::string Candidate::describe() const {
  const int gradient_ranks = layout.dp * layout.cp;
  std::string s = "tp" + std::to_string(layout.tp);
  if (layout.cp > 1) s += " cp" + std::to_string(layout.cp);
  s += " pp" + std::to_string(layout.pp) + " dp" + std::to_string(layout.dp);
  if (layout.ep > 1) s += " ep" + std::to_string(layout.ep);
  if (layout.etp > 1) s += " etp" + std::to_string(layout.etp);
  if (gradient_ranks > 1) s += " " + std::string(strategy::to_string(layout.data_parallel));
  s += " mb" + std::to_string(training.micro_batch);
  if (layout.pp > 1) {
    s += " " + std::string(strategy::to_string(layout.schedule));
    if (strategy::pipeline_schedule_flavour(layout.schedule).interleaves())
      s += "(v" + std::to_string(layout.virtual_stages) + ")";
  }
  s += " rc:" + std::string(model::to_string(training.recompute));
  if (gradient_ranks > 1 && strategy::data_parallel_flavour(layout.data_parallel).bucketed())
    s += " b:" + bytes_label(layout.bucket_size);
  if (!split.empty()) s += " L" + split;
  return s;
}

std::string choose_plan_stack(scenario::Scenario& base, std::optional<model::Stack> requested,
                              bool scenario_names_stack) {
  std::string why;
  if (requested) {
    // DeepSpeed's reduce bucket where the base still has the default of the stack it replaces.
    if (base.layout.bucket_size.count ==
        strategy::stack_bucket_default(base.training.stack, base.training.precision).count)
      base.layout.bucket_size = strategy::stack_bucket_default(*requested, base.training.precision);
    base.training.stack = *requested;  // the planner applies its overlap defaults per layout
    why = "--stack";
  } else if (scenario_names_stack) {
    why = "the scenario's";
  } else {
    base.training.stack = kDefaultPlanStack;
    why = "the default: the framework of NVIDIA's published recipes; --stack names another";
  }
  if (base.training.stack == model::Stack::ideal)
    return why + "; a bound, not a framework: every modelled schedule and flavour is searched";
  return why + "; only what it runs is searched";
}

void PlanOptions::take_expected_error(const scenario::Scenario& base) {
  const auto error = driver::expected_step_error(base);
  expected_error = error ? error->mape_percent / 100 : 0;
}

scenario::Scenario with_candidate(const scenario::Scenario& base, const Candidate& c) {
  scenario::Scenario s = base;
  s.layout = c.layout;
  s.training = c.training;
  s.fidelity = cost::NetworkFidelity::analytic;  // representative ranks need it
  return s;
}

namespace {

// Powers of two up to `limit` that divide n.
std::vector<int> powers_of_two_dividing(int n, int limit) {
  std::vector<int> out;
  for (int v = 1; v <= limit && n % v == 0; v *= 2) out.push_back(v);
  return out;
}

// A stage split: first and last stage layers (0, 0: the default split, which is even when the
// layers divide by pp).
struct Split {
  int first = 0, last = 0;
};

// The default split, then the variants with the first stage, the last stage, or both one layer
// lighter; the layers taken off go to the other stages, which must then split evenly (with
// pp = 2 the other end takes it). Only splits the layout can express are returned.
std::vector<Split> stage_splits(int layers, int pp, bool variants) {
  std::vector<Split> out{{0, 0}};
  if (pp < 2 || !variants) return out;
  strategy::Layout l;
  l.pp = pp;
  const std::vector<int> counts = strategy::stage_layer_counts(l, layers);
  const int f0 = counts.front(), l0 = counts.back();
  for (auto [df, dl] : {std::pair{1, 0}, {0, 1}, {1, 1}}) {
    int first = f0 - df, last = l0 - dl;
    if (first < 1 || last < 1) continue;
    if (pp == 2) {
      if (df + dl != 1) continue;
      (df ? last : first) += 1;
    } else if ((layers - first - last) % (pp - 2) != 0 || (layers - first - last) / (pp - 2) < 1) {
      continue;
    }
    out.push_back({first, last});
  }
  return out;
}

// "7,8x14,7" for counts 7, 8 (14 times), 7; "" when all stages are equal.
std::string split_label(const std::vector<int>& counts) {
  if (std::all_of(counts.begin(), counts.end(), [&](int c) { return c == counts[0]; })) return "";
  std::string out;
  for (size_t i = 0; i < counts.size();) {
    size_t j = i;
    while (j < counts.size() && counts[j] == counts[i]) ++j;
    out +=
        (i ? "," : "") + std::to_string(counts[i]) + (j - i > 1 ? "x" + std::to_string(j - i) : "");
    i = j;
  }
  return out;
}

struct ScheduleChoice {
  strategy::PipelineSchedule schedule;
  int virtual_stages = 1;
  Split split;
  // Megatron-Core's split counting the embedding and the loss as layers (both flags).
  bool ends_counted = false;
};

}  // namespace

namespace {

// Context parallelism outermost: the layouts without it come first, so ties (ranking, the
// leanest pruned layout) resolve to the simpler layout.
std::vector<int> context_parallel_sizes(const scenario::Scenario& base, const PlanSpace& space) {
  if (base.model.family == model::Family::mlp) return {1};
  std::vector<int> cps;
  for (int cp : powers_of_two_dividing(base.gpus, std::max(1, space.max_cp))) {
    if (base.training.seq_len % (2 * cp) == 0 || cp == 1) cps.push_back(cp);
  }
  return cps;
}

// A point of the tp x cp x pp x dp grid with its expert split.
struct GridPoint {
  int tp = 1, cp = 1, pp = 1, dp = 1, ep = 1, etp = 1;
};

// Expert splits (ep, etp) on Megatron-Core's expert grid (strategies/layout.h): etp 1 or (MoE
// with tp > 1) tp, and ep every divisor of tp x cp x dp / etp that divides the experts, so EP
// spans tensor- and context-parallel ranks where ETP leaves them (Qwen3-235B on 256 H100: tp 2 x
// dp 16 ranks as ep 32 with etp 1).
std::vector<std::pair<int, int>> expert_splits(const model::ModelSpec& m, const GridPoint& g,
                                               const PlanSpace& space) {
  std::vector<std::pair<int, int>> eps{{1, 1}};
  if (!m.moe.enabled()) return eps;
  for (int etp : g.tp > 1 ? std::vector<int>{1, g.tp} : std::vector<int>{1}) {
    if (etp > 1) eps.push_back({1, etp});
    for (int ep : divisors(g.tp * g.cp * g.dp / etp)) {
      if (ep > 1 && m.moe.experts % ep == 0 && (space.max_ep <= 0 || ep <= space.max_ep))
        eps.push_back({ep, etp});
    }
  }
  return eps;
}

// The schedules the base's stack runs (the registry's answer) on pp stages: each one-chunk
// schedule on every stage split, then the interleaved ones with each chunk count it plans.
std::vector<ScheduleChoice> schedule_choices(const scenario::Scenario& base, int pp,
                                             const PlanSpace& space) {
  if (pp == 1) return {{strategy::PipelineSchedule::one_f_one_b, 1, {}}};
  std::vector<const strategy::PipelineScheduleFlavour*> runs;
  for (const strategy::PipelineScheduleFlavour* sc : strategy::pipeline_schedule_flavours()) {
    if (sc->run_by(base.training.stack) && (space.zero_bubble || !sc->splits_backward()))
      runs.push_back(sc);
  }
  std::vector<ScheduleChoice> schedules;
  const int layers = base.model.layers;
  for (const Split& split : stage_splits(layers, pp, space.uneven_variants)) {
    for (const strategy::PipelineScheduleFlavour* sc : runs) {
      if (!sc->interleaves()) schedules.push_back({sc->id, 1, split});
    }
  }
  for (const strategy::PipelineScheduleFlavour* sc : runs) {
    if (!sc->interleaves()) continue;
    for (strategy::PlannedChunks v :
         sc->planned_chunks(base.training.stack, layers, pp, space.max_virtual_stages))
      schedules.push_back({sc->id, v.chunks, {}, v.ends_counted});
  }
  return schedules;
}

// One setting at a grid point.
struct Setting {
  const strategy::DataParallelFlavour* flavour = nullptr;
  Bytes bucket;
  int64_t micro_batch = 1;
  ScheduleChoice schedule;
  model::Recompute recompute = model::Recompute::none;
};

Candidate make_candidate(const scenario::Scenario& base, const GridPoint& g, const Setting& s) {
  Candidate c;
  c.layout = base.layout;
  c.layout.tp = g.tp;
  c.layout.cp = g.cp;
  c.layout.pp = g.pp;
  c.layout.dp = g.dp;
  c.layout.ep = g.ep;
  c.layout.etp = g.etp;
  c.layout.data_parallel = s.flavour->id;
  c.layout.fsdp_version = s.flavour->fsdp_version_run_by(base.training.stack);
  c.layout.bucket_size = s.bucket;
  c.layout.sequence_parallel = g.tp > 1;
  c.layout.schedule = s.schedule.schedule;
  c.layout.virtual_stages = s.schedule.virtual_stages;
  c.layout.first_stage_layers = s.schedule.split.first;
  c.layout.last_stage_layers = s.schedule.split.last;
  c.layout.embedding_in_split = c.layout.loss_in_split = s.schedule.ends_counted;
  c.training = base.training;
  c.training.micro_batch = s.micro_batch;
  c.training.recompute = s.recompute;
  // The base's routing skew, capped by what this ep admits (ep 1: one rank, none).
  c.training.moe.imbalance = std::min(base.training.moe.imbalance, static_cast<double>(g.ep));
  // Overlap the base asks for, or its stack turns on, where this layout admits it.
  const strategy::OverlapDefaults admitted = strategy::admitted_overlap(c.layout);
  const model::StackTraits& stack = model::stack_traits(base.training.stack);
  c.training.tp_comm_overlap =
      (base.training.tp_comm_overlap || stack.tp_comm_overlap) && admitted.tp_comm_overlap;
  c.training.overlap_param_gather =
      (base.training.overlap_param_gather || stack.overlap_param_gather) &&
      admitted.overlap_param_gather;
  return c;
}

// Keeps the candidate if it is valid, else counts why not.
void admit(Enumeration& e, const scenario::Scenario& base, Candidate c) {
  ++e.considered;
  try {
    strategy::validate(c.layout, c.training, base.model, base.gpus);
    if (c.layout.pp > 1 && c.layout.virtual_stages == 1)
      c.split = split_label(strategy::stage_layer_counts(c.layout, base.model.layers));
    else if (c.layout.embedding_in_split || c.layout.loss_in_split)
      c.split = split_label(strategy::chunk_layer_counts(c.layout, base.model.layers));
    e.candidates.push_back(std::move(c));
  } catch (const UserError& err) {
    ++e.invalid[reason_class(err.what())];
  }
}

// Every setting at tp x cp x pp (dp the rest of the GPUs): expert splits, the flavours the
// registry plans there, micro-batches, schedules, recompute and (bucketed flavours) bucket sizes.
void enumerate_grid_point(Enumeration& e, const scenario::Scenario& base, const PlanSpace& space,
                          GridPoint g) {
  g.dp = base.gpus / (g.cp * g.tp * g.pp);
  // ZeRO and FSDP shard over the gradient group, dp x cp.
  const int gradient_ranks = g.dp * g.cp;
  std::vector<const strategy::DataParallelFlavour*> flavours;
  for (const strategy::DataParallelFlavour* f : strategy::data_parallel_flavours()) {
    if (f->planned(gradient_ranks, g.pp) && f->run_by(base.training.stack, g.pp))
      flavours.push_back(f);
  }
  const std::vector<ScheduleChoice> schedules = schedule_choices(base, g.pp, space);
  const std::vector<model::Recompute> recomputes = recompute_options(space, base.training.stack);
  for (auto [ep, etp] : expert_splits(base.model, g, space)) {
    g.ep = ep;
    g.etp = etp;
    for (const strategy::DataParallelFlavour* d : flavours) {
      if (ep > 1 && !d->planned_with_expert_parallelism()) continue;
      const bool bucketed = gradient_ranks > 1 && d->bucketed();
      const std::vector<Bytes> buckets =
          bucketed ? space.bucket_sizes : std::vector<Bytes>{base.layout.bucket_size};
      for (int64_t mb : space.micro_batches) {
        for (const ScheduleChoice& sc : schedules) {
          for (model::Recompute rc : recomputes) {
            for (Bytes bucket : buckets)
              admit(e, base, make_candidate(base, g, {d, bucket, mb, sc, rc}));
          }
        }
      }
    }
  }
}

}  // namespace

std::vector<model::Recompute> planned_recompute(model::Stack s) {
  using model::Recompute;
  switch (s) {
    case model::Stack::megatron_core:
    case model::Stack::deepspeed:
      return {Recompute::none, Recompute::selective, Recompute::full};
    case model::Stack::torch_compile:
    case model::Stack::pytorch_eager:
      return {Recompute::none, Recompute::op_selective, Recompute::full};
    case model::Stack::ideal:
      break;
  }
  return {Recompute::none, Recompute::selective, Recompute::op_selective, Recompute::full};
}

std::vector<model::Recompute> recompute_options(const PlanSpace& space, model::Stack s) {
  return space.recompute.empty() ? planned_recompute(s) : space.recompute;
}

Enumeration enumerate_layouts(const scenario::Scenario& base, const PlanSpace& space) {
  const int max_tp = space.max_tp > 0 ? space.max_tp : std::max(1, base.cluster.node.gpus);
  Enumeration e;
  for (int cp : context_parallel_sizes(base, space)) {
    for (int tp : divisors(base.gpus / cp)) {
      if (tp > max_tp) break;
      for (int pp : divisors(base.gpus / (cp * tp))) {
        if (pp > base.model.layers) break;  // every stage needs a layer
        enumerate_grid_point(e, base, space, {tp, cp, pp});
      }
    }
  }
  return e;
}

BlockParameters block_parameters(const model::ModelSpec& m) {
  BlockParameters b;
  const size_t blocks =
      static_cast<size_t>(m.family == model::Family::mlp ? m.layers : m.layers + 2);
  b.dense.assign(blocks, 0);
  b.routed.assign(blocks, 0);
  b.dense_matrices.assign(blocks, 0);
  b.routed_matrices.assign(blocks, 0);
  for (const model::ParameterTensor& t : model::parameter_list(m)) {
    const size_t k = std::min(static_cast<size_t>(std::max(t.block, 0)), blocks - 1);
    const bool routed = t.role == model::ParamRole::routed_expert;
    (routed ? b.routed : b.dense)[k] += t.numel;
    // What the policy copies for a low-precision recipe (policy.cpp, alloc.fp8_weights).
    if (t.layer >= 0 && t.tp_split && t.name.ends_with(".weight"))
      (routed ? b.routed_matrices : b.dense_matrices)[k] += t.numel;
  }
  return b;
}

std::pair<int64_t, int64_t> zb_h1_held(int p, int s, int64_t m) {
  const strategy::HeldMicroBatches held =
      strategy::pipeline_schedule_flavour(strategy::PipelineSchedule::zb_h1).held_at_peak(p, s, m);
  return {held.awaiting_backward, held.awaiting_weight_grad};
}

namespace {

// One micro-batch's saved activations on each pipeline stage: the sum of its decoder layers'
// figures (model_work.h), layers placed chunk by chunk as strategy::chunk_layer_counts places
// them. An MoE layer's figure is its own: it saves the routed token copies its experts read
// (Qwen3-30B-A3B, 4,096 tokens, bf16: 430 MB against the 293 MB of a dense layer of its
// ffn_hidden), so a dense layer's figure for every layer left the bound of an all-MoE model 30%
// short. A hybrid stack's layers take their kind's figure (Mamba, attention, MLP, MoE).
std::vector<int64_t> stage_activations(const model::ModelSpec& m, const model::WorkShape& shape,
                                       const strategy::Layout& l) {
  std::function<int64_t(int)> bytes_of_layer;
  if (m.hybrid()) {
    // Each layer its kind's figure, computed once per kind.
    std::map<char, int64_t> of_kind;
    bytes_of_layer = [&m, &shape, of_kind](int layer) mutable {
      const char k = m.layer_pattern[static_cast<size_t>(layer)];
      if (!of_kind.contains(k))
        of_kind[k] = model::activation_bytes_of_layer(m, shape, layer).count;
      return of_kind[k];
    };
  } else {
    const int64_t plain = model::activation_bytes_per_layer(m, shape).count;
    int first_moe = -1;
    if (m.moe.enabled() && m.family != model::Family::mlp) {
      for (int layer = 0; layer < m.layers && first_moe < 0; ++layer)
        if (m.is_moe_layer(layer)) first_moe = layer;
    }
    const int64_t moe =
        first_moe < 0 ? plain : model::activation_bytes_of_layer(m, shape, first_moe).count;
    bytes_of_layer = [&m, plain, moe, first_moe](int layer) {
      return first_moe >= 0 && m.is_moe_layer(layer) ? moe : plain;
    };
  }
  std::vector<int64_t> out(static_cast<size_t>(l.pp), 0);
  const std::vector<int> chunks = strategy::chunk_layer_counts(l, m.layers);
  int layer = 0;
  for (size_t g = 0; g < chunks.size(); ++g) {
    for (int i = 0; i < chunks[g]; ++i, ++layer) out[g % out.size()] += bytes_of_layer(layer);
  }
  return out;
}

// The last stage's logits and loss intermediates for one micro-batch, as the head block holds
// them (model_work.cpp, head_block): (1 + MTP depth) x the rank's tokens x vocab / tp x the
// loss's bytes per logit. They exist right after a forward, beside that micro-batch's
// activations, which every schedule still holds then.
int64_t logits_of_micro_batch(const model::ModelSpec& m, const model::WorkShape& shape,
                              const model::PrecisionInfo& prec) {
  if (m.family == model::Family::mlp) return 0;
  const int64_t tokens = shape.seq / shape.cp * shape.micro_batch;
  return (1 + m.mtp_depth) * tokens * (m.vocab / shape.tp) *
         model::layers::logit_bytes(shape, prec.activation_bytes);
}

}  // namespace

MemoryBound memory_lower_bound(const scenario::Scenario& base, const Candidate& c) {
  return memory_lower_bound(base, c, block_parameters(base.model));
}

MemoryBound memory_lower_bound(const scenario::Scenario& base, const Candidate& c,
                               const BlockParameters& blocks) {
  return memory_lower_bound(base, c, blocks, nullptr);
}

MemoryBound memory_lower_bound(const scenario::Scenario& base, const Candidate& c,
                               const BlockParameters& blocks, const HeldActivations* held) {
  const auto& l = c.layout;
  const model::ModelSpec& m = base.model;
  const model::PrecisionInfo prec = c.training.precision_info();
  const bool transformer = m.family != model::Family::mlp;
  const int gradient_ranks = l.dp * l.cp;
  const strategy::DataParallelFlavour& flavour =
      strategy::data_parallel_flavour(l.data_parallel, gradient_ranks);
  // Routed experts' state is sharded over the ranks holding the same expert shard (the expert
  // grid's edp = tp x cp x dp / (etp x ep)).
  const int expert_ranks = strategy::expert_data_parallel_size(l);
  const model::WorkShape shape = strategy::make_work_shape(m, l, c.training);
  const std::vector<int64_t> activations = stage_activations(m, shape, l);
  const int64_t micro_batches = c.training.accumulation(l);
  const strategy::PipelineScheduleFlavour& schedule =
      strategy::pipeline_schedule_flavour(l.schedule);
  const int64_t weight_grad_inputs = held ? held->weight_grad_inputs_per_layer : 0;
  const std::vector<int> counts = strategy::stage_layer_counts(l, m.layers);
  MemoryBound best;
  size_t next_block = 0;  // transformers: block 0 is the embedding, on the first stage
  for (int s = 0; s < l.pp; ++s) {
    const int layers = counts[static_cast<size_t>(s)];
    size_t first = next_block, last = next_block + static_cast<size_t>(layers);  // [first, last)
    if (transformer) {
      if (s == 0) first = 0;
      last = static_cast<size_t>(1 + std::accumulate(counts.begin(), counts.begin() + s + 1, 0));
      if (s == l.pp - 1) last = blocks.dense.size();
    }
    next_block = last;
    int64_t dense = 0, routed = 0, largest_block = 0, matrices = 0;
    for (size_t k = first; k < last && k < blocks.dense.size(); ++k) {
      dense += blocks.dense[k], routed += blocks.routed[k];
      largest_block = std::max(largest_block, blocks.dense[k] + blocks.routed[k] / l.ep);
      if (k < blocks.dense_matrices.size())
        matrices +=
            blocks.dense_matrices[k] / l.tp + blocks.routed_matrices[k] / (int64_t{l.etp} * l.ep);
    }
    // TP taken to split every dense parameter (norms and routers are in fact replicated), EP x
    // ETP the routed experts.
    const int64_t tp = l.tp;
    const strategy::ModelState a = flavour.model_state(dense / tp, prec, gradient_ranks);
    const strategy::ModelState b =
        strategy::data_parallel_flavour(l.data_parallel, expert_ranks)
            .model_state(routed / (int64_t{l.etp} * l.ep), prec, expert_ranks);
    // Micro-batches whose activations the stage holds at its peak (the schedule's answer); one
    // without a pipeline. Those awaiting only their W pass (ZB-H1) hold their linears' inputs,
    // counted where the caller measured them (`held`).
    strategy::HeldMicroBatches in_flight{1, 0};
    if (l.pp > 1) in_flight = schedule.held_at_peak(l.pp, s, micro_batches);
    MemoryBound here;
    here.parameters = a.parameters + (routed > 0 ? b.parameters : 0);
    here.gradients = a.gradients + (routed > 0 ? b.gradients : 0);
    here.optimizer_state = a.optimizer_state + (routed > 0 ? b.optimizer_state : 0);
    here.activations = in_flight.awaiting_backward * activations[static_cast<size_t>(s)] +
                       layers * in_flight.awaiting_weight_grad * weight_grad_inputs;
    // Not under FSDP: the sharded parameters and gradients counted above are not all held at its
    // simulated peak (FSDP2 keeps no 16-bit shard beside an fp32 master, and a unit's gradient
    // shard appears at its reduction), so its bound already stands above part of the peak, and
    // the copies and logits on top would overshoot it (GPT-3 175B, tp4 dp32 FSDP mb8, FP8, 128
    // H100: 78.63 GiB against a simulated 74.74 GiB).
    if (!flavour.fsdp()) {
      if (prec.scaling != model::Scaling::none)
        here.weight_copies = prec.weight_copy_bytes(matrices);
      if (s == l.pp - 1) here.logits = logits_of_micro_batch(m, shape, prec);
    }
    // What the flavour unshards at its peak (FSDP's units and their gradients).
    strategy::UnshardedState unsharded;
    unsharded.whole = dense / l.tp + routed / (int64_t{l.etp} * l.ep);
    unsharded.largest_unit = largest_block / l.tp;
    unsharded.pp = l.pp;
    unsharded.micro_batches = micro_batches;
    unsharded.fsdp_version = l.fsdp_version;
    unsharded.stack = c.training.stack;
    unsharded.bucket = l.bucket_size;
    unsharded.precision = prec;
    const strategy::ModelState peak = flavour.unsharded_at_peak(unsharded);
    here.parameters += peak.parameters;
    here.gradients += peak.gradients;
    if (here.total() > best.total()) best = here;
  }
  best.reserve = strategy::memory_reserve(l, c.training).beside(best.total());
  return best;
}

namespace {

// ZB-H1: a decoder layer's weight-gradient inputs by shape (the lightest decoder layer's, for a
// bound), built once per shape on the reduced model.
class WeightGradInputs {
 public:
  explicit WeightGradInputs(const model::ModelSpec& m) : reduced_(reduce_layers(m)) {}

  HeldActivations of(const Candidate& c) {
    const auto& l = c.layout;
    const std::tuple<int, int, int, int, int64_t, int> key{
        l.tp, l.cp, l.ep, l.etp, c.training.micro_batch, static_cast<int>(c.training.recompute)};
    auto w = by_shape_.find(key);
    if (w == by_shape_.end()) {
      const model::WorkShape shape = strategy::make_work_shape(reduced_.spec, l, c.training);
      int64_t smallest = INT64_MAX;
      for (const model::Block& b : model::build_model_work(reduced_.spec, shape).blocks) {
        if (b.name != "embed" && b.name != "head" && b.weight_grad_inputs.count > 0)
          smallest = std::min(smallest, b.weight_grad_inputs.count);
      }
      w = by_shape_.emplace(key, smallest == INT64_MAX ? 0 : smallest).first;
    }
    HeldActivations h;
    h.weight_grad_inputs_per_layer = w->second;
    return h;
  }

 private:
  ReducedModel reduced_;
  std::map<std::tuple<int, int, int, int, int64_t, int>, int64_t> by_shape_;
};

// The memory bound of every candidate (with what a zero-bubble schedule's held W passes keep,
// where the plain bound fits): those within `capacity` survive, the others are pruned with why.
void prune_by_memory(const scenario::Scenario& base, int64_t capacity, PlanResult& r,
                     std::vector<size_t>& survivors, std::vector<int64_t>& bound_total) {
  const auto& cands = r.enumeration.candidates;
  const BlockParameters blocks = block_parameters(base.model);
  WeightGradInputs weight_inputs(base.model);
  for (size_t i = 0; i < cands.size(); ++i) {
    const Candidate& c = cands[i];
    MemoryBound b = memory_lower_bound(base, c, blocks);
    if (b.total() <= capacity && c.layout.pp > 1 &&
        strategy::pipeline_schedule_flavour(c.layout.schedule).splits_backward()) {
      try {
        const HeldActivations held = weight_inputs.of(c);
        b = memory_lower_bound(base, c, blocks, &held);
      } catch (const UserError&) {
        // a shape the model cannot build: its simulation will say so
      }
    }
    bound_total[i] = b.total();
    if (b.total() <= capacity) {
      survivors.push_back(i);
      continue;
    }
    const bool state_alone = b.total() - b.activations - b.logits > capacity;
    r.pruned.push_back(
        {i, b,
         state_alone ? "model state alone exceeds memory"
                     : "model state + activations of the micro-batches in flight exceed memory"});
  }
}

// The fast level of candidate i: a representative-rank simulation, of two short runs
// extrapolated to the candidate's micro-batch count where it has more.
Evaluation evaluate_fast(const scenario::Scenario& base, const Candidate& c, size_t i,
                         const driver::Platform& platform, double peak_flops, int64_t capacity) {
  scenario::Scenario s = with_candidate(base, c);
  const int64_t m = c.training.accumulation(c.layout);
  const auto [m1, m2] = driver::short_run_counts(c.layout);
  const driver::SimulateOptions opts{false, false, driver::RankMode::representative, false, false};
  // FSDP under a pipeline gathers in the first micro-batch and reduces in the last, overlapped
  // differently in short runs: extrapolated it was 1-1.4% off in time and 3.5% in memory
  // (Planner.FastLevelExtrapolationAgreesWithTheDetailedSimulation), so it runs whole.
  const bool runs_whole = strategy::is_fsdp(c.layout.data_parallel) && c.layout.pp > 1;
  if (m <= m2 || runs_whole)
    return summarise(driver::simulate(s, opts, &platform), i, false, capacity);
  const int64_t per_micro = c.training.micro_batch * c.layout.dp;
  s.training.global_batch = per_micro * m1;
  const auto r1 = driver::simulate(s, opts, &platform);
  s.training.global_batch = per_micro * m2;
  const auto r2 = driver::simulate(s, opts, &platform);
  const double tokens = static_cast<double>(c.training.global_batch * c.training.seq_len);
  const double flops =
      r2.step.model_flops_per_step.value * static_cast<double>(m) / static_cast<double>(m2);
  const bool memory_grows =
      c.layout.pp > 1 &&
      strategy::pipeline_schedule_flavour(c.layout.schedule).memory_grows_with_micro_batches();
  return extrapolate(summarise(r1, i, false, capacity), summarise(r2, i, false, capacity), m1, m2,
                     m, memory_grows, tokens, flops, static_cast<double>(base.gpus), peak_flops,
                     capacity);
}

// Pricing: every survivor gets a closed-form step time (step_estimate.h), in enumeration
// order, so that simulation starts with the layouts most likely to win.
void price(const scenario::Scenario& base, const driver::Platform& platform,
           const std::vector<size_t>& survivors, const std::vector<int64_t>& bound_total,
           const PlanOptions& options, PlanResult& r) {
  const auto& cands = r.enumeration.candidates;
  StepEstimator estimator(base, platform);
  const size_t report_every = std::max<size_t>(1, survivors.size() / 100);
  for (size_t k = 0; k < survivors.size(); ++k) {
    const size_t i = survivors[k];
    double seconds = std::numeric_limits<double>::infinity();
    try {
      seconds = estimator.step_seconds(cands[i]);
    } catch (const std::exception& e) {
      // Priced last; the header counts it, and its simulation, if it gets one, says what is wrong.
      if (r.unpriced++ == 0) r.first_unpriced_reason = cands[i].describe() + ": " + e.what();
    }
    r.priced.push_back({i, seconds, bound_total[i]});
    if (options.progress && ((k + 1) % report_every == 0 || k + 1 == survivors.size()))
      options.progress("price", k + 1, survivors.size());
  }
  std::stable_sort(r.priced.begin(), r.priced.end(), [&](const Priced& a, const Priced& b) {
    if (options.objective == Objective::memory && a.memory_bound != b.memory_bound)
      return a.memory_bound < b.memory_bound;
    return a.step_seconds < b.step_seconds;
  });
}

// What every simulation of one plan shares.
struct PlanRun {
  const scenario::Scenario& base;
  const std::vector<Candidate>& cands;
  const driver::Platform& platform;
  const PlanOptions& options;
  double peak_flops = 0;
  int64_t capacity = 0;
};

// Fast level over a list of candidate indices, in parallel.
std::vector<Evaluation> run_fast(const PlanRun& p, const std::vector<size_t>& list, size_t before,
                                 size_t total) {
  std::vector<Evaluation> out(list.size());
  parallel_for_reporting(
      list.size(), p.options.threads, "fast", p.options,
      [&](size_t k) {
        try {
          out[k] = evaluate_fast(p.base, p.cands[list[k]], list[k], p.platform, p.peak_flops,
                                 p.capacity);
        } catch (const std::exception& e) {  // a worker thread must not throw: record and move on
          out[k] = Evaluation{};
          out[k].candidate = list[k];
          out[k].error = e.what();
        }
      },
      before, total);
  return out;
}

// Detailed level over a list of candidate indices, in parallel.
std::vector<Evaluation> run_detailed(const PlanRun& p, const std::vector<size_t>& candidates,
                                     size_t before, size_t total) {
  std::vector<Evaluation> out(candidates.size());
  parallel_for_reporting(
      candidates.size(), p.options.threads, "detailed", p.options,
      [&](size_t j) {
        try {
          const scenario::Scenario s = with_candidate(p.base, p.cands[candidates[j]]);
          out[j] = summarise(
              driver::simulate(s, {false, false, driver::RankMode::automatic, false, false},
                               &p.platform),
              candidates[j], true, p.capacity);
        } catch (const std::exception& e) {
          out[j] = Evaluation{};
          out[j].candidate = candidates[j];
          out[j].error = e.what();
        }
      },
      before, total);
  return out;
}

// Fast level in price order, in batches, until `simulate` layouts are simulated and at least
// `detailed` of them fit (at most 4 x `simulate`; past that, while none fits, up to
// `fit_budget`, counted in PlanResult::simulated_looking_for_fit). A layout whose structure did not
// fit at a setting that needs no more memory (smaller or equal micro-batch and bucket, as much or
// less recompute) is not simulated: memory only grows with those settings. Returns the evaluations
// in candidate order; `simulated` gets their candidates.
std::vector<Evaluation> simulate_fast(const PlanRun& p, PlanResult& r,
                                      std::set<size_t>& simulated) {
  const auto& cands = p.cands;
  const PlanOptions& options = p.options;
  std::map<StructureKey, std::vector<size_t>> did_not_fit;
  auto dominated = [&](size_t i) {
    const auto it = did_not_fit.find(structure_key(cands[i]));
    if (it == did_not_fit.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](size_t j) { return needs_no_more_memory(cands[j], cands[i]); });
  };
  std::vector<Evaluation> fast;
  std::set<SettingKey> settings_tried;
  size_t next = 0, fitting = 0;
  const unsigned threads = options.threads;
  const size_t batch_size = std::max<size_t>(
      8, 2 * std::max(1u, threads == 0 ? std::thread::hardware_concurrency() : threads));
  const size_t usual = 4 * options.simulate;
  while (next < r.priced.size() &&
         fast.size() < (fitting == 0 ? std::max(usual, options.fit_budget) : usual)) {
    if (fast.size() >= options.simulate && fitting >= std::max<size_t>(1, options.detailed)) break;
    std::vector<size_t> batch;
    const size_t want = fast.size() < options.simulate
                            ? std::min(batch_size, options.simulate - fast.size())
                            : batch_size;
    while (next < r.priced.size() && batch.size() < want) {
      const size_t i = r.priced[next++].candidate;
      // Bucket sizes barely move the price: one per setting here, the winner's others later.
      if (!settings_tried.insert(setting_key(cands[i])).second) continue;
      if (!dominated(i)) {
        batch.push_back(i);
        simulated.insert(i);
        continue;
      }
      r.pruned.push_back({i, memory_lower_bound(p.base, cands[i]),
                          "a setting needing no more memory did not fit in its simulation"});
    }
    if (fast.size() >= usual) r.simulated_looking_for_fit += batch.size();
    const size_t total = std::max(options.simulate, fast.size() + batch.size());
    for (Evaluation& e : run_fast(p, batch, fast.size(), total)) {
      if (e.error.empty() && e.fits) ++fitting;
      if (e.error.empty() && !e.fits)
        did_not_fit[structure_key(cands[e.candidate])].push_back(e.candidate);
      fast.push_back(std::move(e));
    }
  }
  std::sort(fast.begin(), fast.end(),
            [](const Evaluation& x, const Evaluation& y) { return x.candidate < y.candidate; });
  std::sort(r.pruned.begin(), r.pruned.end(),
            [](const Pruned& x, const Pruned& y) { return x.candidate < y.candidate; });
  return fast;
}

// The best fast candidates that fit get the detailed level, down that order until `detailed`
// layouts fit in their detailed simulation (a fast estimate that fits may not: ZB-H1's memory,
// for one, is not linear in the count). Returns how many were simulated in detail.
size_t simulate_detailed(const PlanRun& p, std::vector<Evaluation>& fast) {
  const PlanOptions& options = p.options;
  std::vector<size_t> order(fast.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool ok_a = fast[a].fits && fast[a].error.empty(),
               ok_b = fast[b].fits && fast[b].error.empty();
    if (ok_a != ok_b) return ok_a;
    return better(fast[a], fast[b], options.objective);
  });
  size_t next_fast = 0, detailed_fit = 0, detailed_done = 0;
  while (detailed_fit < options.detailed && next_fast < order.size()) {
    std::vector<size_t> ks, batch;
    while (next_fast < order.size() && ks.size() < options.detailed - detailed_fit) {
      const size_t k = order[next_fast];
      if (!fast[k].fits || !fast[k].error.empty()) {
        next_fast = order.size();
        break;
      }
      ks.push_back(k);
      batch.push_back(fast[k].candidate);
      ++next_fast;
    }
    std::vector<Evaluation> out = run_detailed(
        p, batch, detailed_done, std::max(options.detailed, detailed_done + batch.size()));
    detailed_done += batch.size();
    for (size_t j = 0; j < ks.size(); ++j) {
      if (out[j].error.empty() && out[j].fits) ++detailed_fit;
      fast[ks[j]] = std::move(out[j]);
    }
  }
  return detailed_done;
}

// The fast level simulated one bucket size per setting (the best-priced); the winner's other
// bucket sizes get the detailed level too, so that its bucket is chosen by simulation.
void simulate_winner_buckets(const PlanRun& p, const PlanResult& r,
                             const std::set<size_t>& simulated, size_t detailed_done,
                             std::vector<Evaluation>& fast) {
  const Evaluation* winner = nullptr;
  for (const Evaluation& e : fast) {
    if (e.detailed && e.fits && e.error.empty() &&
        (!winner || better(e, *winner, p.options.objective)))
      winner = &e;
  }
  if (!winner) return;
  const Candidate& w = p.cands[winner->candidate];
  std::vector<size_t> siblings;
  for (const Priced& priced : r.priced) {
    const Candidate& c = p.cands[priced.candidate];
    if (priced.candidate != winner->candidate && setting_key(c) == setting_key(w) &&
        !simulated.count(priced.candidate))
      siblings.push_back(priced.candidate);
  }
  std::sort(siblings.begin(), siblings.end());
  for (Evaluation& e : run_detailed(p, siblings, detailed_done, detailed_done + siblings.size()))
    fast.push_back(std::move(e));
  std::sort(fast.begin(), fast.end(),
            [](const Evaluation& x, const Evaluation& y) { return x.candidate < y.candidate; });
}

// Folds each ranked layout into the best-ranked one that differs from it only in bucket size,
// when their steps differ by less than `noise` (a share): the knob moves the step by less than
// the model can tell apart.
void fold_near_duplicates(PlanResult& r, double noise) {
  const auto& cands = r.enumeration.candidates;
  std::vector<size_t> kept;
  for (size_t k : r.ranked) {
    const Evaluation& e = r.evaluations[k];
    const auto twin = std::find_if(kept.begin(), kept.end(), [&](size_t j) {
      const Evaluation& w = r.evaluations[j];
      return w.detailed == e.detailed &&
             setting_key(cands[w.candidate]) == setting_key(cands[e.candidate]) &&
             std::abs(e.step_time.seconds() - w.step_time.seconds()) <=
                 noise * w.step_time.seconds();
    });
    if (twin == kept.end()) {
      kept.push_back(k);
    } else {
      r.folded[*twin].push_back(k);
    }
  }
  r.ranked = std::move(kept);
}

// Most robust first (robustness_difference's figures), then faster.
bool more_robust(const Evaluation& a, const Evaluation& b) {
  switch (robustness_difference(a, b)) {
    case RobustnessFigure::memory_left:
      return scarce_memory_left_gib(a) > scarce_memory_left_gib(b);
    case RobustnessFigure::exposed_communication:
      return a.exposed_communication < b.exposed_communication;
    case RobustnessFigure::bubble:
      return a.bubble < b.bubble;
    case RobustnessFigure::none:
      break;
  }
  return better(a, b, Objective::throughput);
}

// The leading ranked layouts within the expected error of the fastest (at its level) tie: they
// are ordered by robustness, not by a step-time difference the model cannot resolve.
void break_ties(PlanResult& r, const PlanOptions& options) {
  if (r.ranked.empty()) return;
  const Evaluation& fastest = r.evaluations[r.ranked[0]];
  size_t n = 1;
  if (options.objective == Objective::throughput && options.expected_error > 0) {
    const double limit = fastest.step_time.seconds() * (1 + options.expected_error);
    while (n < r.ranked.size() && r.evaluations[r.ranked[n]].detailed == fastest.detailed &&
           r.evaluations[r.ranked[n]].step_time.seconds() <= limit)
      ++n;
  }
  std::stable_sort(
      r.ranked.begin(), r.ranked.begin() + static_cast<std::ptrdiff_t>(n),
      [&](size_t a, size_t b) { return more_robust(r.evaluations[a], r.evaluations[b]); });
  r.tied = n;
}

// The evaluations that fit, ranked (near-duplicates folded, ties broken by robustness), and
// their Pareto frontier.
void rank(PlanResult& r, const PlanOptions& options) {
  const Objective objective = options.objective;
  for (size_t k = 0; k < r.evaluations.size(); ++k) {
    if (r.evaluations[k].error.empty() && r.evaluations[k].fits) r.ranked.push_back(k);
  }
  // Detailed results first (they are the better-founded figures), each group by the objective.
  std::sort(r.ranked.begin(), r.ranked.end(), [&](size_t a, size_t b) {
    const Evaluation &x = r.evaluations[a], &y = r.evaluations[b];
    if (x.detailed != y.detailed) return x.detailed;
    return better(x, y, objective);
  });
  fold_near_duplicates(r, std::max(options.expected_error, kTieGap));
  break_ties(r, options);
  // Pareto frontier of throughput against memory over the ranked layouts: sweep by memory,
  // keep each point faster than all leaner ones.
  std::vector<size_t> by_memory = r.ranked;
  std::sort(by_memory.begin(), by_memory.end(), [&](size_t a, size_t b) {
    return better(r.evaluations[a], r.evaluations[b], Objective::memory);
  });
  double best_tokens = -1;
  for (size_t k : by_memory) {
    if (r.evaluations[k].tokens_per_second > best_tokens) {
      r.pareto.push_back(k);
      best_tokens = r.evaluations[k].tokens_per_second;
    }
  }
}

}  // namespace

PlanResult plan(const scenario::Scenario& base, const PlanSpace& space,
                const PlanOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  PlanResult r;
  r.enumeration = enumerate_layouts(base, space);
  const auto& cands = r.enumeration.candidates;
  // The scenario's device: a GPU declared in its YAML as well as a preset.
  const cost::DeviceSpec& device = driver::device_of(base);
  // A layout must leave the headroom free: pruned, simulated and ranked against what is left.
  const int64_t capacity =
      device.memory_capacity.count - options.headroom.of(device.memory_capacity.count);
  r.usable_memory = capacity;
  const double peak_flops =
      device.peak(model::precision_info(base.training.precision).compute).value;

  std::vector<size_t> survivors;
  std::vector<int64_t> bound_total(cands.size(), 0);
  prune_by_memory(base, capacity, r, survivors, bound_total);

  // A model whose per-op work cannot be built (MoE and MLA until they are simulated) fails every
  // simulation the same way: say so once instead of simulating.
  try {
    (void)model::build_model_work(
        base.model, strategy::make_work_shape(base.model, strategy::Layout{}, base.training));
  } catch (const UserError& e) {
    r.not_simulated = e.what();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }

  // One cluster and cost model for all candidates: collective plans are cached across them.
  scenario::Scenario analytic = base;
  analytic.fidelity = cost::NetworkFidelity::analytic;
  const driver::Platform platform(analytic);
  price(base, platform, survivors, bound_total, options, r);

  const PlanRun run{base, cands, platform, options, peak_flops, capacity};
  std::set<size_t> simulated;
  std::vector<Evaluation> fast = simulate_fast(run, r, simulated);
  const size_t detailed_done = simulate_detailed(run, fast);
  simulate_winner_buckets(run, r, simulated, detailed_done, fast);

  r.evaluations = std::move(fast);
  rank(r, options);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace cs::planner
