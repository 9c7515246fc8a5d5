// A step's task graph as Chakra execution traces (MLCommons Chakra, the format ASTRA-sim reads):
// `simulate --chakra DIR` writes DIR/<prefix>.<rank>.et for every rank and DIR/comm_group.json.
//
// Each file is a GlobalMetadata message followed by one Node per task of that rank, each message
// preceded by its length as a varint (protobuf's delimited encoding, as Chakra's own tools write
// and read). The schema is the subset in interop/chakra/et_def.proto, with Chakra's field numbers.
// What a task becomes:
//   compute    COMP_NODE, duration_micros = the cost model's time for the kernel alone, attrs
//              num_ops (FLOPs, int64) and tensor_size (HBM bytes, uint64) as ASTRA-sim reads them,
//              op_class and dtype (strings)
//   collective COMM_COLL_NODE, comm_type (Chakra's CollectiveCommType, int64), comm_size (int64:
//              nccl-tests' size, as clustersim's graph counts it: the all-reduce buffer, the
//              all-gather output, the reduce-scatter input, the all-to-all buffer per rank) and
//              pg_name, the key of its group in comm_group.json (ASTRA-sim's
//              --comm-group-configuration: {"<pg_name>": [ranks]})
//   send/recv  COMM_SEND_NODE / COMM_RECV_NODE with comm_src, comm_dst, comm_tag (int32; the tag is
//              the transfer's id, so each send meets its recv) and comm_size
//   memory     COMP_NODE of zero duration with memory_delta (bytes, int64) and memory_category:
//              allocations and frees are bookkeeping, not kernels
//   delay      COMP_NODE lasting the delay
// Every node carries is_cpu_op = false. Dependencies: the graph's own (same rank) and each
// stream's order, all as data_deps (Chakra has no streams: without them, tasks of one stream
// would run concurrently). start_time_micros is the simulated start. Durations and starts are
// rounded to whole microseconds, the schema's unit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/units.h"
#include "taskgraph/task_graph.h"

namespace cs::interop {

struct ChakraInput {
  const ir::TaskGraph* graph = nullptr;  // a full graph (every rank), finalized
  std::function<SimTime(const ir::ComputeOp&)> compute_time;  // the kernel alone
  std::function<SimTime(ir::TaskId)> start_time;              // simulated start; empty: 0
  std::string generator;  // e.g. "clustersim 0.1.0 (commit ...)"
};

struct ChakraSummary {
  int files = 0;
  int64_t nodes = 0, dependencies = 0;
  int64_t compute = 0, collectives = 0, sends = 0, recvs = 0, memory = 0, delays = 0;
  int groups = 0;
  int64_t bytes = 0;  // written, all files together
  int64_t cross_rank_dependencies =
      0;  // graph dependencies between ranks, not expressible (see below)
};

// Writes the traces into `dir` (created if missing). A representative graph is refused (ASTRA-sim
// needs every rank: simulate with --ranks all); so is a graph with dependencies across ranks that
// are not transfers, which a Chakra trace cannot express. Throws UserError.
ChakraSummary write_chakra_traces(const ChakraInput& in, const std::string& dir,
                                  const std::string& prefix = "clustersim");

// What a trace file holds, read back (tests, and users checking a file): the metadata's version
// and each node's id, name, type (Chakra's NodeType number), data dependencies, duration and the
// integer attributes by name.
struct ChakraNode {
  uint64_t id = 0;
  std::string name;
  int type = 0;
  std::vector<uint64_t> data_deps;
  uint64_t duration_micros = 0, start_time_micros = 0;
  std::vector<std::pair<std::string, int64_t>> int_attrs;  // int32, int64, uint64 and bool values
  std::vector<std::pair<std::string, std::string>> string_attrs;
  int64_t attr(const std::string& name, int64_t missing = -1) const;
  std::string text_attr(const std::string& name) const;
};
struct ChakraTrace {
  std::string version;
  std::vector<ChakraNode> nodes;
};
ChakraTrace read_chakra_trace(const std::string& path);

// Chakra's NodeType numbers.
inline constexpr int kChakraCompNode = 4, kChakraSendNode = 5, kChakraRecvNode = 6,
                     kChakraCollNode = 7;
// Chakra's CollectiveCommType number for a collective.
int chakra_comm_type(ir::CollectiveType t);

}  // namespace cs::interop
