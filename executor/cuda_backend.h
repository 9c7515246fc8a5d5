// The cuda backend: the ranks of a graph on GPUs, either every rank on this machine's GPUs, one
// host thread per GPU (graph rank r on device r, communicators from ncclCommInitAll), or one
// rank per process under a cluster launcher (mpirun / srun: device = the launcher's local rank,
// the NCCL unique id shared through a file in the rendezvous directory, ncclCommInitRank).
// Communicators are split per group and per transfer pair; a graph with no collective or
// transfer (one GPU) initialises no NCCL at all. GEMMs through cuBLASLt at the graph's shapes and
// dtypes (bf16 / fp16 in, fp32 accumulate; tf32 as CUBLAS_COMPUTE_32F_FAST_TF32; fp8 as E4M3
// inputs in cuBLASLt's "TN" layout with bf16 output, where the GPU has FP8: sm_89 and up;
// plans chosen once per shape before the first step); attention as batched GEMMs at the op's
// dtype around a softmax kernel (not a fused kernel), as many (batch, head) items as the op's
// FLOPs pay for (backward: 2.5x); layer norm, softmax, AdamW (its moments in the graph's
// optimizer-state memory) and memory-bound streams as CUDA kernels; collectives and send/recv
// through NCCL on the graph's streams; cross-stream dependencies as CUDA events; per-task
// start/end from CUDA events; buffers from the memory tasks through the stream-ordered allocator
// (cudaMallocAsync), whose pool high-water mark is the measured peak. Kernel inputs live in
// scratch buffers sized before the first step (outside the pool: not part of the peak), at most
// 1 GiB per memory-bound buffer (larger kernels run as passes over it) and 2 GiB of attention
// scores (items in chunks).
//
// Limits: one GPU cannot host two NCCL ranks (a 2-rank graph needs 2 GPUs); attention is not
// FlashAttention. Built wherever nvcc is (CI included). It has not yet run on a GPU in this
// project, so its figures are unvalidated; its host logic (plans, scratch sizes, issue order) is
// shared with nothing testable on cpu, and tests/gpu/ (ctest -L gpu) skips without a device.
#pragma once

#include <optional>
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
// GPU 0's name, compute capability, driver, CUDA runtime, cuBLASLt and NCCL versions, one line
// ("" with `why` filled when there is no device).
std::string cuda_environment(std::string* why);
// Whether device 0 runs FP8 GEMMs (compute capability 8.9 and up).
bool cuda_has_fp8();

// Throws ExecutionError naming the task, rank and stream on a CUDA, cuBLAS or NCCL error, an
// allocation that does not fit (with what was alive), or a step that hangs past the timeout.
Measured run_cuda(const ir::TaskGraph& graph, const CudaOptions& options);

// One rank of a job started by a cluster launcher (one process per GPU): rank `rank` of `world`
// on device `local_rank`; rendezvous and result files in `dir` (rank 0 writes the NCCL unique id
// there). Returns the merged run on rank 0, nothing on the other ranks.
struct CudaLaunch {
  int rank = 0, world = 1, local_rank = 0;
  std::string dir;
};
std::optional<Measured> run_cuda_launched(const ir::TaskGraph& graph, const CudaOptions& options,
                                          const CudaLaunch& launch);

}  // namespace cs::exec
