// A PyTorch profiler (Kineto) Chrome trace of the user's own run against our prediction
// (`validate --kineto TRACE.json SCENARIO`). The trace's GPU events ("cat": "kernel",
// "gpu_memcpy", "gpu_memset", with "ts" and "dur" in microseconds and "args": {"device",
// "stream"}) are sorted into op classes by kernel name: gemm (gemm, cutlass, xmma, nvjet,
// ampere_/hopper_ cuBLAS kernels), attention (flash, fmha), nccl (NCCL's kernels, by collective),
// and the rest memory-bound (elementwise, norms, softmax, copies). ProfilerStep#N annotations give
// the step; without them the GPU's busy span is one step. Exposed communication is NCCL kernel
// time not under any compute kernel of the same device.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskgraph/task_graph.h"
#include "timeline/timeline.h"

namespace cs::validate {

enum class KernelClass : uint8_t { gemm, attention, memory_bound, nccl };
std::string_view to_string(KernelClass c);
KernelClass classify_kernel(std::string_view name);
// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv" for an
// NCCL kernel's name (ncclDevKernel_AllReduce_Sum_bf16_RING_LL, ncclKernel_AllGather_RING_LL_...),
// "other" for an NCCL kernel of another kind.
std::string nccl_collective(std::string_view name);

struct KinetoKernel {
  int device = 0;
  int64_t stream = 0;
  std::string name;
  double start_us = 0, dur_us = 0;
  KernelClass cls = KernelClass::memory_bound;
  std::string collective;  // NCCL kernels only
};

struct KinetoTrace {
  std::string file;
  std::vector<KinetoKernel> kernels;
  std::vector<double> step_us;  // ProfilerStep#N durations, in trace order
  std::vector<int> devices;     // sorted
  // What the profiler wrote about the run, where it did: deviceProperties[0].name ("NVIDIA H100
  // 80GB HBM3") and distributedInfo's rank and world_size (0: not in the trace).
  std::string gpu_name;
  int rank = -1;
  int world_size = 0;
};

// Throws UserError naming the file, the event (its index in traceEvents and its name) and what
// is valid.
KinetoTrace read_kineto_trace(const std::string& path);
KinetoTrace parse_kineto_trace(const std::string& text, const std::string& name);

// One step's time split, measured or predicted (microseconds).
struct StepBreakdown {
  double step_us = 0;
  int steps = 1;                                // measured: steps the totals were divided by
  std::string step_from;                        // how the step time was taken
  std::map<std::string, double> by_class;       // gemm, attention, memory_bound, nccl
  std::map<std::string, double> by_collective;  // all_reduce, ..., send_recv
  double communication_us = 0, exposed_us = 0;
};

// The trace's kernels on `device`, per step.
StepBreakdown measured_breakdown(const KinetoTrace& trace, int device);
// The simulated step's tasks of graph rank `rank` (compute tasks by op class, collectives and
// point-to-point transfers by kind), its exposed communication the same way as measured.
StepBreakdown predicted_breakdown(const ir::TaskGraph& g, const sim::Timeline& tl, ir::RankId rank,
                                  double step_us);

}  // namespace cs::validate
