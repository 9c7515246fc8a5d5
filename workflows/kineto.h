// `validate --kineto TRACE.json SCENARIO` and `calibrate --kineto TRACE.json SCENARIO --out P.yaml`
// (workflows/kineto.cpp): a PyTorch profiler trace of the user's run against the scenario's
// simulated step (validate/kineto.h), and a profile fitted to it (validate/kineto_calibration.h).
#pragma once

#include <iosfwd>
#include <string>

namespace cs::workflows {

struct KinetoOptions {
  std::string trace, scenario, profile;
  bool no_profile = false;
  int device = -1;  // -1: the trace's lowest device; compared with graph rank 0
  std::string
      json;  // validate: the comparison as JSON (docs/schemas/validate.schema.json, mode kineto)
  std::string out;  // calibrate: where the fitted profile goes
};

int validate_kineto(const KinetoOptions& o, std::ostream& out);
int calibrate_kineto(const KinetoOptions& o, std::ostream& out);

}  // namespace cs::workflows
