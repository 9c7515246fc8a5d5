#include "driver/simulation.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include "common/error.h"
#include "common/parallel.h"
#include "scenarios/profile_io.h"
#include "sim/engine.h"
#include "strategies/data_parallel/flavour.h"
#include "strategies/memory_reserve.h"
#include "strategies/pipeline_schedule.h"
#include "strategies/work_shape.h"

namespace cs::driver {
namespace {

bool representative(const scenario::Scenario& s, RankMode mode) {
  if (mode == RankMode::automatic) return s.gpus > kFullGraphGpuLimit;
  return mode == RankMode::representative;
}

// Whether a representative graph folds the context-parallel ring to one rank per stage
// (strategy::StepOptions::fold_context_parallel). Its ranks do the same work, so they wait alike
// if every hop of every stage's ring costs the same: checked here on the cluster, at two sizes
// (latency and bandwidth), so a ring with hops inside and across nodes, or over a degraded link,
// is emitted whole. Only at the analytic level (the flow level shares links between the ring's
// hops) and for a plain ring or a pure all-to-all (hierarchical levels are not images of one
// another under the ring's rotation).
bool folds_context_parallel(const scenario::Scenario& s, const Platform& platform) {
  const strategy::Layout& l = s.layout;
  const int a = strategy::cp_a2a_size(l);
  if (l.cp == 1 || s.fidelity != cost::NetworkFidelity::analytic || (a != 1 && a != l.cp))
    return false;
  if (a == l.cp) return true;  // no ring: the all-to-all is a collective over the whole group
  // A latency-bound and a bandwidth-bound transfer: 1 KiB and 256 MiB.
  const Bytes sizes[2] = {Bytes{int64_t{1} << 10}, Bytes{int64_t{1} << 28}};
  SimTime hop_cost[2];
  for (int stage = 0; stage < l.pp; ++stage) {
    for (int i = 0; i < l.cp; ++i) {
      // The plain ring's hop (a = 1), as strategies/training_step.cpp's set_context_parallel
      // places it: CP index i sends to i + 1.
      const auto from = static_cast<ir::RankId>(strategy::rank_of(l, {0, stage, 0, i}));
      const auto to = static_cast<ir::RankId>(strategy::rank_of(l, {0, stage, 0, (i + 1) % l.cp}));
      for (int k = 0; k < 2; ++k) {
        const SimTime t = platform.costs().transfer({from, to, sizes[k]}).time;
        if (stage == 0 && i == 0) hop_cost[k] = t;
        if (t != hop_cost[k]) return false;
      }
    }
  }
  return true;
}

// The shifts that map a representative rank (tensor- and data-parallel index 0) onto the ranks it
// stands for, so that the flow level can load shared links with their unsimulated traffic
// (sim::ReplicaFolding). The tp and dp digits are cyclic shifts; with experts, a shift must also
// map the expert grid's groups onto each other (strategies/layout.h): the stage-local index is
// cut into blocks of etp and of etp x ep, so a digit is split where such a block boundary falls
// inside it, and a digit whose shift would straddle a block boundary is left out (its copies are
// then not counted on shared links, as before folding existed).
// The digit [local, local n)'s sub-digits: its range cut at the block boundaries inside it, as
// multiples of `local` (1 and n included).
std::vector<int> cuts_of(int local, int n, const std::vector<int>& bounds) {
  std::vector<int> cuts{1, n};
  for (int b : bounds) {
    if (b > local && b < local * n && b % local == 0 && n % (b / local) == 0)
      cuts.push_back(b / local);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

// Whether shifting within [lo, hi) keeps every block of size b whole: the range lies inside one
// block, or is made of whole blocks.
bool shifts_within_blocks(int lo, int hi, const std::vector<int>& bounds) {
  bool aligned = true;
  for (int b : bounds) aligned = aligned && ((b <= lo && lo % b == 0) || (b >= hi && b % hi == 0));
  return aligned;
}

sim::RankSymmetry replica_symmetry(const strategy::Layout& l) {
  using strategy::Dim;
  auto stride = [&](Dim d) {
    strategy::Coord c;
    (d == Dim::tp ? c.tp : d == Dim::cp ? c.cp : c.dp) = 1;
    return static_cast<uint32_t>(strategy::rank_of(l, c));
  };
  auto size = [&](Dim d) {
    return d == Dim::tp ? l.tp : d == Dim::cp ? l.cp : d == Dim::dp ? l.dp : l.pp;
  };
  std::vector<int> bounds;  // block sizes in stage-local units
  if (l.etp > 1) bounds.push_back(l.etp);
  if (l.ep > 1) bounds.push_back(l.etp * l.ep);
  sim::RankSymmetry s;
  int local = 1;  // stage-local stride of the current digit
  for (Dim d : l.order) {
    if (d == Dim::pp) continue;
    const int n = size(d);
    if (d != Dim::cp && n > 1) {
      const std::vector<int> cuts = cuts_of(local, n, bounds);
      for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        if (shifts_within_blocks(local * cuts[i], local * cuts[i + 1], bounds))
          s.axes.push_back({stride(d) * static_cast<uint32_t>(cuts[i]),
                            static_cast<uint32_t>(cuts[i + 1] / cuts[i])});
      }
    }
    local *= n;
  }
  return s;
}

}  // namespace

cost::CollectiveParams collective_params(const cost::DeviceSpec& device) {
  cost::CollectiveParams p;
  p.memory_bandwidth = device.hbm_bandwidth;
  p.arch = device.arch;
  return p;
}

std::string profiles_dir() { return scenario::profiles_dir(); }

std::string default_profile_path(const std::string& gpu) {
  if (gpu.empty() || gpu.find('/') != std::string::npos) return "";
  const std::string path = profiles_dir() + "/" + gpu + ".yaml";
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) ? path : "";
}

std::string apply_default_profile(scenario::Scenario& s) {
  if (s.profile || s.declared_gpu) return "";
  const std::string path = default_profile_path(s.gpu);
  if (!path.empty()) s.profile = scenario::load_profile(path);
  return path;
}

namespace {

// Whether a ", "-separated list names `item`.
bool lists(const std::string& list, const std::string& item) {
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(", ", start), list.size());
    if (list.compare(start, end - start, item) == 0) return true;
    start = end + 2;
  }
  return false;
}

}  // namespace

std::string profile_summary(const scenario::Scenario& s) {
  if (!s.profile) {
    // The GEMM ceilings datasheet_efficiency takes from a published measurement, if any.
    const bool ceiling = !cost::datasheet_efficiency(device_of(s)).gemm_max_by_dtype.empty();
    return "none: datasheet figures of " + s.gpu +
           (ceiling ? " with its published largest matmul rate" : "") +
           " (no calibrated profile; error not measured)";
  }
  const cost::Profile& p = *s.profile;
  std::string out = p.name;
  std::string what = p.measured_on;
  if (!p.date.empty()) what += (what.empty() ? "" : ", ") + p.date;
  if (!what.empty()) out += " (" + what + ")";
  // A variant's fitted clock is in-sample on the runs it was fitted on: say so beside the error.
  if (!p.tensor_clock_fitted_on.empty()) {
    char clock[32];  // the text after it is the profile's own, of any length
    std::snprintf(clock, sizeof clock, "%.2f", p.tensor_clock_ratio);
    out += std::string("; tensor clock ") + clock + " fitted on " + p.tensor_clock_fitted_on;
  }
  if (!p.validation) return out + ": error on published runs not measured";
  const cost::ProfileValidation& v = *p.validation;
  if (v.runs == 0)
    return out +
           ": no published training run of this GPU in a validation source, out-of-sample error "
           "unknown";
  const ExpectedError x = *expected_step_error(s);
  const std::string stack(model::to_string(s.training.stack));
  char line[240];
  std::snprintf(line, sizeof line,
                "%s: out-of-sample step time MAPE %.0f%% (worst %.0f%%) on %d published run%s",
                x.of_stack ? ("; stack " + stack).c_str() : "", x.mape_percent, x.worst_percent,
                x.runs, x.runs == 1 ? "" : "s");
  out += line;
  if (!x.of_stack) out += " of every stack";
  if (!x.precisions.empty()) out += " in " + x.precisions;
  if (!x.suites.empty()) out += " (validate --suite: " + x.suites + ")";
  if (!x.of_stack) out += "; none with stack " + stack;
  // Where the runs cover other precisions only, the scenario's own is not validated: say so.
  const std::string precision(model::to_string(s.training.precision));
  if (!x.precisions.empty() && !lists(x.precisions, precision))
    out += "; " + precision + " not validated";
  return out;
}

std::optional<ExpectedError> expected_step_error(const scenario::Scenario& s) {
  if (!s.profile || !s.profile->validation || s.profile->validation->runs == 0) return {};
  const cost::ProfileValidation& v = *s.profile->validation;
  // The error of runs with the scenario's own software stack where the suite has some: a
  // Megatron-Core run's expected error is not TorchTitan's.
  if (const auto it = v.stacks.find(std::string(model::to_string(s.training.stack)));
      it != v.stacks.end() && it->second.runs > 0) {
    const auto& x = it->second;
    return ExpectedError{x.runs, x.mape_percent, x.worst_percent, x.suites, x.precisions, true};
  }
  return ExpectedError{v.runs, v.mape_percent, v.worst_percent, v.suites, v.precisions, false};
}

const cost::DeviceSpec& device_of(const scenario::Scenario& s) {
  return s.profile        ? s.profile->device
         : s.declared_gpu ? *s.declared_gpu
                          : cost::find_device(s.gpu);
}

std::pair<int64_t, int64_t> short_run_counts(const strategy::Layout& l) {
  if (l.pp == 1)
    return strategy::is_fsdp(l.data_parallel) ? std::pair<int64_t, int64_t>{2, 3}
                                              : std::pair<int64_t, int64_t>{1, 2};
  return {l.pp, strategy::pipeline_schedule_flavour(l.schedule).second_short_run(l.pp)};
}

Platform::Platform(const scenario::Scenario& s)
    : topology_(std::make_shared<const topo::Topology>(scenario::build_topology(s))) {
  const cost::DeviceSpec& device = device_of(s);
  cost::CollectiveParams params = collective_params(device);
  cost::ComputeEfficiency efficiency = cost::datasheet_efficiency(device);
  cost::Interference interference;
  if (s.profile) {
    efficiency = s.profile->compute;
    interference = s.profile->interference;
    if (s.profile->collectives) {
      params.measured_latency = s.profile->collectives->latency;
      params.measured_bus_bandwidth = s.profile->collectives->bus_bandwidth;
    }
  }
  costs_ = std::make_unique<cost::AnalyticCostModel>(
      cost::ComputeModel(device, efficiency),
      cost::CollectiveModel(*topology_, params, s.collectives), interference,
      s.training.host_time_per_kernel());
  for (uint32_t l = 0; l < topology_->link_count(); ++l) {
    links_.push_back({topo::to_string(topology_->link(l).kind)});
  }
}

namespace {

// Each simulated rank's compute speed (scenario::compute_rates), empty when every GPU is healthy.
// A representative rank stands for every rank of its pipeline stage and takes the stage's lowest
// rate: a slow GPU in another replica of the stage holds its own tensor-parallel group back every
// layer, and the data-parallel gradient reduction waits for that replica at the end of the step,
// so the step is as long as if the representative itself were the slow one.
std::vector<double> graph_compute_rates(const scenario::Scenario& s, const Platform& platform,
                                        const strategy::StepGraph& step, bool folded) {
  const std::vector<double> by_gpu = scenario::compute_rates(s, platform.topology());
  if (by_gpu.empty()) return {};
  std::vector<double> by_stage(static_cast<size_t>(s.layout.pp), 1.0);
  for (size_t r = 0; r < by_gpu.size(); ++r) {
    auto& stage =
        by_stage[static_cast<size_t>(strategy::coord_of(s.layout, static_cast<int>(r)).pp)];
    stage = std::min(stage, by_gpu[r]);
  }
  const ir::TaskGraph& g = step.graph;
  std::vector<double> rates(g.ranks());
  for (ir::RankId r = 0; r < g.ranks(); ++r) {
    rates[r] =
        folded ? by_stage[static_cast<size_t>(step.stage_of_rank[r])] : by_gpu[g.cluster_rank(r)];
  }
  return rates;
}

// What a run keeps beyond its step time and memory verdict. A memory alternative's run keeps none
// of it (Kept::verdict_only()).
struct Kept {
  bool memory_samples = true;  // every allocation, for traces
  bool task_names = true;
  bool link_report = true;
  static Kept verdict_only() { return {false, false, false}; }
};

sim::Report run(const scenario::Scenario& s, RankMode mode, strategy::StepGraph& step,
                sim::Timeline& tl, const Platform* shared = nullptr, Kept kept = {}) {
  std::unique_ptr<Platform> own;
  if (!shared) own = std::make_unique<Platform>(s);
  const Platform& platform = shared ? *shared : *own;
  const cost::DeviceSpec& device = device_of(s);
  const bool folded = representative(s, mode);
  strategy::StepOptions build;
  build.representative_ranks = folded;
  build.fold_context_parallel = folded && folds_context_parallel(s, platform);
  build.task_names = kept.task_names;
  step = strategy::build_training_step(s.model, s.layout, s.training, build);
  tl = sim::Engine(step.graph, platform.costs(), s.fidelity, kept.memory_samples,
                   folded ? replica_symmetry(s.layout) : sim::RankSymmetry{})
           .with_compute_rates(graph_compute_rates(s, platform, step, folded))
           .run();
  strategy::add_memory_reserve(tl.memory, strategy::memory_reserve(s.layout, s.training));
  sim::WorkloadFacts facts;
  facts.tokens_per_step = step.tokens_per_step;
  facts.samples_per_step = step.samples_per_step;
  facts.model_flops_per_step = step.model_flops_per_step;
  facts.peak_flops_per_gpu = device.peak(model::precision_info(s.training.precision).compute);
  facts.memory_capacity = device.memory_capacity;
  facts.stage_of_rank = step.stage_of_rank;
  if (kept.link_report) {
    facts.links = &platform.links();
    facts.link_name = platform.link_namer();
  }
  return sim::make_report(step.graph, tl, facts);
}

// Layout changes that reduce memory, each kept only if it is valid for the model and cluster.
std::vector<std::pair<std::string, scenario::Scenario>> memory_alternatives(
    const scenario::Scenario& s) {
  std::vector<std::pair<std::string, scenario::Scenario>> out;
  auto add = [&](const std::string& change, scenario::Scenario alt) {
    try {
      strategy::validate(alt.layout, alt.training, alt.model, alt.gpus);
      out.emplace_back(change, std::move(alt));
    } catch (const UserError&) {
      // not a valid layout for this model / cluster: not a suggestion
    }
  };
  if (s.training.recompute != model::Recompute::full) {
    auto alt = s;
    alt.training.recompute = model::Recompute::full;
    add("recompute: full", alt);
  }
  if (s.layout.dp > 1) {
    for (const strategy::DataParallelFlavour* d : strategy::data_parallel_flavours()) {
      if (!d->saves_memory() || d->zero_stage <= strategy::zero_stage(s.layout.data_parallel))
        continue;
      auto alt = s;
      alt.layout.data_parallel = d->id;
      add("data_parallel: " + std::string(d->name), alt);
    }
  }
  if (s.layout.dp % 2 == 0) {
    auto alt = s;
    alt.layout.tp *= 2;
    alt.layout.dp /= 2;
    // Tensor parallelism stays inside a node (its all-reduces are on the critical path).
    if (alt.layout.tp <= s.gpus / s.nodes)
      add("tp: " + std::to_string(alt.layout.tp) + ", dp: " + std::to_string(alt.layout.dp), alt);
    alt = s;
    alt.layout.pp *= 2;
    alt.layout.dp /= 2;
    add("pp: " + std::to_string(alt.layout.pp) + ", dp: " + std::to_string(alt.layout.dp), alt);
  }
  if (s.training.micro_batch > 1) {
    auto alt = s;
    alt.training.micro_batch /= 2;
    add("micro_batch: " + std::to_string(alt.training.micro_batch), alt);
  }
  return out;
}

}  // namespace

scenario::Scenario single_device_twin(const scenario::Scenario& s) {
  scenario::Scenario twin = s;
  twin.name = s.name + " (1 GPU)";
  twin.cluster_name = "single_h100";
  twin.cluster = topo::preset_with_nodes("single_h100", 1);
  twin.devices.clear();
  twin.links.clear();
  twin.degraded.clear();  // speedup is over one healthy GPU
  twin.nodes = 1;
  twin.gpus = 1;
  twin.layout.tp = twin.layout.pp = twin.layout.dp = twin.layout.cp = twin.layout.ep =
      twin.layout.etp = 1;
  twin.training.moe.imbalance = 1.0;  // one GPU holds every expert: no rank is busier
  twin.layout.first_stage_layers = twin.layout.last_stage_layers = 0;
  twin.layout.sequence_parallel = false;
  twin.layout.schedule = strategy::PipelineSchedule::one_f_one_b;
  twin.layout.virtual_stages = 1;
  // The twin only needs one GPU; its kind stays s.gpu, so any single-node preset will do as the
  // (collective-free) topology.
  return twin;
}

SimulationResult simulate(const scenario::Scenario& s, const SimulateOptions& options,
                          const Platform* platform) {
  SimulationResult r;
  r.scenario = s;
  // One platform (topology, collective plans) for the run and its memory alternatives: they
  // change the layout, recomputation and micro-batch, never the cluster, profile or stack.
  std::unique_ptr<Platform> own;
  if (!platform) {
    own = std::make_unique<Platform>(s);
    platform = own.get();
  }
  r.report = run(s, options.ranks, r.step, r.timeline, platform,
                 {.memory_samples = options.memory_samples, .task_names = options.task_names});
  if (options.with_baseline && s.gpus > 1 && s.gpus <= kBaselineGpuLimit) {
    strategy::StepGraph step;
    sim::Timeline tl;
    r.baseline = run(single_device_twin(s), RankMode::all, step, tl);
    r.speedup = r.baseline->step_time.seconds() / r.report.step_time.seconds();
  }
  if (options.suggest && !r.report.fits) {
    // The alternatives are independent simulations on the shared (thread-safe) platform: one
    // core each, as the planner runs its candidates. They were half of a 16,384-GPU run.
    const auto alternatives = memory_alternatives(s);
    r.suggestions.resize(alternatives.size());
    std::vector<std::exception_ptr> failed(alternatives.size());
    parallel_for(alternatives.size(), 0, [&](size_t i) {
      try {
        const auto& [change, alt] = alternatives[i];
        strategy::StepGraph step;
        sim::Timeline tl;
        const sim::Report rep =
            run(alt, RankMode::representative, step, tl, platform, Kept::verdict_only());
        r.suggestions[i] = {change, rep.peak_memory, rep.step_time, rep.fits};
      } catch (...) {
        failed[i] = std::current_exception();
      }
    });
    for (const std::exception_ptr& e : failed) {
      if (e) std::rethrow_exception(e);
    }
    // Fitting changes first, fastest first; then the rest by how close they come.
    std::stable_sort(r.suggestions.begin(), r.suggestions.end(),
                     [](const Suggestion& a, const Suggestion& b) {
                       if (a.fits != b.fits) return a.fits;
                       return a.fits ? a.step_time < b.step_time : a.peak_memory < b.peak_memory;
                     });
  }
  return r;
}

SimTime simulate_collective(const cost::CostModel& costs, ir::CollectiveType type, Bytes size,
                            const std::vector<ir::RankId>& ranks, cost::NetworkFidelity fidelity) {
  // A full graph over the group's members: graph rank i is cluster rank ranks[i].
  ir::TaskGraph g(static_cast<uint32_t>(ranks.size()));
  uint32_t cluster_size = 0;
  for (ir::RankId r : ranks) cluster_size = std::max(cluster_size, r + 1);
  if (cluster_size != ranks.size()) g.set_cluster_ranks(ranks, cluster_size);
  const auto stream = g.add_stream("comm");
  const auto call = g.new_collective(type, size, g.group(ranks));
  const auto label = g.label(std::string(ir::to_string(type)), ir::Phase::other);
  for (uint32_t i = 0; i < ranks.size(); ++i) g.add_collective(i, stream, call, label);
  g.finalize();
  return sim::Engine(g, costs, fidelity).run().makespan;
}

}  // namespace cs::driver
