// What the Python module runs: simulate, plan, the validation suite and the importers, each the
// library call the matching `clustersim` command makes, with the GIL released while the
// simulator works (nothing here keeps state between calls, so Python threads may run several at
// once).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "driver/simulation.h"
#include "python/scenario_document.h"

namespace cs::python {

// `clustersim simulate`'s flags: fidelity "" keeps the scenario's; profile "" with no_profile
// false applies the GPU's shipped profile; ranks "automatic", "all" or "representative".
struct SimulateRequest {
  std::string fidelity, profile, ranks = "automatic";
  bool no_profile = false, baseline = true;
};
std::shared_ptr<const driver::SimulationResult> simulate(const ScenarioDocument& doc,
                                                         const SimulateRequest& request);
// Every memory change of the step as columns: time_s, rank (the cluster rank), category, bytes
// (the rank's total after it) and category_bytes (the category's total after it).
pybind11::dict memory_timeline(const driver::SimulationResult& r);

// `clustersim plan`: a scenario (`scenario`), or presets named by model, cluster, gpus,
// global_batch and seq; other keys of `options` (precision, attention, stack, objective,
// micro_batches, recompute, max_tp, max_cp, max_ep, detailed, simulate, threads, profile,
// no_profile) override the planner's defaults where given. The counts, the ranked and Pareto
// indices and every evaluated layout (plan --json's rows).
pybind11::dict plan(const ScenarioDocument* scenario, const pybind11::dict& options);

// Every suite file under `path` (a folder or one file), one dict per source.
pybind11::list validate_suite(const std::string& path, bool use_profiles, unsigned threads);

// `clustersim import hf`: the architecture, parameter counts, notes and the model by its
// dimensions (the keys of a scenario's model block).
pybind11::dict import_hf(const std::string& path);
// `clustersim import megatron`: a launch script's arguments (when `script` is not empty) followed
// by `args`; the draft scenario as YAML text and its warnings.
pybind11::dict import_megatron(const std::string& script, const std::vector<std::string>& args,
                               std::optional<int> gpus, const std::string& cluster,
                               const std::string& name);

}  // namespace cs::python
