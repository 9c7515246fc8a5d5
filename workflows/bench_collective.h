// `clustersim bench-collective`: nccl-tests' size / time / algbw / busbw table of one collective
// over the first N GPUs of a cluster, predicted.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "common/units.h"
#include "cost_models/collective_model.h"
#include "taskgraph/task_graph.h"

namespace cs::workflows {

// What bench-collective was asked (cli/bench_collective.cpp reads and checks the flags).
struct BenchCollectiveRequest {
  std::string cluster = "dgx_h100";
  std::string scenario;          // the cluster (and network: settings) from a scenario file instead
  int nodes = 0;                 // 0: enough for `gpus`
  int gpus = 0;                  // 0: every GPU of the cluster
  int64_t max_cluster_gpus = 0;  // the largest cluster a command builds (cli/flags.h)
  ir::CollectiveType op = ir::CollectiveType::all_reduce;
  Bytes min{1 << 20}, max{int64_t{1} << 30};
  double factor = 2;
  cost::CollectiveOptions collectives{std::nullopt, std::nullopt, true};
  bool analytic = true, flow = true;  // the fidelities timed (nccl-tests format: one of them)
  bool nccl_tests_format = false, tuning_table = false;
  std::string type = "float";  // nccl-tests' -d, for the count column
  int type_size = 4;
  std::string redop = "sum";
  std::string gpus_flag = "--gpus";  // the name `gpus` was given by (-g, --ngpus), for refusals
};

// Prints the table on `out`; the exit status (bad input throws UserError).
int bench_collective(BenchCollectiveRequest request, std::ostream& out);

}  // namespace cs::workflows
