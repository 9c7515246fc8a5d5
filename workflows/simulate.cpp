#include "workflows/simulate.h"

#include <cstdio>
#include <fstream>
#include <ostream>

#include "common/error.h"
#include "common/output_file.h"
#include "driver/simulation_report.h"
#include "interop/chakra/chakra_trace.h"
#include "interop/launch_writers.h"
#include "scenarios/profile_io.h"
#include "scenarios/scenario_writers.h"
#include "sim/perfetto_trace.h"
#include "workflows/stragglers.h"

namespace cs::workflows {
namespace {

// `simulate --chakra DIR`: the simulated step's graph as Chakra traces, and a line saying what was
// written.
void write_chakra(std::ostream& out, const std::string& dir, const driver::SimulationResult& result,
                  const driver::Platform& platform, const std::string& generator) {
  interop::ChakraInput in;
  in.graph = &result.step.graph;
  in.compute_time = [&](const ir::ComputeOp& op) { return platform.costs().compute(op); };
  in.start_time = [&](ir::TaskId t) { return result.timeline.tasks[t].start; };
  in.generator = generator;
  const interop::ChakraSummary s = interop::write_chakra_traces(in, dir);
  char line[320];
  std::snprintf(line, sizeof line,
                "chakra      %d trace%s in %s (clustersim.<rank>.et, %.1f MB): %lld nodes (%lld "
                "compute, %lld collective, %lld send, %lld recv, "
                "%lld memory), %lld dependencies; %d communicator group%s in comm_group.json\n",
                s.files, s.files == 1 ? "" : "s", dir.c_str(), static_cast<double>(s.bytes) * 1e-6,
                static_cast<long long>(s.nodes), static_cast<long long>(s.compute),
                static_cast<long long>(s.collectives), static_cast<long long>(s.sends),
                static_cast<long long>(s.recvs), static_cast<long long>(s.memory),
                static_cast<long long>(s.dependencies), s.groups, s.groups == 1 ? "" : "s");
  out << line;
}

// The scenario file with the request's profile and network overrides.
scenario::Scenario requested_scenario(const SimulateRequest& a) {
  auto scenario = scenario::load_scenario(a.scenario_file, a.overrides);
  apply_profile_flags(scenario, a.profile, a.no_profile);
  if (a.fidelity) scenario.fidelity = *a.fidelity;
  if (a.algo && *a.algo) scenario.collectives.algorithm = *a.algo;
  if (a.proto && *a.proto) scenario.collectives.protocol = *a.proto;
  scenario.run.override_with(a.run);
  return scenario;
}

}  // namespace

void apply_profile_flags(scenario::Scenario& s, const std::string& profile, bool no_profile) {
  if (!profile.empty() && no_profile) throw UserError("give --profile F or --no-profile, not both");
  if (!profile.empty()) s.profile = scenario::load_profile(profile);
  if (no_profile) {
    s.profile.reset();
  } else {
    driver::apply_default_profile(s);
  }
}

void simulate(SimulateRequest a, std::ostream& out) {
  const scenario::Scenario scenario = requested_scenario(a);
  sim::TraceOptions& trace = a.trace_options;
  if ((!trace.ranks.empty() || trace.window) && a.trace.empty())
    throw UserError("--trace-ranks and --trace-window need --trace FILE");
  const driver::Platform platform(scenario);
  // Chakra needs every rank's tasks (ASTRA-sim simulates each rank from its own file).
  if (!a.chakra.empty()) a.options.ranks = driver::RankMode::all;
  const auto result = driver::simulate(scenario, a.options, &platform);
  driver::print_report(out, result, &platform);
  if (!a.json.empty()) {
    OutputFile file(a.json);
    std::ostream& f = file.stream();
    driver::write_report_json(f, result);
    file.commit();
  }
  if (!a.trace.empty()) {
    trace.costs = &platform.costs();
    trace.links = &platform.links();
    sim::write_trace_file(a.trace, result.step.graph, result.timeline, trace);
  }
  if (!a.html.empty()) {
    OutputFile file(a.html);
    std::ostream& f = file.stream();
    driver::write_report_html(f, result, &platform);
    file.commit();
  }
  if (!a.emit_megatron.empty()) {
    write_output_file(a.emit_megatron, [&](std::ostream& f) {
      f << interop::megatron_launch_script(scenario::launch_target(scenario));
    });
  }
  if (!a.chakra.empty()) write_chakra(out, a.chakra, result, platform, a.generator);
  if (a.stragglers || !a.stragglers_json.empty()) {
    const StragglerReport stragglers =
        analyse_stragglers(scenario, result.report.step_time, a.options);
    out << "\n";
    print_stragglers(out, stragglers);
    if (!a.stragglers_json.empty()) {
      write_output_file(a.stragglers_json,
                        [&](std::ostream& f) { write_stragglers_json(f, stragglers); });
    }
  }
}

}  // namespace cs::workflows
