// `validate --kineto TRACE.json SCENARIO` (cli/kineto_command.cpp): a PyTorch profiler trace of
// the user's run against the scenario's simulated step (validate/kineto.h).
#pragma once

#include <iosfwd>
#include <string>

namespace cs::cli {

struct KinetoOptions {
  std::string trace, scenario, profile;
  bool no_profile = false;
  int device = -1;  // -1: the trace's lowest device; compared with graph rank 0
};

int validate_kineto(const KinetoOptions& o, std::ostream& out);

}  // namespace cs::cli
