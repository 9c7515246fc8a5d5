#include "strategies/memory_reserve.h"

#include <cmath>

namespace cs::strategy {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// The CUDA context with the runtime's and PyTorch's state, before any tensor: an assumption of
// 512 MiB, not measured here. A process that touches the GPU once has been reported at 723 MiB in
// nvidia-smi (discuss.pytorch.org/t/73021, before CUDA's lazy module loading); CUDA 11.7+ loads
// only the kernels a process uses (CUDA_MODULE_LOADING=LAZY, the default of PyTorch's CUDA 12
// builds), which brings it down to a few hundred MiB.
constexpr int64_t kCudaContext = 512 * kMiB;

// cuBLAS workspaces. PyTorch gives each (handle, stream) pair a workspace of 32 MiB on Hopper and
// Blackwell (aten/src/ATen/cuda/CublasHandlePool.cpp, getChosenWorkspaceSize: ":4096:8", 4096 *
// 8 * 1024 bytes); one stream runs the GEMMs here. Transformer Engine keeps its own cuBLASLt
// workspace of 32 MiB on sm_90+ (transformer_engine/pytorch get_cublas_workspace_size_bytes:
// 33,554,432); its grouped-GEMM streams' extra workspaces are not counted.
constexpr int64_t kCublasWorkspace = 32 * kMiB;

// NCCL's buffers for one communicator on one GPU: each channel's connection from its ring
// predecessor holds one buffer per protocol (src/init.cc: DEFAULT_BUFFSIZE 4 MiB for Simple;
// DEFAULT_LL128_BUFFSIZE = NCCL_LL128_ELEMS_PER_THREAD 120 x NCCL_LL128_MAX_NTHREADS 640 x
// NCCL_STEPS 8 x 8 B = 4,915,200 B; DEFAULT_LL_BUFFSIZE = NCCL_LL_LINES_PER_THREAD 8 x
// NCCL_LL_MAX_NTHREADS 512 x NCCL_STEPS 8 x 16 B = 524,288 B): 9,633,792 B per channel, on 24
// channels (NCCL's ring channels on 8x H100: cost_models/nccl_comm_shape.h), 220.5 MiB. Tree,
// NVLS and peer-to-peer connections are not counted (NCCL connects them when an algorithm first
// needs them), nor fewer channels across nodes.
constexpr int64_t kNcclBuffersPerChannel =
    (int64_t{1} << 22) + 120 * 640 * 8 * 8 + 8 * 512 * 8 * 16;
constexpr int64_t kNcclRingChannels = 24;
constexpr int64_t kNcclCommunicator = kNcclBuffersPerChannel * kNcclRingChannels;

// The PyTorch caching allocator's fragmentation: its peak reserved over its peak allocated, less
// one. Measured on one H100 and one H200 (validate/measurements/torch_h100_202611 and
// torch_h200_202611, torch.cuda.max_memory_reserved / max_memory_allocated): 0.8% to 17.1% over
// 22 dense eager and compiled rows (the largest at batch 1, where little is allocated), median
// 4.4%; taken as 4.4% of the tensors' peak. FSDP2's rows reach 21-37% (blocks recorded on its
// communication streams), most of it cached blocks the allocator frees and retries before it
// reports out-of-memory: not counted.
constexpr double kFragmentation = 0.044;

// Communicators a rank uses: one per parallel dimension that spans more than one rank (the
// gradient group counts data and context parallelism together, the context ring its own).
int communicators(const Layout& l) {
  int n = 0;
  for (int size : {l.dp * l.cp, l.tp, l.pp, l.cp, l.ep}) n += size > 1 ? 1 : 0;
  return n;
}

}  // namespace

int64_t MemoryReserve::beside(int64_t allocated) const {
  return fixed + std::llround(static_cast<double>(allocated) * fragmentation);
}

MemoryReserve memory_reserve(const Layout& l, const TrainingSpec& t) {
  if (t.stack == model::Stack::ideal) return {};
  const int64_t cublas =
      kCublasWorkspace *
      (t.stack == model::Stack::megatron_core ? 2 : 1);  // + Transformer Engine's
  return {kCudaContext + cublas + communicators(l) * kNcclCommunicator, kFragmentation};
}

void add_memory_reserve(std::vector<sim::RankMemory>& ranks, const MemoryReserve& r) {
  constexpr auto kReserve = static_cast<size_t>(ir::MemoryCategory::reserve);
  for (sim::RankMemory& m : ranks) {
    const int64_t bytes = r.beside(m.peak);
    if (bytes == 0) continue;
    m.peak += bytes;
    m.at_peak[kReserve] += bytes;
    m.current[kReserve] += bytes;
  }
}

}  // namespace cs::strategy
