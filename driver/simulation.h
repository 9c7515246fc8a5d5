// Scenario -> task graph -> simulation -> report, plus the single-device twin that speedup is
// measured against (same model, same GPU kind, same global batch, micro-batch and precision),
// and, when the layout does not fit, what would make it fit.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cost_models/analytic_cost_model.h"
#include "scenarios/scenario.h"
#include "sim/report.h"
#include "strategies/training_step.h"

namespace cs::driver {

enum class RankMode : uint8_t { automatic, all, representative };

struct SimulateOptions {
  bool with_baseline = true;  // simulate the single-GPU twin (skipped above kBaselineGpuLimit)
  bool suggest = true;        // when it does not fit, try alternatives and say which fit
  RankMode ranks = RankMode::automatic;
  bool memory_samples = true;  // keep memory over time (for --trace); the planner does not need it
  bool task_names = true;      // name every task (traces, messages); the planner does not need it
};
// Above these sizes the baseline twin is skipped (one GPU running the whole global batch says
// little) and graphs use one representative rank per pipeline stage.
inline constexpr int kBaselineGpuLimit = 16;
inline constexpr int kFullGraphGpuLimit = 64;

// A layout change that was simulated because the scenario does not fit.
struct Suggestion {
  std::string change;  // e.g. "data_parallel: fsdp_full_shard"
  int64_t peak_memory = 0;
  SimTime step_time;
  bool fits = false;
};

struct SimulationResult {
  scenario::Scenario scenario;
  strategy::StepGraph step;
  sim::Timeline timeline;
  sim::Report report;
  std::optional<sim::Report> baseline;  // single-device twin; absent when the scenario is one GPU
  double speedup = 1.0;
  std::vector<Suggestion> suggestions;  // only when the scenario does not fit
};

// The scenario's device: its calibrated profile's when it has one, else the datasheet spec.
const cost::DeviceSpec& device_of(const scenario::Scenario& s);

// Shipped profiles: `<gpu>.yaml` in scenario::profiles_dir() (CLUSTERSIM_PROFILES, an installed
// clustersim's share/clustersim/profiles, or the source tree's profiles/).
std::string profiles_dir();
// The shipped profile file of a GPU preset, or "" when there is none.
std::string default_profile_path(const std::string& gpu);
// Gives `s` its GPU's shipped profile when it has no profile of its own (no `profile:` key, no
// --profile) and its GPU is a preset with a file in profiles_dir(); a GPU declared in the scenario
// keeps its declared figures. Returns the file applied, or "".
std::string apply_default_profile(scenario::Scenario& s);
// One line for the report header: the profile a prediction used and the error it gave on the
// validation suite (from the profile's own `validation:` block), or that datasheet figures were
// used.
std::string profile_summary(const scenario::Scenario& s);
// The step-time error profile_summary quotes: the profile's out-of-sample validation figures on
// the scenario's stack's runs where its suite has some, else on every stack's; none when the
// error was not measured (no profile, no validation block, no expressible validation run). `plan`
// takes the MAPE as the margin within which two layouts tie.
struct ExpectedError {
  int runs = 0;
  double mape_percent = 0, worst_percent = 0;
  std::string suites;
  std::string precisions;  // the precisions those runs trained in ("fp8")
  bool of_stack = false;   // measured on runs of the scenario's own stack
};
std::optional<ExpectedError> expected_step_error(const scenario::Scenario& s);

// The collective model's parameters for a GPU (its HBM bandwidth prices the buffer passes).
cost::CollectiveParams collective_params(const cost::DeviceSpec& device);

// The two short micro-batch counts from which a step's time extrapolates linearly to any larger
// count (see planner.h): 1F1B and GPipe at p and p + 1 (1F1B has capped what is in flight at p;
// GPipe grows linearly from 1), interleaved at p and 2p (it needs multiples of p and holds up to
// p + (p - 2) / v micro-batches), 1 and 2 without a pipeline, except FSDP at 2 and 3: its first
// micro-batch also gathers what later ones have prefetched.
std::pair<int64_t, int64_t> short_run_counts(const strategy::Layout& l);

// A scenario's cluster and cost model, built once and shared (read-only, thread-safe) by every
// simulation on the same cluster, device and network settings: the planner and sweeps evaluate
// thousands of layouts on one, and collective plans are cached across all of them.
class Platform {
 public:
  explicit Platform(const scenario::Scenario& s);
  const topo::Topology& topology() const { return *topology_; }
  const cost::AnalyticCostModel& costs() const { return *costs_; }
  const std::vector<sim::LinkInfo>& links() const { return links_; }
  // Names links from this platform's topology, which it keeps alive (a report may outlive us).
  sim::LinkNamer link_namer() const {
    return [t = topology_](uint32_t link) { return t->link_name(link); };
  }

 private:
  // Behind a pointer: the cost model refers to it; shared: link namers keep it.
  std::shared_ptr<const topo::Topology> topology_;
  std::unique_ptr<cost::AnalyticCostModel> costs_;
  std::vector<sim::LinkInfo> links_;
};

// `platform`, when given, must have been built from a scenario with the same cluster (degraded
// NICs included), GPU, network settings and software stack as `s`; degraded GPUs and nodes are
// read from `s`.
SimulationResult simulate(const scenario::Scenario& s, const SimulateOptions& options = {},
                          const Platform* platform = nullptr);
// The model, layout and training step of `s` on one GPU of the same kind.
scenario::Scenario single_device_twin(const scenario::Scenario& s);

// One collective over `ranks` (cluster ranks), simulated by the engine at the given fidelity:
// the time from start to the last member's end (as bench-collective and the nccl-tests suite
// time it).
SimTime simulate_collective(const cost::CostModel& costs, ir::CollectiveType type, Bytes size,
                            const std::vector<ir::RankId>& ranks, cost::NetworkFidelity fidelity);

}  // namespace cs::driver
