// `validate --nccl-tests` and `calibrate --nccl-tests` (workflows/nccl_tests.cpp): the options
// they read, gathered by cli/validate_command.cpp's parser.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "cost_models/cost_model.h"
#include "taskgraph/task_graph.h"

namespace cs::workflows {

struct NcclTestsOptions {
  std::vector<std::string> logs;                 // --nccl-tests LOG...
  std::optional<ir::CollectiveType> collective;  // --collective: overrides the binary's name
  std::string cluster;      // --cluster: default from the GPU's name in the Rank lines
  std::string profile;      // validate: predict with its measured line; calibrate: the base
  std::string out;          // calibrate: where the profile goes
  int gpus = 0, nodes = 0;  // for logs without Rank lines
  cost::NetworkFidelity fidelity = cost::NetworkFidelity::analytic;
  double max_error = -1;  // validate: exit 1 when a log's MAPE is beyond it
  std::string
      json;  // validate: every log's comparison as JSON (validate.schema.json, mode nccl_tests)
};

// Each returns the exit status; bad input throws UserError.
int validate_nccl_tests(const NcclTestsOptions& o, std::ostream& out);
int calibrate_nccl_tests(const NcclTestsOptions& o, std::ostream& out);

}  // namespace cs::workflows
