// A training run forecast from one step: how long it takes and what it costs (steps, days,
// GPU-hours, dollars, MWh) and its goodput under failures (the checkpoint interval that maximises
// it, Daly 2006, and the wall-clock time with failures). The simulate report shows it in text,
// JSON and HTML (driver/simulation_report.cpp); `plan` can show its summary line for the winner.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "training_run/inputs.h"

namespace cs::training_run {

// What the simulation knows about the step.
struct StepFacts {
  double step_seconds = 0;
  int gpus = 1;
  double tokens_per_step = 0;  // global batch x sequence length
  int64_t parameters = 0;      // of the whole model
  std::string gpu;             // device preset name (defaults are per GPU)
};

// One input as used: its value, and where it came from when it is a default.
struct Input {
  double value = 0;
  bool is_default = true;
  std::string source;  // a default's source; empty when given
};

// Time, GPU-hours, dollars and energy of some wall-clock time on the whole cluster.
struct Cost {
  double seconds = 0;
  double gpu_hours = 0;
  double usd = 0;
  double mwh = 0;
  double days() const { return seconds / 86400; }
};

struct Forecast {
  // Inputs as used (tokens when the run was given in steps: steps x tokens per step).
  Input tokens, usd_per_gpu_hour, watts_per_gpu, pue, failures_per_gpu_hour, checkpoint_bytes,
      checkpoint_bandwidth, restart_seconds;
  bool given_in_steps = false;
  double steps = 0;
  StepFacts step;
  Cost without_failures;
  // Failures: the job's mean time between failures (0: none expected), the checkpoint's write
  // and restore times (at the storage bandwidth; a write stalls training), the interval of work
  // between checkpoints that maximises goodput (0: none needed), the goodput there (useful work
  // over wall-clock time) and the run with failures.
  double mtbf_seconds = 0;
  double checkpoint_write_seconds = 0;
  double restore_seconds = 0;
  double checkpoint_interval_seconds = 0;
  double goodput = 1;
  Cost with_failures;
};

// Throws InputError when neither tokens nor steps can be had (no tokens per step), when the
// tokens take more than 1e9 steps, or when failures come too often for the run ever to finish.
Forecast forecast(const RunInputs& inputs, const StepFacts& step);

// The report's rows (label, text), defaults marked with their sources; text and HTML print them.
std::vector<std::pair<std::string, std::string>> report_rows(const Forecast& f);
// One line with failures, e.g. "54.7 days (50.6 days without failures, goodput 92.61%),
// 21,501,918 GPU-hours, $264M, 30,156 MWh for 8.12T tokens".
std::string summary_line(const Forecast& f);
// The report's "training_run" object (docs/schemas/report.schema.json).
nlohmann::json to_json(const Forecast& f);

}  // namespace cs::training_run
