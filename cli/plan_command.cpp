#include "cli/plan_command.h"

#include <unistd.h>

#include <cstdio>
#include <cmath>
#include <map>
#include <fstream>
#include <optional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "cli/flags.h"
#include "common/error.h"
#include "cost_models/device_spec.h"
#include "driver/simulation.h"
#include "planner/planner.h"
#include "planner/sweep.h"

namespace cs::cli {
namespace {

constexpr const char* kPlanHelp =
    "usage: clustersim plan --model M --cluster C --gpus N --global-batch B --seq S [options]\n"
    "       clustersim plan SCENARIO.yaml [options]        (the scenario's layout is ignored)\n"
    "  Enumerates every layout (TP, CP, PP, DP, EP for MoE models, ZeRO/FSDP, micro-batch, schedule\n"
    "  and interleave, stage split, recompute, bucket size), prunes by a memory bound, simulates the\n"
    "  rest (fast level, then the detailed level for the best) and ranks those that fit.\n"
    "  --precision P        fp32, amp_fp16, amp_bf16, mixed_fp16, mixed_bf16 (default mixed_bf16)\n"
    "  --attention A        fused (default) or eager\n"
    "  --objective O        throughput (default) or memory\n"
    "  --top K              rows to print (default 10)\n"
    "  --detailed N         candidates simulated at the detailed level (default 8)\n"
    "  --micro-batches L    micro-batch sizes to try (default 1,2,4,8)\n"
    "  --buckets L          DDP / ZeRO bucket sizes to try (default 25MiB,100MiB)\n"
    "  --recompute L        activation recompute to try (default none,selective,full)\n"
    "  --max-tp N           largest tensor-parallel size (default: one node's GPUs)\n"
    "  --max-cp N           largest context-parallel size, powers of two (default 16; 1: none)\n"
    "  --max-ep N           largest expert-parallel size for MoE models (default: no bound)\n"
    "  --max-vstages N      interleaved schedule with up to N chunks per stage (default 4; 1: none)\n"
    "  --no-zero-bubble     leave ZB-H1 out;  --even-splits: leave out the lighter first/last stages\n"
    "  --screen-above N     above N layouts passing the memory bound, simulate each structure once and\n"
    "                       every micro-batch/recompute/bucket of the best --refine K (default 400, 8; 0: never)\n"
    "  --threads N          worker threads (default: every core)\n"
    "  --json FILE, --csv FILE   every simulated layout\n"
    "  --explain            where the winner's time goes against the runner-up\n"
    "  Exit status 1 when no layout fits, with the smallest peak found and what dominates it.\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int positive(const std::string& flag, const std::string& v) { return int_flag(flag, v, 1); }

// A progress bar on stderr, only when stderr is a terminal.
std::function<void(const char*, size_t, size_t)> progress_bar() {
  if (!isatty(STDERR_FILENO)) return {};
  return [](const char* stage, size_t done, size_t total) {
    const int width = 30;
    const int filled = total ? static_cast<int>(width * done / total) : width;
    std::fprintf(stderr, "\r%-9s [%s%s] %zu/%zu", stage, std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), '.').c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

// The category that dominates a memory breakdown, as "optimizer_state (31.53 GiB, 59%)".
std::string dominant(const std::array<int64_t, ir::kMemoryCategoryCount>& at_peak) {
  size_t best = 0;
  int64_t total = 0;
  for (size_t c = 0; c < at_peak.size(); ++c) {
    total += at_peak[c];
    if (at_peak[c] > at_peak[best]) best = c;
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s (%s, %.0f%%)", std::string(ir::to_string(static_cast<ir::MemoryCategory>(best))).c_str(),
                gib(at_peak[best]).c_str(), total ? 100.0 * static_cast<double>(at_peak[best]) / static_cast<double>(total) : 0.0);
  return buf;
}

void print_row(std::ostream& out, size_t rank, const planner::Candidate& c, const planner::Evaluation& e) {
  char line[400];
  std::snprintf(line, sizeof line, "%4zu  %-68s %10s %10.0f %5.1f%% %10s %6.1f%% %10s  %s\n", rank, c.describe().c_str(), format_time(e.step_time).c_str(),
                e.tokens_per_second, 100 * e.mfu, gib(e.peak_memory).c_str(), 100 * e.bubble, format_time(e.exposed_communication).c_str(),
                e.detailed ? "detailed" : "fast");
  out << line;
}

void explain(std::ostream& out, const planner::PlanResult& r) {
  const auto& cands = r.enumeration.candidates;
  const auto& w = r.evaluations[r.ranked[0]];
  out << "\nwhy the winner wins\n";
  out << "  winner     " << cands[w.candidate].describe() << "\n";
  if (r.ranked.size() < 2) {
    out << "  it is the only layout that fits\n";
    return;
  }
  const auto& u = r.evaluations[r.ranked[1]];
  out << "  runner-up  " << cands[u.candidate].describe() << "\n";
  auto row = [&](const char* what, SimTime a, SimTime b) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-28s %12s %12s %+12.3f ms\n", what, format_time(a).c_str(), format_time(b).c_str(), (a - b).ms());
    out << line;
  };
  char head[160];
  std::snprintf(head, sizeof head, "  %-28s %12s %12s %15s\n", "per rank (mean)", "winner", "runner-up", "difference");
  out << head;
  row("step time", w.step_time, u.step_time);
  row("compute", w.compute, u.compute);
  row("exposed communication", w.exposed_communication, u.exposed_communication);
  row("idle (bubble, waiting)", w.idle, u.idle);
  out << "  peak memory                  " << gib(w.peak_memory) << " vs " << gib(u.peak_memory) << "\n";
  // The component that moved the most decides the verdict; a tie on time is broken by memory.
  const double gap = (u.step_time - w.step_time).seconds() / u.step_time.seconds();
  if (gap < 5e-4) {
    out << "  as fast as the runner-up (within 0.05%); ranked first for "
        << (w.peak_memory < u.peak_memory ? "its lower peak memory" : "coming first in enumeration order") << "\n";
    return;
  }
  const int64_t dc = (u.compute - w.compute).ps, de = (u.exposed_communication - w.exposed_communication).ps, di = (u.idle - w.idle).ps;
  const char* why = "less compute per GPU (less recomputation, better-shaped kernels, less replicated work)";
  if (de >= dc && de >= di) why = "less exposed communication";
  else if (di >= dc && di >= de) why = "a smaller pipeline bubble and less waiting";
  char line[160];
  std::snprintf(line, sizeof line, "  it is %.2f%% faster, mainly by ", 100 * gap);
  out << line << why << "\n";
}

void write_json(const std::string& path, const planner::PlanResult& r) {
  using nlohmann::json;
  json rows = json::array();
  for (size_t k = 0; k < r.evaluations.size(); ++k) {
    const auto& e = r.evaluations[k];
    const auto& c = r.enumeration.candidates[e.candidate];
    rows.push_back({{"layout", c.describe()}, {"tp", c.layout.tp}, {"cp", c.layout.cp}, {"pp", c.layout.pp}, {"dp", c.layout.dp},
                    {"ep", c.layout.ep}, {"first_stage_layers", c.layout.first_stage_layers}, {"last_stage_layers", c.layout.last_stage_layers},
                    {"stage_layers", c.split},
                    {"data_parallel", strategy::to_string(c.layout.data_parallel)}, {"micro_batch", c.training.micro_batch},
                    {"schedule", strategy::to_string(c.layout.schedule)}, {"virtual_stages", c.layout.virtual_stages},
                    {"recompute", model::to_string(c.training.recompute)}, {"bucket_size_bytes", c.layout.bucket_size.count},
                    {"level", e.detailed ? "detailed" : "fast"}, {"step_time_s", e.step_time.seconds()}, {"tokens_per_s", e.tokens_per_second},
                    {"mfu", e.mfu}, {"peak_memory_bytes", e.peak_memory}, {"fits", e.fits}, {"bubble", e.bubble},
                    {"exposed_communication_s", e.exposed_communication.seconds()}, {"error", e.error}});
  }
  json ranked = json::array(), pareto = json::array();
  for (size_t k : r.ranked) ranked.push_back(r.enumeration.candidates[r.evaluations[k].candidate].describe());
  for (size_t k : r.pareto) pareto.push_back(r.enumeration.candidates[r.evaluations[k].candidate].describe());
  json j = {{"considered", r.enumeration.considered}, {"valid", r.enumeration.candidates.size()}, {"pruned", r.pruned.size()},
            {"simulated", r.evaluations.size()}, {"out_of_memory", r.out_of_memory()}, {"ranked", ranked}, {"pareto", pareto},
            {"evaluations", rows}, {"seconds", r.seconds}};
  std::ofstream f(path);
  if (!f) throw UserError("cannot write '" + path + "'");
  f << j.dump(2) << "\n";
}

void write_csv(const std::string& path, const planner::PlanResult& r) {
  std::ofstream f(path);
  if (!f) throw UserError("cannot write '" + path + "'");
  f << "rank,layout,tp,cp,pp,dp,ep,data_parallel,micro_batch,schedule,virtual_stages,recompute,bucket_bytes,level,step_time_s,tokens_per_s,mfu,"
       "peak_memory_bytes,fits,bubble,exposed_communication_s\n";
  std::vector<size_t> rank_of(r.evaluations.size(), 0);
  for (size_t i = 0; i < r.ranked.size(); ++i) rank_of[r.ranked[i]] = i + 1;
  for (size_t k = 0; k < r.evaluations.size(); ++k) {
    const auto& e = r.evaluations[k];
    const auto& c = r.enumeration.candidates[e.candidate];
    f << (rank_of[k] ? std::to_string(rank_of[k]) : "") << ",\"" << c.describe() << "\"," << c.layout.tp << "," << c.layout.cp << "," << c.layout.pp << "," << c.layout.dp << "," << c.layout.ep << ","
      << strategy::to_string(c.layout.data_parallel) << "," << c.training.micro_batch << "," << strategy::to_string(c.layout.schedule) << ","
      << c.layout.virtual_stages << "," << model::to_string(c.training.recompute) << "," << c.layout.bucket_size.count << ","
      << (e.detailed ? "detailed" : "fast") << "," << e.step_time.seconds() << "," << e.tokens_per_second << "," << e.mfu << ","
      << e.peak_memory << "," << (e.fits ? "true" : "false") << "," << e.bubble << "," << e.exposed_communication.seconds() << "\n";
  }
}

}  // namespace

// Builds the scenario `plan` works on: from a file, or from --model/--cluster/--gpus/...
scenario::Scenario plan_base(const std::string& file, const std::string& model, const std::string& cluster, int gpus, int64_t global_batch,
                             int64_t seq, const std::string& precision, const std::string& attention);

int plan_command(const std::vector<std::string>& args, std::ostream& out) {
  std::string file, model, cluster, precision = "mixed_bf16", attention = "fused", json_path, csv_path;
  int gpus = 0, top = 10;
  int64_t global_batch = 0, seq = 0;
  bool want_explain = false;
  planner::PlanSpace space;
  planner::PlanOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UserError("option " + a + " needs a value");
      return args[++i];
    };
    if (a == "--model") model = value();
    else if (a == "--cluster") cluster = value();
    else if (a == "--gpus") gpus = positive(a, value());
    else if (a == "--global-batch") global_batch = positive(a, value());
    else if (a == "--seq") seq = positive(a, value());
    else if (a == "--precision") precision = value();
    else if (a == "--attention") attention = value();
    else if (a == "--top") top = positive(a, value());
    else if (a == "--detailed") options.detailed = static_cast<size_t>(positive(a, value()));
    else if (a == "--threads") options.threads = static_cast<unsigned>(positive(a, value()));
    else if (a == "--json") json_path = value();
    else if (a == "--csv") csv_path = value();
    else if (a == "--explain") want_explain = true;
    else if (a == "--max-tp") space.max_tp = positive(a, value());
    else if (a == "--max-cp") space.max_cp = positive(a, value());
    else if (a == "--max-ep") space.max_ep = positive(a, value());
    else if (a == "--max-vstages") space.max_virtual_stages = positive(a, value());
    else if (a == "--no-zero-bubble") space.zero_bubble = false;
    else if (a == "--screen-above") options.screen_above = static_cast<size_t>(int_flag(a, value(), 0));
    else if (a == "--refine") options.refine = static_cast<size_t>(positive(a, value()));
    else if (a == "--even-splits") space.uneven_variants = false;
    else if (a == "--recompute") {
      space.recompute.clear();
      for (const auto& v : split(value())) {
        if (v == "none") space.recompute.push_back(model::Recompute::none);
        else if (v == "selective") space.recompute.push_back(model::Recompute::selective);
        else if (v == "full") space.recompute.push_back(model::Recompute::full);
        else throw UserError("--recompute '" + v + "': valid values are none, selective, full");
      }
    }
    else if (a == "--objective") {
      const std::string v = value();
      if (v == "throughput") options.objective = planner::Objective::throughput;
      else if (v == "memory") options.objective = planner::Objective::memory;
      else throw UserError("--objective '" + v + "': valid values are throughput, memory");
    } else if (a == "--micro-batches") {
      space.micro_batches.clear();
      for (const auto& v : split(value())) space.micro_batches.push_back(positive(a, v));
    } else if (a == "--buckets") {
      space.bucket_sizes.clear();
      for (const auto& v : split(value())) {
        space.bucket_sizes.push_back(size_flag(a, v));
      }
    } else if (a == "--help" || a == "-h") {
      out << kPlanHelp;
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      throw UserError("unknown option '" + a + "' for plan\n" + std::string(kPlanHelp));
    } else if (file.empty()) {
      file = a;
    } else {
      throw UserError("plan takes one scenario file, got a second: '" + a + "'");
    }
  }
  if (space.micro_batches.empty() || space.bucket_sizes.empty() || space.recompute.empty()) {
    throw UserError("--micro-batches, --buckets and --recompute need at least one value");
  }
  const scenario::Scenario base = plan_base(file, model, cluster, gpus, global_batch, seq, precision, attention);
  options.progress = progress_bar();
  const planner::PlanResult r = planner::plan(base, space, options);
  const auto& cands = r.enumeration.candidates;
  // The scenario's device: a GPU declared in its YAML as well as a preset.
  const auto& device = driver::device_of(base);

  out << "plan        " << base.model.name << " on " << base.gpus << " x " << device.name << " (" << base.nodes << " x " << base.cluster_name
      << "), global batch " << base.training.global_batch << ", seq " << base.training.seq_len << ", " << model::to_string(base.training.precision)
      << ", objective " << (options.objective == planner::Objective::memory ? "memory" : "throughput") << "\n";
  out << "enumerated  " << r.enumeration.considered << " layouts: " << cands.size() << " valid, "
      << r.enumeration.considered - cands.size() << " rejected by the model or batch\n";
  for (const auto& [why, n] : r.enumeration.invalid) out << "              " << n << " x " << why << "\n";
  out << "pruned      " << r.pruned.size() << " by the memory bound (" << gib(device.memory_capacity.count) << " per GPU)\n";
  for (const auto& [why, n] : r.pruned_reasons()) out << "              " << n << " x " << why << "\n";
  if (!r.not_simulated.empty()) {
    // Survivors of the memory bound by pipeline and expert-parallel size: what would be simulated.
    std::map<std::pair<int, int>, size_t> by_pp_ep;
    std::vector<bool> pruned(cands.size(), false);
    for (const auto& p : r.pruned) pruned[p.candidate] = true;
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!pruned[i]) ++by_pp_ep[{cands[i].layout.pp, cands[i].layout.ep}];
    }
    out << "not simulated: " << r.not_simulated << "\n";
    out << "            " << cands.size() - r.pruned.size() << " layouts pass the memory bound and would be simulated";
    if (!by_pp_ep.empty()) {
      out << " (pp/ep:";
      for (const auto& [k, n] : by_pp_ep) out << " " << k.first << "/" << k.second << " x" << n;
      out << ")";
    }
    out << "\n";
    return 1;
  }
  size_t detailed = 0;
  for (const auto& e : r.evaluations) detailed += e.detailed ? 1 : 0;
  char line[256];
  if (r.screened_structures > 0) {
    out << "screened    " << cands.size() - r.pruned.size() << " layouts in " << r.screened_structures
        << " structures: each simulated once (smallest micro-batch, least recompute that passes the bound), then every setting of the best "
        << r.refined_structures << " (--screen-above, --refine)\n";
  }
  std::snprintf(line, sizeof line, "simulated   %zu layouts at the fast level, %zu of them again at the detailed level, in %.1f s\n", r.evaluations.size(),
                detailed, r.seconds);
  out << line;
  out << "            " << r.out_of_memory() << " did not fit in their own simulation; " << r.ranked.size() << " fit";
  if (r.failed()) out << "; " << r.failed() << " failed to simulate (see --json)";
  out << "\n\n";

  if (!json_path.empty()) write_json(json_path, r);
  if (!csv_path.empty()) write_csv(csv_path, r);

  if (!r.any_fits()) {
    // The smallest peak found: simulated ones first, else the bound of the leanest pruned one.
    std::string layout, what;
    int64_t smallest = INT64_MAX;
    for (const auto& e : r.evaluations) {
      if (e.peak_memory < smallest) {
        smallest = e.peak_memory;
        layout = cands[e.candidate].describe();
        what = dominant(e.at_peak);
      }
    }
    if (layout.empty()) {
      for (const auto& p : r.pruned) {
        if (p.bound.total() < smallest) {
          smallest = p.bound.total();
          layout = cands[p.candidate].describe();
          std::array<int64_t, ir::kMemoryCategoryCount> parts{};
          parts[static_cast<size_t>(ir::MemoryCategory::parameters)] = p.bound.parameters;
          parts[static_cast<size_t>(ir::MemoryCategory::gradients)] = p.bound.gradients;
          parts[static_cast<size_t>(ir::MemoryCategory::optimizer_state)] = p.bound.optimizer_state;
          parts[static_cast<size_t>(ir::MemoryCategory::activations)] = p.bound.activations;
          what = dominant(parts);
        }
      }
      layout += " (lower bound, not simulated)";
    }
    out << "no layout fits in " << gib(device.memory_capacity.count) << " per GPU.\n";
    if (smallest != INT64_MAX) out << "smallest peak found: " << gib(smallest) << " with " << layout << "\ndominated by " << what << "\n";
    out << "more GPUs, GPUs with more memory, or a smaller micro-batch / sequence would be needed.\n";
    return 1;
  }

  char head[400];
  std::snprintf(head, sizeof head, "%4s  %-68s %10s %10s %6s %10s %7s %10s  %s\n", "rank", "layout", "step", "tokens/s", "MFU", "peak", "bubble",
                "exposed", "level");
  out << head;
  for (size_t i = 0; i < r.ranked.size() && i < static_cast<size_t>(top); ++i) {
    const auto& e = r.evaluations[r.ranked[i]];
    print_row(out, i + 1, cands[e.candidate], e);
  }
  if (r.ranked.size() > static_cast<size_t>(top)) out << "      ... " << r.ranked.size() - static_cast<size_t>(top) << " more (--top, --csv, --json)\n";
  // The frontier, thinned to at most 12 evenly spaced points (both ends kept).
  const size_t shown = std::min<size_t>(r.pareto.size(), 12);
  out << "\nPareto frontier, throughput against peak memory (leanest first";
  if (shown < r.pareto.size()) out << "; " << shown << " of " << r.pareto.size() << " points, --json lists all";
  out << ")\n";
  for (size_t i = 0; i < shown; ++i) {
    const size_t k = r.pareto[shown == 1 ? 0 : i * (r.pareto.size() - 1) / (shown - 1)];
    const auto& e = r.evaluations[k];
    char row[320];
    std::snprintf(row, sizeof row, "      %-68s %10.0f tokens/s %10s\n", cands[e.candidate].describe().c_str(), e.tokens_per_second, gib(e.peak_memory).c_str());
    out << row;
  }
  if (want_explain) explain(out, r);
  return 0;
}

scenario::Scenario plan_base(const std::string& file, const std::string& model, const std::string& cluster, int gpus, int64_t global_batch,
                             int64_t seq, const std::string& precision, const std::string& attention) {
  if (!file.empty()) {
    if (!model.empty() || !cluster.empty() || gpus || global_batch || seq) {
      throw UserError("plan: give a scenario file or --model/--cluster/--gpus/--global-batch/--seq, not both");
    }
    return scenario::load_scenario(file);
  }
  if (model.empty() || cluster.empty() || !gpus || !global_batch || !seq) {
    throw UserError(std::string("plan needs --model, --cluster, --gpus, --global-batch and --seq (or a scenario file)\n") + kPlanHelp);
  }
  scenario::Scenario s;
  s.name = "plan";
  s.file = "plan arguments";
  s.model = model::find_model_preset(model);
  const int per_node = topo::find_cluster_preset(cluster).node.gpus;
  if (gpus > per_node && gpus % per_node != 0) {
    throw UserError("--gpus " + std::to_string(gpus) + " is not a whole number of " + cluster + " nodes (" + std::to_string(per_node) + " GPUs each)");
  }
  s.nodes = gpus > per_node ? gpus / per_node : 1;
  s.cluster = topo::preset_with_nodes(cluster, s.nodes);
  s.cluster_name = cluster;
  s.gpu = s.cluster.gpu;
  s.gpus = gpus;
  s.training.global_batch = global_batch;
  s.training.seq_len = seq;
  bool known = false;
  for (auto p : {model::Precision::fp32, model::Precision::amp_fp16, model::Precision::amp_bf16, model::Precision::mixed_fp16, model::Precision::mixed_bf16}) {
    if (precision == model::to_string(p)) s.training.precision = p, known = true;
  }
  if (!known) throw UserError("--precision '" + precision + "': valid values are fp32, amp_fp16, amp_bf16, mixed_fp16, mixed_bf16");
  if (attention == "fused") s.training.attention = model::AttentionImpl::fused;
  else if (attention == "eager") s.training.attention = model::AttentionImpl::eager;
  else throw UserError("--attention '" + attention + "': valid values are fused, eager");
  if (s.model.family != model::Family::mlp && seq > s.model.max_seq) {
    throw UserError("--seq " + std::to_string(seq) + " exceeds " + s.model.name + "'s context of " + std::to_string(s.model.max_seq));
  }
  return s;
}

int sweep_command(const std::vector<std::string>& args, std::ostream& out) {
  constexpr const char* kHelp =
      "usage: clustersim sweep SCENARIO.yaml (--gpus L | --nodes L | --batch L | --seq L | --bandwidth L)\n"
      "                        [--csv FILE] [--plot FILE.svg] [--threads N]\n"
      "  Runs the scenario at each value of a comma-separated list and prints speedup over the first\n"
      "  point, scaling efficiency (GPU and node sweeps), the step time split and peak memory.\n"
      "  --gpus 1,2,4,8       GPUs of the scenario's cluster kind; TP, PP and the global batch stay, DP scales\n"
      "  --nodes 1,2,4        the same in whole nodes\n"
      "  --batch 16,32,64     global batch (sequences)\n"
      "  --seq 1024,2048      sequence length\n"
      "  --bandwidth 100Gbps,400Gbps   NIC bandwidth per direction\n"
      "  --csv FILE           the table as CSV\n"
      "  --plot FILE.svg      speedup and step-time split as an SVG chart\n";
  std::string file, csv_path, plot_path;
  std::optional<planner::SweepAxis> axis;
  std::vector<std::string> values;
  unsigned threads = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UserError("option " + a + " needs a value");
      return args[++i];
    };
    auto set_axis = [&](planner::SweepAxis ax) {
      if (axis) throw UserError("sweep over one thing at a time (" + std::string(planner::to_string(*axis)) + " and " + a.substr(2) + " given)");
      axis = ax;
      values = split(value());
      if (values.empty()) throw UserError(a + " needs at least one value");
    };
    if (a == "--gpus") set_axis(planner::SweepAxis::gpus);
    else if (a == "--nodes") set_axis(planner::SweepAxis::nodes);
    else if (a == "--batch") set_axis(planner::SweepAxis::global_batch);
    else if (a == "--seq") set_axis(planner::SweepAxis::seq_len);
    else if (a == "--bandwidth") set_axis(planner::SweepAxis::nic_bandwidth);
    else if (a == "--csv") csv_path = value();
    else if (a == "--plot") plot_path = value();
    else if (a == "--threads") threads = static_cast<unsigned>(positive(a, value()));
    else if (a == "--help" || a == "-h") {
      out << kHelp;
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      throw UserError("unknown option '" + a + "' for sweep\n" + std::string(kHelp));
    } else if (file.empty()) {
      file = a;
    } else {
      throw UserError("sweep takes one scenario file, got a second: '" + a + "'");
    }
  }
  if (file.empty() || !axis) throw UserError(std::string("sweep needs a scenario file and one of --gpus, --nodes, --batch, --seq, --bandwidth\n") + kHelp);
  const scenario::Scenario base = scenario::load_scenario(file);
  const planner::SweepResult r = planner::run_sweep(base, *axis, values, threads);
  out << "sweep       " << base.name << " over " << planner::to_string(*axis) << "\n\n";
  char head[256];
  std::snprintf(head, sizeof head, "%10s %5s %12s %11s %6s %8s %8s %11s %11s %11s %10s\n", planner::to_string(*axis).data(), "GPUs", "step",
                "tokens/s", "MFU", "speedup", "effic.", "compute", "exposed", "idle", "peak");
  out << head;
  for (const auto& row : r.rows) {
    if (!row.error.empty()) {
      out << "  " << row.value << ": " << row.error << "\n";
      continue;
    }
    char line[320];
    std::snprintf(line, sizeof line, "%10s %5d %12s %11.0f %5.1f%% %7.3fx %8s %11s %11s %11s %10s%s\n", row.value.c_str(), row.gpus,
                  format_time(row.step_time).c_str(), row.tokens_per_second, 100 * row.mfu, row.speedup,
                  row.efficiency >= 0 ? (std::to_string(static_cast<int>(std::lround(row.efficiency * 1000)) / 10) + "." +
                                         std::to_string(static_cast<int>(std::lround(row.efficiency * 1000)) % 10) + "%").c_str()
                                      : "-",
                  format_time(row.compute).c_str(), format_time(row.exposed_communication).c_str(), format_time(row.idle).c_str(),
                  gib(row.peak_memory).c_str(), row.fits ? "" : " (does not fit)");
    out << line;
  }
  if (!csv_path.empty()) {
    std::ofstream f(csv_path);
    if (!f) throw UserError("cannot write '" + csv_path + "'");
    planner::write_sweep_csv(f, r);
    out << "\nwrote " << csv_path << "\n";
  }
  if (!plot_path.empty()) {
    std::ofstream f(plot_path);
    if (!f) throw UserError("cannot write '" + plot_path + "'");
    planner::write_sweep_svg(f, r);
    out << (csv_path.empty() ? "\n" : "") << "wrote " << plot_path << "\n";
  }
  for (const auto& row : r.rows) {
    if (!row.error.empty()) return 1;
  }
  return 0;
}

}  // namespace cs::cli
