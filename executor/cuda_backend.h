// The cuda backend: every rank of a graph on this machine's GPUs, one host thread per GPU (graph
// rank r on device r), communicators from ncclCommInitAll split per group. GEMMs through
// cuBLASLt at the graph's shapes and dtypes; attention as batched GEMMs plus a softmax kernel
// (not a fused kernel: FP32/TF32 GEMMs for scores and output); layer norm, softmax, AdamW and
// memory-bound streams as CUDA kernels; collectives and send/recv through NCCL on the graph's
// streams; cross-stream dependencies as CUDA events; per-task start/end from CUDA events;
// buffers from the memory tasks through the stream-ordered allocator (cudaMallocAsync), whose
// pool high-water mark is the measured peak.
//
// Built wherever nvcc is (CI included); it has not yet run on a GPU in this project (no device
// has been lent), so its figures are unvalidated. Multi-node (one process per GPU under a
// launcher) is not built.
#pragma once

#include <string>

#include "executor/executor.h"

namespace cs::exec {

struct CudaOptions {
  int warmup = 1, steps = 3;
  std::chrono::milliseconds timeout{60000};  // a step that takes longer is aborted as hung
  Faults faults;
};

// Whether this build has the cuda backend at all.
bool cuda_backend_built();
// Visible devices; 0 with `why` filled when there are none (no driver, no GPU, not built).
int cuda_device_count(std::string* why);
// Throws ExecutionError naming the task, rank and stream on a CUDA, cuBLAS or NCCL error, an
// allocation that does not fit (with what was alive), or a step that hangs past the timeout.
Measured run_cuda(const ir::TaskGraph& graph, const CudaOptions& options);

}  // namespace cs::exec
