// clustersim: predicts step time, speedup, exposed communication and memory of a parallel
// training layout by discrete-event simulation of its task graph.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cli/bench_collective.h"
#include "cli/execute_command.h"
#include "cli/import_command.h"
#include "cli/plan_command.h"
#include "cli/validate_command.h"
#include "scenarios/profile_io.h"
#include "cli/report_output.h"
#include "driver/simulation.h"
#include "common/error.h"
#include "cost_models/device_spec.h"
#include "models/model_spec.h"
#include "sim/chrome_trace.h"
#include "topology/cluster_spec.h"

namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  clustersim simulate SCENARIO.yaml [--json FILE] [--trace FILE] [--trace-ranks LIST] [--trace-window A:B]\n"
    "                     [--html FILE] [--ranks all|representative]\n"
    "                     [--no-baseline] [--fidelity analytic|flow] [--algo A] [--proto P] [--profile F]\n"
    "                     [--no-profile]\n"
    "      predict one optimizer step: step time, tokens/s, speedup over one GPU, MFU,\n"
    "      per-rank compute / communication / exposed / idle time, peak memory and OOM verdict.\n"
    "      --json FILE   write the same report as JSON\n"
    "      --trace FILE  write a Chrome trace-event JSON (open in https://ui.perfetto.dev), streamed;\n"
    "                    gzip-compressed when FILE ends in .gz; flow arrows send->recv and through\n"
    "                    each collective, memory and link-utilisation counters\n"
    "      --trace-ranks LIST  only these cluster ranks in the trace, e.g. 0-7,16\n"
    "      --trace-window A:B  only events overlapping A..B milliseconds into the step (one step is\n"
    "                    simulated, so a time window stands in for a step filter)\n"
    "      --html FILE   a self-contained HTML report (charts inline, no network)\n"
    "      --ranks MODE  all: simulate every GPU; representative: one rank per pipeline stage\n"
    "                    (replicas are identical; default above 64 GPUs)\n"
    "      --no-baseline skip the single-GPU twin (speedup); skipped anyway above 16 GPUs\n"
    "      --fidelity F  network model: analytic (each collective alone, closed form; default) or\n"
    "                    flow (collectives and transfers share links max-min fairly)\n"
    "      --algo A      force NCCL's algorithm where it applies (ring, tree, nvls, hierarchical)\n"
    "      --proto P     force NCCL's protocol (LL, LL128, Simple); both override the scenario's network:\n"
    "      --profile F   a calibrated profile (clustersim calibrate) instead of datasheet figures\n"
    "      --no-profile  datasheet figures even where the GPU has a shipped profile; by default a\n"
    "                    scenario without a profile uses profiles/<gpu>.yaml when it exists (folder:\n"
    "                    $CLUSTERSIM_PROFILES, else the source tree's profiles/)\n"
    "      When the layout does not fit, memory-saving alternatives are simulated and listed.\n"
    "  clustersim bench-collective [--cluster PRESET] [--nodes N] [--gpus N] [--op OP] [--min SIZE]\n"
    "                     [--max SIZE] [--factor F] [--algo A] [--proto P] [--fidelity analytic|flow|both]\n"
    "      nccl-tests-style size / time / algbw / busbw table of one collective, both fidelity levels\n"
    "      (clustersim bench-collective --help for details)\n"
    "  clustersim plan --model M --cluster C --gpus N --global-batch B --seq S [--top K] [--json F]\n"
    "                  [--csv F] [--objective throughput|memory] [--explain]   (or: plan SCENARIO.yaml)\n"
    "      rank every layout that fits (clustersim plan --help for details)\n"
    "  clustersim sweep SCENARIO.yaml --gpus 1,2,4,8 [--csv F] [--plot F.svg]   (or --nodes, --batch,\n"
    "                  --seq, --bandwidth): speedup, efficiency, step-time split and memory per point\n"
    "  clustersim execute SCENARIO.yaml [--backend cpu] [--warmup W] [--steps N] [--trace F] [--json F]\n"
    "      run the same task graph with real kernels and collectives, report the measured step\n"
    "  clustersim validate --suite validate/suites [--no-profile] [--rows] [--markdown]\n"
    "      predict every published table of the suite (each source: rows run, MAPE, median, worst,\n"
    "      bias, rows not expressible and why); exit status 1 when a source is beyond its bound\n"
    "  clustersim validate --table FILE [--seed N] [--csv F]\n"
    "      predict a published table of measured iterations; fit a few global factors on half,\n"
    "      report the error on the other half (MAPE, median, worst, by parallelism)\n"
    "  clustersim calibrate --from-table FILE\n"
    "      fit those factors on every row and print them with units\n"
    "  clustersim import hf|megatron|deepspeed ...   (clustersim import --help for details)\n"
    "      a scenario (or model block) from a Hugging Face config, Megatron-LM arguments or a DeepSpeed config\n"
    "  clustersim list\n"
    "      list the model, cluster and device presets\n";

std::ofstream open_out(const std::string& path) {
  std::ofstream f(path);
  if (!f) throw cs::UserError("cannot write '" + path + "'");
  return f;
}

int cmd_simulate(const std::vector<std::string>& args) {
  std::string scenario_path, json_path, trace_path, html_path, fidelity, algo, proto, profile;
  bool no_profile = false;
  cs::sim::TraceOptions trace;
  cs::driver::SimulateOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw cs::UserError("option " + a + " needs a value");
      return args[++i];
    };
    if (a == "--json") json_path = value();
    else if (a == "--trace") trace_path = value();
    else if (a == "--trace-ranks") trace.ranks = cs::sim::parse_rank_ranges(value());
    else if (a == "--trace-window") trace.window = cs::sim::parse_time_window(value());
    else if (a == "--html") html_path = value();
    else if (a == "--no-baseline") options.with_baseline = false;
    else if (a == "--fidelity") fidelity = value();
    else if (a == "--algo") algo = value();
    else if (a == "--proto") proto = value();
    else if (a == "--profile") profile = value();
    else if (a == "--no-profile") no_profile = true;
    else if (a == "--ranks") {
      const std::string mode = value();
      if (mode == "all") options.ranks = cs::driver::RankMode::all;
      else if (mode == "representative") options.ranks = cs::driver::RankMode::representative;
      else throw cs::UserError("--ranks '" + mode + "': valid values are all, representative");
    } else if (!a.empty() && a[0] == '-') {
      throw cs::UserError("unknown option '" + a + "' for simulate; valid: --json FILE, --trace FILE, --trace-ranks LIST, --trace-window A:B, --html FILE, --ranks all|representative, --no-baseline, "
                          "--fidelity analytic|flow, --algo A, --proto P, --profile F, --no-profile");
    }
    else if (scenario_path.empty()) scenario_path = a;
    else throw cs::UserError("simulate takes one scenario file, got a second: '" + a + "'");
  }
  if (scenario_path.empty()) throw cs::UserError("simulate needs a scenario file\n" + std::string(kUsage));
  auto scenario = cs::scenario::load_scenario(scenario_path);
  if (!profile.empty() && no_profile) throw cs::UserError("give --profile F or --no-profile, not both");
  if (!profile.empty()) scenario.profile = cs::scenario::load_profile(profile);
  if (no_profile) scenario.profile.reset();
  else cs::driver::apply_default_profile(scenario);
  if (!fidelity.empty()) {
    if (fidelity == "flow") scenario.fidelity = cs::cost::NetworkFidelity::flow;
    else if (fidelity == "analytic") scenario.fidelity = cs::cost::NetworkFidelity::analytic;
    else throw cs::UserError("--fidelity '" + fidelity + "': valid values are analytic, flow");
  }
  if (!algo.empty() && algo != "auto") {
    scenario.collectives.algorithm = cs::cost::parse_algorithm(algo);
    if (!scenario.collectives.algorithm) throw cs::UserError("--algo '" + algo + "': valid values are auto, ring, tree, nvls, hierarchical");
  }
  if (!proto.empty() && proto != "auto") {
    scenario.collectives.protocol = cs::cost::parse_protocol(proto);
    if (!scenario.collectives.protocol) throw cs::UserError("--proto '" + proto + "': valid values are auto, LL, LL128, Simple");
  }
  if ((!trace.ranks.empty() || trace.window) && trace_path.empty()) throw cs::UserError("--trace-ranks and --trace-window need --trace FILE");
  const cs::driver::Platform platform(scenario);
  const auto result = cs::driver::simulate(scenario, options, &platform);
  cs::cli::print_report(std::cout, result, &platform);
  if (!json_path.empty()) {
    auto f = open_out(json_path);
    cs::cli::write_report_json(f, result);
  }
  if (!trace_path.empty()) {
    trace.costs = &platform.costs();
    trace.links = &platform.links();
    cs::sim::write_chrome_trace_file(trace_path, result.step.graph, result.timeline, trace);
  }
  if (!html_path.empty()) {
    auto f = open_out(html_path);
    cs::cli::write_report_html(f, result, &platform);
  }
  return 0;
}

int cmd_list() {
  std::cout << "models:\n";
  for (const auto& m : cs::model::model_presets()) {
    std::printf("  %-12s %3d layers, hidden %6lld, heads %3d (kv %3d), %8.2fB parameters\n", m.name.c_str(), m.layers,
                static_cast<long long>(m.hidden), m.heads, m.kv_heads, static_cast<double>(cs::model::parameter_count(m)) * 1e-9);
  }
  std::cout << "clusters:\n";
  for (const auto& c : cs::topo::cluster_presets()) std::printf("  %-14s %s\n", c.name.c_str(), c.description.c_str());
  std::cout << "devices:\n";
  for (const auto& d : cs::cost::device_specs()) std::printf("  %-14s %s\n", d.name.c_str(), d.description.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      std::cout << kUsage;
      return args.empty() ? 2 : 0;
    }
    const std::string cmd = args[0];
    args.erase(args.begin());
    if (cmd == "simulate") return cmd_simulate(args);
    if (cmd == "list") return cmd_list();
    if (cmd == "bench-collective") return cs::cli::bench_collective_command(args, std::cout);
    if (cmd == "plan") return cs::cli::plan_command(args, std::cout);
    if (cmd == "sweep") return cs::cli::sweep_command(args, std::cout);
    if (cmd == "execute") return cs::cli::execute_command(args, std::cout, std::cerr);
    if (cmd == "execute-rank") return cs::cli::execute_rank_command(args);
    if (cmd == "validate") return cs::cli::validate_command(args, std::cout);
    if (cmd == "calibrate") return cs::cli::calibrate_command(args, std::cout);
    if (cmd == "import") return cs::cli::import_command(args, std::cout, std::cerr);
    throw cs::UserError("unknown command '" + cmd + "'; valid commands: simulate, plan, sweep, execute, validate, calibrate, import, bench-collective, list");
  } catch (const cs::UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 3;
  }
}
