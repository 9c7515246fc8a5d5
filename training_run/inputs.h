// The inputs of a training run's time, cost and goodput: each optional (absent: the default of
// defaults.h, which the report says it used). One table (input_keys) names every input's scenario
// key (`run:` block), its simulate flag, its help and how its text reads, so that the YAML reader
// and the command line check values alike and cannot drift.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cs::training_run {

struct RunInputs {
  std::optional<double> tokens;  // tokens to train; or
  std::optional<double> steps;   // optimizer steps to train (tokens = steps x tokens per step)
  std::optional<double> usd_per_gpu_hour;
  std::optional<double> watts_per_gpu;  // at the wall: the GPU's board power and its node's share
  std::optional<double> pue;            // the data centre's power usage effectiveness
  std::optional<double> failures_per_gpu_hour;  // interruptions that stop the job
  std::optional<double> checkpoint_bytes;       // what one checkpoint writes, all ranks together
  std::optional<double> checkpoint_bandwidth;   // bytes/s to and from storage, all ranks together
  std::optional<double> restart_seconds;        // rescheduling and start-up after a failure

  // `later`'s inputs where it has them (flags over the scenario's block); tokens and steps
  // replace each other.
  void override_with(const RunInputs& later);
};

// A value outside what an input accepts; the message says what is valid, the caller adds where.
class InputError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct InputKey {
  const char* key;   // in the scenario's `run:` block
  const char* flag;  // of simulate
  const char* type;  // shown in --help
  const char* help;
  void (*read)(RunInputs&, const std::string&);  // throws InputError
};
const std::vector<InputKey>& input_keys();

// "15T", "2.5e12", "300B" (K, M, B or G, T: 1e3 ... 1e12), as a count; throws InputError.
double parse_count(const std::string& text);

}  // namespace cs::training_run
