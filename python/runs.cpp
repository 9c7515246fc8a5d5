#include "python/runs.h"

#include <pybind11/stl.h>

#include "common/error.h"
#include "common/text_file.h"
#include "interop/hf_config.h"
#include "interop/megatron_args.h"
#include "interop/scenario_draft.h"
#include "planner/planner.h"
#include "planner/preset_scenario.h"
#include "python/result_json.h"
#include "python/yaml_python.h"
#include "scenarios/named_models.h"
#include "scenarios/profile_io.h"
#include "topology/cluster_spec.h"
#include "validate/suite.h"

namespace py = pybind11;
using nlohmann::json;

namespace cs::python {

namespace {

// The value of an enum whose to_string is `text` (to_string answers "?" past the last value).
template <class E>
E by_name(const std::string& what, const std::string& text) {
  std::string valid;
  for (int i = 0; i < 64; ++i) {
    const auto e = static_cast<E>(i);
    const std::string name(to_string(e));
    if (name == "?") break;
    if (name == text) return e;
    valid += (valid.empty() ? "" : ", ") + name;
  }
  throw UserError(what + " '" + text + "': valid values are " + valid);
}

// `--profile FILE` / `--no-profile` / the GPU's shipped profile, as simulate and plan apply them.
void apply_profile(scenario::Scenario& s, const std::string& profile, bool no_profile) {
  if (!profile.empty() && no_profile)
    throw UserError("give profile=PATH or profile=False, not both");
  if (!profile.empty()) s.profile = scenario::load_profile(profile);
  if (no_profile)
    s.profile.reset();
  else
    driver::apply_default_profile(s);
}

driver::RankMode rank_mode(const std::string& ranks) {
  if (ranks == "automatic") return driver::RankMode::automatic;
  if (ranks == "all") return driver::RankMode::all;
  if (ranks == "representative") return driver::RankMode::representative;
  throw UserError("ranks '" + ranks + "': valid values are automatic, all, representative");
}

// Sets `into` from options[key] where the key is present and not None.
template <class T>
void take(const py::dict& options, const char* key, T& into) {
  if (options.contains(key) && !options[key].is_none()) into = options[key].cast<T>();
}

scenario::Scenario plan_base(const ScenarioDocument* doc, const py::dict& o) {
  planner::PresetRequest preset;
  take(o, "model", preset.model);
  take(o, "cluster", preset.cluster);
  take(o, "gpus", preset.gpus);
  take(o, "global_batch", preset.global_batch);
  take(o, "seq", preset.seq);
  const bool any_preset = !preset.model.empty() || !preset.cluster.empty() || preset.gpus ||
                          preset.global_batch || preset.seq;
  if (doc) {
    if (any_preset)
      throw UserError("plan: give a scenario or model/cluster/gpus/global_batch/seq, not both");
    return doc->read();
  }
  if (preset.model.empty() || preset.cluster.empty() || !preset.gpus || !preset.global_batch ||
      !preset.seq)
    throw UserError("plan needs model, cluster, gpus, global_batch and seq (or a scenario)");
  std::string text;
  take(o, "precision", text);
  if (!text.empty()) preset.precision = by_name<model::Precision>("precision", text);
  text.clear();
  take(o, "attention", text);
  if (!text.empty()) preset.attention = by_name<model::AttentionImpl>("attention", text);
  return planner::preset_scenario(preset);
}

void plan_space(const py::dict& o, planner::PlanSpace& space) {
  take(o, "micro_batches", space.micro_batches);
  std::vector<std::string> recompute;
  take(o, "recompute", recompute);
  if (!recompute.empty()) {
    space.recompute.clear();
    for (const auto& r : recompute)
      space.recompute.push_back(by_name<model::Recompute>("recompute", r));
  }
  take(o, "max_tp", space.max_tp);
  take(o, "max_cp", space.max_cp);
  take(o, "max_ep", space.max_ep);
  if (space.micro_batches.empty() || space.recompute.empty())
    throw UserError("micro_batches and recompute need at least one value");
}

void plan_options(const py::dict& o, planner::PlanOptions& options) {
  std::string objective = "throughput";
  take(o, "objective", objective);
  if (objective != "throughput" && objective != "memory")
    throw UserError("objective '" + objective + "': valid values are throughput, memory");
  options.objective =
      objective == "memory" ? planner::Objective::memory : planner::Objective::throughput;
  take(o, "detailed", options.detailed);
  take(o, "simulate", options.simulate);
  take(o, "threads", options.threads);
}

}  // namespace

std::shared_ptr<const driver::SimulationResult> simulate(const ScenarioDocument& doc,
                                                         const SimulateRequest& request) {
  scenario::Scenario s = doc.read();
  apply_profile(s, request.profile, request.no_profile);
  if (!request.fidelity.empty())
    s.fidelity =
        scenario::find_named_model(scenario::network_models(), "fidelity", request.fidelity);
  driver::SimulateOptions options;
  options.with_baseline = request.baseline;
  options.ranks = rank_mode(request.ranks);
  py::gil_scoped_release unlocked;
  const driver::Platform platform(s);
  return std::make_shared<const driver::SimulationResult>(driver::simulate(s, options, &platform));
}

py::dict memory_timeline(const driver::SimulationResult& r) {
  py::list time, rank, category, bytes, category_bytes;
  const auto& ranks = r.report.ranks;
  for (const auto& m : r.timeline.memory_samples) {
    time.append(m.time.seconds());
    rank.append(m.rank < ranks.size() ? ranks[m.rank].cluster_rank : m.rank);
    category.append(std::string(ir::to_string(m.category)));
    bytes.append(m.bytes);
    category_bytes.append(m.category_bytes);
  }
  py::dict columns;
  columns["time_s"] = time;
  columns["rank"] = rank;
  columns["category"] = category;
  columns["bytes"] = bytes;
  columns["category_bytes"] = category_bytes;
  return columns;
}

py::dict plan(const ScenarioDocument* scenario, const py::dict& o) {
  scenario::Scenario base = plan_base(scenario, o);
  std::string stack, profile;
  take(o, "stack", stack);
  std::optional<model::Stack> requested;
  if (!stack.empty())
    requested = scenario::find_named_model(scenario::software_stacks(), "stack", stack);
  // As `clustersim plan`: the scenario's stack where it names one, else megatron_core.
  const bool names_stack = scenario && static_cast<const YAML::Node>(scenario->root())["stack"];
  planner::choose_plan_stack(base, requested, names_stack);
  bool no_profile = false;
  take(o, "profile", profile);
  take(o, "no_profile", no_profile);
  apply_profile(base, profile, no_profile);
  planner::PlanSpace space;
  plan_space(o, space);
  planner::PlanOptions options;
  plan_options(o, options);
  options.take_expected_error(base);
  std::optional<planner::PlanResult> r;
  {
    py::gil_scoped_release unlocked;
    r = planner::plan(base, space, options);
  }
  const json j = {{"considered", r->enumeration.considered},
                  {"valid", r->enumeration.candidates.size()},
                  {"pruned", r->pruned.size()},
                  {"simulated", r->evaluations.size()},
                  {"out_of_memory", r->out_of_memory()},
                  {"failed", r->failed()},
                  {"not_simulated", r->not_simulated},
                  {"seconds", r->seconds},
                  {"ranked", r->ranked},
                  {"pareto", r->pareto},
                  {"evaluations", plan_rows_json(*r)}};
  return py::dict(to_python(j));
}

py::list validate_suite(const std::string& path, bool use_profiles, unsigned threads) {
  validate::SuiteOptions options;
  options.use_profiles = use_profiles;
  options.threads = threads;
  std::vector<validate::SourceResult> results;
  {
    py::gil_scoped_release unlocked;
    for (const auto& file : validate::suite_files(path))
      results.push_back(validate::run_suite_file(file, options));
  }
  py::list out;
  for (const auto& r : results) out.append(to_python(suite_source_json(r)));
  return out;
}

py::dict import_hf(const std::string& path) {
  const interop::HfModel hf = interop::load_hf_config(path);
  const model::ModelSpec& m = hf.spec;
  py::dict dimensions;
  // model_keys gives each value as YAML text (flow mappings for moe and mla).
  for (const auto& [key, value] : interop::model_keys(m))
    dimensions[py::str(key)] = to_python(YAML::Load(value));
  py::dict d;
  d["architecture"] = hf.architecture;
  d["parameters"] = model::parameter_count(m);
  d["active_parameters"] = model::active_parameter_count(m);
  d["mtp_parameters"] = m.mtp_depth > 0 ? model::mtp_parameter_count(m) : 0;
  d["notes"] = hf.notes;
  d["dimensions"] = dimensions;
  return d;
}

py::dict import_megatron(const std::string& script, const std::vector<std::string>& args,
                         std::optional<int> gpus, const std::string& cluster,
                         const std::string& name) {
  interop::ImportOptions o;
  o.gpus = gpus;
  o.cluster = cluster;
  o.name = name;
  o.gpus_per_node = topo::find_cluster_preset(o.cluster).node.gpus;
  std::vector<std::string> all;
  if (!script.empty())
    // Bounded as `clustersim import megatron --file` reads it (common/text_file.h).
    all = interop::launch_script_arguments(read_text_file(script, "launch script"), script);
  o.script = script;  // a refusal of one of its values names it
  o.script_words = all.size();
  all.insert(all.end(), args.begin(), args.end());  // given arguments come last and win
  const interop::ScenarioDraft draft = interop::import_megatron(all, o);
  py::dict d;
  d["yaml"] = interop::to_yaml(draft);
  d["warnings"] = draft.warnings;
  return d;
}

}  // namespace cs::python
