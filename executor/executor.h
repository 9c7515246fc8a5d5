// The executor runs the very TaskGraph the simulator schedules, with real kernels and real
// collectives, and records a measured Timeline in the simulator's schema.
//
// cpu backend (executor/cpu_rank.cpp): one process per rank, each running every stream of its
// rank as a thread (CUDA-stream semantics: in order on a stream, explicit dependencies across
// streams); GEMMs through OpenBLAS (fp32: the CPU has no bf16 GEMM), attention as batched GEMMs
// plus a softmax loop, other op classes as loops over their bytes; collectives and send/recv
// through Gloo over TCP on loopback, one Gloo context per (group, stream); buffers allocated as
// the memory tasks say, through one allocator that records the peak.
//
// Data, so that the run proves something: every rank starts from the same parameters; before
// each all-reduce the graph marks as reducing gradients (CollectiveCall::gradients), a rank adds
// its own values (scaled by rank + 1, on every 64th element) to the next slice of its gradient
// memory, and the all-reduce averages that slice (DDP's buckets tile the gradients once per step);
// the optimizer task applies AdamW. Ranks end bit-identical only if the collectives really reduced.
//
// Ranks are started by `launch` (like torchrun: it re-runs this program once per rank, see
// cli/ `execute-rank`) and report through files in a shared directory; the parent merges them.
// Under a cluster launcher (mpirun, srun: launch_env.h) every process runs one rank itself
// (`run_launched_cpu`), and rank 0 waits for the others' files and merges them the same way.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "taskgraph/task_graph.h"
#include "timeline/timeline.h"

namespace cs::exec {

// Failure injection for testing the error paths.
struct Faults {
  std::string failing_task;        // a compute task with this name fails as a kernel would
  int failing_rank = -1;           // on this rank (-1: every rank)
  int64_t memory_limit = 0;        // bytes; an allocation beyond it fails (0: no limit)
  std::string skipped_collective;  // this rank never joins the collective with this name ...
  int skipping_rank = -1;          // ... on this rank, so its peers wait until the timeout
};

struct RankOptions {
  int rank = 0;     // graph rank
  std::string dir;  // rendezvous and result files
  int warmup = 1, steps = 3;
  std::chrono::milliseconds timeout{30000};  // a collective or transfer waiting longer fails
  Faults faults;
  // Times from a common origin taken right after a barrier of every rank, instead of the
  // machine's monotonic clock (ranks on several nodes do not share a clock). Gloo's TCP device
  // binds to `gloo_host` (127.0.0.1 for ranks on one machine; a name or address the other nodes
  // reach otherwise).
  bool barrier_clock = false;
  std::string gloo_host = "127.0.0.1";
};

// Exit codes of a rank process and of `clustersim execute`.
inline constexpr int kExitExecutionFailed = 5;

// Runs one rank to completion and writes `<dir>/rank<r>.result` (or `.error` with the message,
// returning kExitExecutionFailed). Called in the rank's own process. The rank's code (OpenBLAS,
// Gloo) is the plugin libclustersim_cpu.so, loaded here on first use (cpu_plugin.h); when it
// cannot be loaded, the error file says where it was looked for, what was missing and how to
// install it.
int run_cpu_rank(const ir::TaskGraph& graph, const RankOptions& options);
// Loads that plugin now, as `program` (the program that runs the ranks) will; throws
// ExecutionError with the same message when it cannot be loaded (`launch` calls it before
// starting any rank, so the message comes once, not once per rank).
void require_cpu_backend(const std::string& program);

struct LaunchOptions {
  std::string program;            // this program (argv for each rank is built around it)
  std::vector<std::string> args;  // arguments identifying the scenario, passed to every rank
  int warmup = 1, steps = 3;
  std::chrono::milliseconds timeout{30000};
  Faults faults;
};

struct Measured {
  // One measured step, times from its earliest start: the median one on the cpu backend, the
  // last on cuda.
  sim::Timeline timeline;
  std::vector<SimTime> step_times;  // every measured step: the period, last rank to last rank
  SimTime median_step, fastest_step;
  std::vector<std::string> parameter_hashes;  // per rank, after the last step
  bool gradients_differed = false;  // ranks' gradients differed before reduction (rank 0 vs 1)
  std::string device;               // what ran it ("cpu: 2 processes, OpenBLAS, Gloo TCP")
};

// Ranks `launch` starts as processes on this machine: each holds the whole task graph and, for
// Gloo's full mesh, a socket to every peer per (group, stream) context, so a few contexts at 128
// ranks come near the usual limit of 1,024 open files per process. More ranks are a cluster's job
// (mpirun, srun: launch_env.h).
inline constexpr int kMaxForkedRanks = 128;

// Starts one process per graph rank in a fresh directory, waits (killing them all if one fails or
// the whole run outlives the timeout), merges their results. Throws ExecutionError with every
// failed rank's message, the first to fail first; UserError, before starting any, for more than
// kMaxForkedRanks ranks. The ranks die with the calling thread (PR_SET_PDEATHSIG), so a killed
// parent leaves none behind. The collective timeout counts from the moment every rank has started
// (read its input and built its graph), so a slow start on a loaded machine is not a failure.
Measured launch(const ir::TaskGraph& graph, const LaunchOptions& options);

// One rank of a `launch` (the hidden `execute-rank`): says it is ready, waits until every rank
// is, then runs `run_cpu_rank`.
int run_forked_rank(const ir::TaskGraph& graph, const RankOptions& options);

class ExecutionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Merges the ranks' result files `<dir>/rank<r>.result` into one Measured (what `launch` does
// once its ranks have exited). Throws ExecutionError when a file is missing or inconsistent.
Measured merge_results(const ir::TaskGraph& graph, const std::string& dir);

// One rank of a job started by a cluster launcher: runs rank `options.rank` here, writes its
// result in `options.dir`, and on rank 0 waits (up to the timeout plus twice its own slowest step)
// until every rank has written its result or its error, then merges them. Returns the merged run on
// rank 0 and nothing on the others; throws ExecutionError with every failed rank's message (on rank
// 0, or on the rank that failed).
std::optional<Measured> run_launched_cpu(const ir::TaskGraph& graph, const RankOptions& options);

// Rank 0 of a launched job (either backend): waits until every other rank has written
// `<dir>/rank<r>.result` or `.error`, or `wait` has passed, then merges and removes the files.
Measured collect_launched(const ir::TaskGraph& graph, const std::string& dir,
                          std::chrono::milliseconds wait);

}  // namespace cs::exec
