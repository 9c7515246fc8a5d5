// `clustersim simulate`: one scenario simulated, the report printed and written in the formats
// asked for; and the profile flags simulate, plan, sweep and the kineto comparison share.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "driver/simulation.h"
#include "sim/chrome_trace.h"

namespace cs::workflows {

// --profile F / --no-profile: F, or datasheet figures, or by default the GPU's shipped profile
// (driver::apply_default_profile), so that every command prices a layout alike.
void apply_profile_flags(scenario::Scenario& s, const std::string& profile, bool no_profile);

struct SimulateRequest {
  std::string scenario_file;
  std::string json, trace, html, profile, emit_megatron, chakra;  // output paths (empty: none)
  std::optional<cost::NetworkFidelity> fidelity;                  // overrides the scenario's
  // Outer optional: the flag was given; inner: nullopt is "auto" (NCCL's own choice).
  std::optional<std::optional<cost::Algorithm>> algo;
  std::optional<std::optional<cost::Protocol>> proto;
  bool no_profile = false;
  std::vector<scenario::KeyOverride> overrides;  // --set KEY=VALUE, applied to the file
  bool stragglers = false;                       // --stragglers (workflows/stragglers.h)
  std::string stragglers_json;                   // its JSON (implies stragglers)
  sim::TraceOptions trace_options;
  driver::SimulateOptions options;
  training_run::RunInputs run;  // --tokens, --usd-per-gpu-hour, ...: over the scenario's `run:`
  std::string generator;        // who wrote the Chakra traces (the version line)
};

// Prints the report on `out` and writes every file the request names; throws UserError on bad
// input.
void simulate(SimulateRequest request, std::ostream& out);

}  // namespace cs::workflows
