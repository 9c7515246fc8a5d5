// Host side of the cuda backend, built as the plugin libclustersim_cuda.so (executor/cuda_plugin.h;
// what it does: executor/cuda_backend.h).
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>

#include "executor/cuda/cuda_kernels.h"
#include "executor/cuda_plugin.h"
#include "executor/memory_ledger.h"

namespace cs::exec {
namespace {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check_cuda(cudaError_t e, const std::string& where) {
  if (e != cudaSuccess)
    throw Failure(where + ": CUDA error " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                  ")");
}
void check_blas(cublasStatus_t s, const std::string& where) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Failure(where + ": cuBLASLt " + cublasLtGetStatusName(s) + " (" +
                  cublasLtGetStatusString(s) + ")");
}
void check_nccl(ncclResult_t r, const std::string& where) {
  if (r != ncclSuccess) throw Failure(where + ": NCCL error " + ncclGetErrorString(r));
}

std::string mib(int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

// How a GEMM of a dtype runs: element types of A/B and of C/D, and cuBLASLt's compute type.
// tf32 keeps fp32 storage and asks for the TF32 tensor-core path explicitly (CUBLAS_COMPUTE_32F
// alone would run true fp32 FMA, about 7x slower on H100); fp8 is E4M3 in, bf16 out.
struct GemmTypes {
  cudaDataType_t in, out;
  cublasComputeType_t compute;
  size_t in_size, out_size;
};
GemmTypes gemm_types(ir::DType d) {
  switch (d) {
    case ir::DType::fp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2};
    case ir::DType::fp32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4};
    case ir::DType::tf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
    case ir::DType::fp8:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2};
    default:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2};
  }
}

// Attention as the backend runs it: `items` (batch, head) pairs of S = Q K^T (m x n over k),
// a row softmax of S, O = S V (m x k over n); as many items as the op's FLOPs pay for (the model
// counts 4 m n k per item forward, halved when causal, 2.5x that backward), as the cpu backend.
int64_t attention_items(const ir::ComputeOp& op) {
  const double per_item = (op.causal ? 2.0 : 4.0) * static_cast<double>(op.m) *
                          static_cast<double>(op.n) * static_cast<double>(op.k);
  return per_item > 0 ? std::max<int64_t>(1, std::llround(op.flops.value / per_item)) : 1;
}

size_t stream_floats(const ir::ComputeOp& op) {
  return static_cast<size_t>(std::max<int64_t>(op.bytes.count / 8, 1024));
}

// Scratch caps, so that the kernels' inputs fit beside a large graph's own memory (GPT-2 Large at
// batch 32 peaks near 58 GB of 80): a memory-bound kernel larger than 1 GiB a buffer runs as
// several passes over that GiB (at HBM speed either way: 1 GiB is twenty times the L2), and
// attention runs its (batch, head) items in chunks whose fp32 scores fit 1 GiB.
constexpr size_t kStreamCapFloats = (size_t{1} << 30) / 4;
constexpr size_t kScoresCapBytes =
    size_t{1} << 30;  // = kGemmBufferCap: a chunk's scores are one GEMM product
int64_t attention_chunk(const ir::ComputeOp& op, int64_t items) {
  const auto per_item = static_cast<size_t>(std::max<int64_t>(op.m * op.n, 1)) * 4;
  return std::clamp<int64_t>(static_cast<int64_t>(kScoresCapBytes / per_item), 1, items);
}
// Score rows per pass over one item: all m of them when they fit kScoresCapBytes, else a block of
// rows (a multiple of 64) at a time, so that the softmax never reads past the scores written
// (a 32k sequence's item alone has 4 GiB of fp32 scores).
int64_t attention_rows(const ir::ComputeOp& op) {
  const int64_t fit = static_cast<int64_t>(kScoresCapBytes) / (std::max<int64_t>(op.n, 1) * 4);
  return fit >= op.m ? op.m : std::max<int64_t>(64, fit / 64 * 64);
}

// No GEMM operand or product above 1 GiB: a larger GEMM (GPT-2's lm_head at batch 32 has a
// 3.3 GB logits operand) runs as row and column blocks of the same product, each a GEMM of its
// own, so that the kernels' scratch stays small beside the graph's own memory. Blocks stay
// multiples of 64 rows or columns (aligned and tile-sized), and above 4,096 of them a GEMM
// still runs near its full rate.
constexpr int64_t kGemmBufferCap = int64_t{1} << 30;
struct GemmBlocks {
  int64_t m, n;  // the block's rows and columns (the last block of each may be smaller)
};
GemmBlocks gemm_blocks(int64_t m, int64_t n, int64_t k, int64_t batch, int64_t in_size,
                       int64_t out_size) {
  int64_t mb = m, nb = n;
  auto half = [](int64_t x) { return x <= 64 ? x : ((x + 1) / 2 + 63) / 64 * 64; };
  for (int guard = 0; guard < 64; ++guard) {
    const int64_t a = mb * k * batch * in_size, b = k * nb * batch * in_size,
                  c = mb * nb * batch * out_size;
    if (a <= kGemmBufferCap && b <= kGemmBufferCap && c <= kGemmBufferCap) break;
    const bool shrink_m =
        a > kGemmBufferCap || (c > kGemmBufferCap && b <= kGemmBufferCap && mb >= nb);
    const int64_t before = shrink_m ? mb : nb;
    (shrink_m ? mb : nb) = half(before);
    if ((shrink_m ? mb : nb) == before) break;  // at 64: as small as blocks go
  }
  return {mb, nb};
}

struct GemmKey {
  int64_t m, n, k, batch;
  ir::DType dtype;
  auto operator<=>(const GemmKey&) const = default;
};

struct GemmPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

// One GPU's state and its host thread's work.
class Device {
 public:
  Device(const ir::TaskGraph& g, int rank, int device, const CudaOptions& o)
      : g_(g), rank_(rank), device_(device), o_(o) {}
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ~Device() {
    // Everything is released so that a process running several graphs (calibration suites, the
    // gpu tests) starts each from an empty pool: its high-water mark is the next run's peak.
    // Errors are ignored here: after a kernel fault the context is gone and nothing can be freed.
    cudaSetDevice(device_);
    if (!failed_) cudaDeviceSynchronize();
    ledger_.for_each_block([](const Block& b) { cudaFree(b.ptr); });
    for (auto& s : scratch_) cudaFree(s.first);
    if (own_adam_state_) cudaFree(own_adam_state_);
    if (workspace_) cudaFree(workspace_);
    for (auto& [key, p] : plans_) {
      cublasLtMatrixLayoutDestroy(p.a);
      cublasLtMatrixLayoutDestroy(p.b);
      cublasLtMatrixLayoutDestroy(p.c);
      cublasLtMatmulDescDestroy(p.desc);
    }
    if (lt_) cublasLtDestroy(lt_);
    for (cudaEvent_t e : start_)
      if (e) cudaEventDestroy(e);
    for (cudaEvent_t e : end_)
      if (e) cudaEventDestroy(e);
    if (step_start_) cudaEventDestroy(step_start_);
    for (auto& [g, c] : group_comms_) failed_ ? ncclCommAbort(c) : ncclCommDestroy(c);
    for (auto& [p, c] : pair_comms_) failed_ ? ncclCommAbort(c) : ncclCommDestroy(c);
    for (cudaStream_t s : streams_)
      if (s) cudaStreamDestroy(s);
    if (pool_) cudaMemPoolTrimTo(pool_, 0);
  }

  void mark_failed() { failed_ = true; }

  // `world`: the communicator of every graph rank, or null when the graph has no collective or
  // transfer.
  void setup(ncclComm_t world) {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
    streams_.resize(g_.stream_names().size(), nullptr);
    for (auto& s : streams_)
      check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    check_blas(cublasLtCreate(&lt_), "cublasLtCreate");
    check_cuda(cudaMalloc(&workspace_, kWorkspace), "cudaMalloc(cuBLASLt workspace)");
    check_cuda(cudaDeviceGetDefaultMemPool(&pool_, device_), "cudaDeviceGetDefaultMemPool");
    uint64_t keep = UINT64_MAX;  // keep freed memory in the pool: steps reuse it
    check_cuda(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep),
               "cudaMemPoolSetAttribute");
    split_communicators(world);
    order_ = issue_order();
    prepare_kernels();
    start_.resize(g_.size(), nullptr);
    end_.resize(g_.size(), nullptr);
    for (ir::TaskId t : order_) {
      check_cuda(cudaEventCreate(&start_[t]), "cudaEventCreate");
      check_cuda(cudaEventCreate(&end_[t]), "cudaEventCreate");
    }
    check_cuda(cudaEventCreate(&step_start_), "cudaEventCreate");
    check_cuda(cudaDeviceSynchronize(), "setup");
  }

  // Issues one step and waits for it; returns its duration (ms) from the step-start event.
  float step(bool measured) {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    if (measured) {
      uint64_t zero = 0;  // the only value this attribute may be set to: "from now on"
      check_cuda(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero),
                 "reset pool high-water mark");
    }
    check_cuda(cudaEventRecord(step_start_, streams_[0]), "cudaEventRecord");
    for (size_t s = 1; s < streams_.size(); ++s)
      check_cuda(cudaStreamWaitEvent(streams_[s], step_start_, 0), "cudaStreamWaitEvent");
    for (ir::TaskId t : order_) issue(t);
    wait_for_step();
    float last = 0;
    for (ir::TaskId t : order_) {
      float a = 0, b = 0;
      check_cuda(cudaEventElapsedTime(&a, step_start_, start_[t]), "cudaEventElapsedTime");
      check_cuda(cudaEventElapsedTime(&b, step_start_, end_[t]), "cudaEventElapsedTime");
      times_[t] = {a, b};
      last = std::max(last, b);
    }
    end_step();
    return last;
  }

  const std::map<ir::TaskId, std::pair<float, float>>& times() const { return times_; }
  int64_t pool_peak() {
    uint64_t v = 0;
    check_cuda(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &v),
               "cudaMemPoolGetAttribute");
    return static_cast<int64_t>(v);
  }
  const std::array<int64_t, ir::kMemoryCategoryCount>& at_peak() const { return ledger_.at_peak(); }
  int64_t scratch_bytes() const {
    int64_t total = 0;
    for (const auto& s : scratch_) total += static_cast<int64_t>(s.second);
    return total;
  }
  void abort() {
    for (auto& [g, c] : group_comms_) ncclCommAbort(c);
    for (auto& [p, c] : pair_comms_) ncclCommAbort(c);
    group_comms_.clear();
    pair_comms_.clear();
    failed_ = true;
  }

 private:
  // cuBLASLt workspace: 32 MiB, NVIDIA's recommendation for Hopper (cuBLAS docs,
  // "cublasSetWorkspace").
  static constexpr size_t kWorkspace = 32u << 20;

  std::string describe(ir::TaskId t) const {
    return "task '" + g_.task_name(t) + "' (" + std::string(ir::to_string(g_.task(t).kind)) +
           ") on rank " + std::to_string(rank_) + ", stream " +
           g_.stream_names()[g_.task(t).stream];
  }

  bool mine(ir::TaskId t) const { return g_.task(t).rank == static_cast<ir::RankId>(rank_); }

  // Every group and transfer pair gets its own communicator, split from the world in one order on
  // every rank (non-members pass NCCL_SPLIT_NOCOLOR and get none).
  void split_communicators(ncclComm_t world) {
    std::map<ir::GroupId, bool> groups;
    std::map<std::pair<ir::RankId, ir::RankId>, bool> pairs;
    for (ir::TaskId t = 0; t < g_.size(); ++t) {
      const auto& task = g_.task(t);
      if (task.kind == ir::TaskKind::collective) groups[g_.collective(task).group] = true;
      if (task.kind == ir::TaskKind::send)
        pairs[{g_.transfer(task).src, g_.transfer(task).dst}] = true;
    }
    if (groups.empty() && pairs.empty()) return;
    if (!world)
      throw Failure("rank " + std::to_string(rank_) +
                    ": the graph has collectives but no NCCL communicator was made");
    int color = 0;
    for (const auto& [group, unused] : groups) {
      const auto& members = g_.group_ranks(group);
      const auto it = std::find(members.begin(), members.end(), static_cast<ir::RankId>(rank_));
      ncclComm_t c = nullptr;
      check_nccl(ncclCommSplit(world, it == members.end() ? NCCL_SPLIT_NOCOLOR : color,
                               static_cast<int>(it - members.begin()), &c, nullptr),
                 "ncclCommSplit(group " + std::to_string(group) + ")");
      if (c) group_comms_[group] = c;
      ++color;
    }
    for (const auto& [pair, unused] : pairs) {
      const int key = pair.first == static_cast<ir::RankId>(rank_) ? 0 : 1;
      const bool member = pair.first == static_cast<ir::RankId>(rank_) ||
                          pair.second == static_cast<ir::RankId>(rank_);
      ncclComm_t c = nullptr;
      check_nccl(ncclCommSplit(world, member ? color : NCCL_SPLIT_NOCOLOR, key, &c, nullptr),
                 "ncclCommSplit(p2p)");
      if (c) pair_comms_[pair] = c;
      ++color;
    }
  }

  // A topological order of this rank's tasks (stream order + explicit dependencies), lowest
  // task id first among the ready ones, so every rank issues its groups' calls in graph order.
  std::vector<ir::TaskId> issue_order() {
    std::vector<ir::TaskId> own;
    std::map<ir::TaskId, std::vector<ir::TaskId>> next;
    std::map<ir::TaskId, int> indegree;
    std::vector<ir::TaskId> last(streams_.size(), UINT32_MAX);
    for (ir::TaskId t = 0; t < g_.size(); ++t) {
      if (!mine(t)) continue;
      own.push_back(t);
      indegree[t] += 0;
      ir::TaskId& prev = last[g_.task(t).stream];
      if (prev != UINT32_MAX) {
        next[prev].push_back(t);
        ++indegree[t];
      }
      prev = t;
    }
    for (const auto& [before, after] : g_.dependencies()) {
      if (!mine(after)) continue;
      // Ranks meet only in collectives and transfers; an event of another GPU's stream cannot be
      // waited on here.
      if (!mine(before))
        throw Failure(describe(after) + " depends on task '" + g_.task_name(before) +
                      "' of another rank");
      next[before].push_back(after);
      ++indegree[after];
      if (g_.task(before).stream != g_.task(after).stream) cross_.emplace(after, before);
    }
    std::priority_queue<ir::TaskId, std::vector<ir::TaskId>, std::greater<>> ready;
    for (ir::TaskId t : own) {
      if (indegree[t] == 0) ready.push(t);
    }
    std::vector<ir::TaskId> order;
    while (!ready.empty()) {
      const ir::TaskId t = ready.top();
      ready.pop();
      order.push_back(t);
      for (ir::TaskId n : next[t]) {
        if (--indegree[n] == 0) ready.push(n);
      }
    }
    if (order.size() != own.size())
      throw Failure("rank " + std::to_string(rank_) + ": the task graph has a dependency cycle");
    return order;
  }

  // Before the first step: the scratch each kernel reads and writes (sized for the largest task,
  // allocated once and filled with a non-zero pattern: GEMMs on zeros draw less power and run
  // faster than on data) and a cuBLASLt plan per GEMM shape. Nothing is allocated, freed or
  // planned while a step runs: cudaFree would synchronise the device in the middle of it.
  void prepare_kernels() {
    std::array<size_t, 4> need{};
    auto at_least = [&](int which, size_t bytes) {
      need[static_cast<size_t>(which)] = std::max(need[static_cast<size_t>(which)], bytes);
    };
    auto gemm_needs = [&](int64_t m, int64_t n, int64_t k, int64_t batch, ir::DType d,
                          size_t c_size) {
      const GemmTypes ty = gemm_types(d);
      const size_t out = std::max(c_size, ty.out_size);
      const GemmBlocks blk =
          gemm_blocks(m, n, k, batch, static_cast<int64_t>(ty.in_size), static_cast<int64_t>(out));
      at_least(0, static_cast<size_t>(blk.m * k * batch) * ty.in_size);
      at_least(1, static_cast<size_t>(k * blk.n * batch) * ty.in_size);
      at_least(2, static_cast<size_t>(blk.m * blk.n * batch) * out);
      for (int64_t rows : {blk.m, m % blk.m}) {
        for (int64_t cols : {blk.n, n % blk.n}) {
          if (rows > 0 && cols > 0) plan(rows, cols, k, batch, d);
        }
      }
    };
    for (ir::TaskId t : order_) {
      const ir::Task& task = g_.task(t);
      if (task.kind == ir::TaskKind::compute) {
        const ir::ComputeOp& op = g_.compute(task);
        switch (op.op) {
          case ir::OpClass::gemm:
            gemm_needs(op.m, op.n, op.k, std::max<int64_t>(op.batch, 1), op.dtype, 0);
            break;
          case ir::OpClass::attention: {
            const int64_t items = attention_items(op), chunk = attention_chunk(op, items),
                          rows = attention_rows(op);
            for (int64_t c : {chunk, items % chunk}) {
              if (c == 0) continue;
              for (int64_t r : {rows, op.m % rows}) {
                if (r == 0) continue;
                gemm_needs(r, op.n, op.k, c, op.dtype, 4);  // the softmax reads the scores as fp32
                gemm_needs(r, op.k, op.n, c, op.dtype, 4);
              }
            }
            break;
          }
          case ir::OpClass::optimizer:
            break;
          default:
            at_least(0, std::min(stream_floats(op), kStreamCapFloats) * 4);
            at_least(3, std::min(stream_floats(op), kStreamCapFloats) * 4);
            break;
        }
      } else if (task.kind == ir::TaskKind::collective) {
        const ir::CollectiveCall& call = g_.collective(task);
        const size_t n = g_.group_ranks(call.group).size();
        const size_t count =
            std::max<size_t>(static_cast<size_t>(std::max<int64_t>(call.bytes.count / 4, 1)) / n,
                             1) *
            n;
        at_least(0, count * 4);
        at_least(3, count * 4);
      } else if (task.kind == ir::TaskKind::send || task.kind == ir::TaskKind::recv) {
        const size_t count =
            static_cast<size_t>(std::max<int64_t>(g_.transfer(task).bytes.count / 4, 1));
        at_least(task.kind == ir::TaskKind::send ? 0 : 3, count * 4);
      }
    }
    for (size_t i = 0; i < need.size(); ++i) {
      if (need[i] == 0) continue;
      const size_t bytes = (need[i] + 255) / 256 * 256;
      check_cuda(cudaMalloc(&scratch_[i].first, bytes),
                 "cudaMalloc(scratch of " + mib(static_cast<int64_t>(bytes)) + ")");
      scratch_[i].second = bytes;
      check_cuda(static_cast<cudaError_t>(cuda::launch_fill(static_cast<float*>(scratch_[i].first),
                                                            bytes / 4, 0.01f, streams_[0])),
                 "fill scratch");
    }
  }

  float* scratch(int which, size_t bytes) {
    auto& b = scratch_[static_cast<size_t>(which)];
    if (b.second < bytes)
      throw Failure("scratch buffer " + std::to_string(which) + " of " +
                    mib(static_cast<int64_t>(b.second)) + " is smaller than the " +
                    mib(static_cast<int64_t>(bytes)) +
                    " a task needs (internal error: prepare_kernels missed it)");
    return static_cast<float*>(b.first);
  }

  const GemmPlan& plan(int64_t m, int64_t n, int64_t k, int64_t batch, ir::DType dtype) {
    const GemmKey key{m, n, k, batch, dtype};
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
    const std::string what = "GEMM " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                             std::to_string(k) + " (batch " + std::to_string(batch) + ", " +
                             std::string(ir::to_string(dtype)) + ")";
    const GemmTypes ty = gemm_types(dtype);
    GemmPlan p;
    check_blas(cublasLtMatmulDescCreate(&p.desc, ty.compute, CUDA_R_32F),
               what + ": cublasLtMatmulDescCreate");
    const auto um = static_cast<uint64_t>(m), un = static_cast<uint64_t>(n),
               uk = static_cast<uint64_t>(k);
    if (dtype == ir::DType::fp8) {
      // FP8 GEMMs take A transposed ("TN"): A stored k x m, B k x n, both leading dimension k.
      const cublasOperation_t transpose = CUBLAS_OP_T;
      check_blas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                                sizeof transpose),
                 what + ": transa");
      check_blas(cublasLtMatrixLayoutCreate(&p.a, ty.in, uk, um, k), what + ": layout A");
    } else {
      check_blas(cublasLtMatrixLayoutCreate(&p.a, ty.in, um, uk, m), what + ": layout A");
    }
    check_blas(cublasLtMatrixLayoutCreate(&p.b, ty.in, uk, un, k), what + ": layout B");
    check_blas(cublasLtMatrixLayoutCreate(&p.c, ty.out, um, un, m), what + ": layout C");
    if (batch > 1) {
      const auto count = static_cast<int32_t>(batch);
      const int64_t sa = m * k, sb = k * n, sc = m * n;
      for (auto [layout, stride] : {std::pair{p.a, sa}, std::pair{p.b, sb}, std::pair{p.c, sc}}) {
        check_blas(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                    &count, sizeof count),
                   what + ": batch count");
        check_blas(cublasLtMatrixLayoutSetAttribute(
                       layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
                   what + ": batch stride");
      }
    }
    cublasLtMatmulPreference_t pref = nullptr;
    check_blas(cublasLtMatmulPreferenceCreate(&pref), what + ": cublasLtMatmulPreferenceCreate");
    const size_t ws = kWorkspace;
    check_blas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws, sizeof ws),
               what + ": workspace preference");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(lt_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      cublasLtMatrixLayoutDestroy(p.a);
      cublasLtMatrixLayoutDestroy(p.b);
      cublasLtMatrixLayoutDestroy(p.c);
      cublasLtMatmulDescDestroy(p.desc);
      throw Failure(
          "cuBLASLt has no algorithm for the " + what +
          (st != CUBLAS_STATUS_SUCCESS ? std::string(": ") + cublasLtGetStatusName(st)
                                       : std::string()) +
          (dtype == ir::DType::fp8
               ? " (FP8 needs compute capability 8.9 or later and m, n, k multiples of 16)"
               : ""));
    }
    p.algo = result.algo;
    return plans_.emplace(key, p).first->second;
  }

  void issue(ir::TaskId t) {
    const ir::Task& task = g_.task(t);
    cudaStream_t s = streams_[task.stream];
    auto [lo, hi] = cross_.equal_range(t);
    for (auto it = lo; it != hi; ++it)
      check_cuda(cudaStreamWaitEvent(s, end_[it->second], 0),
                 describe(t) + ": cudaStreamWaitEvent");
    try {
      if (task.kind == ir::TaskKind::compute) {
        const ir::ComputeOp& op = g_.compute(task);
        if (op.op == ir::OpClass::gemm || op.op == ir::OpClass::attention) fill_inputs(op.dtype, s);
      }
      check_cuda(cudaEventRecord(start_[t], s), "cudaEventRecord");
      switch (task.kind) {
        case ir::TaskKind::compute:
          compute(t, g_.compute(task), s);
          break;
        case ir::TaskKind::memory:
          memory(t, g_.memory(task), s);
          break;
        case ir::TaskKind::delay:
          check_cuda(static_cast<cudaError_t>(cuda::launch_sleep(g_.delay(task).ps / 1000, s)),
                     "sleep kernel");
          break;
        case ir::TaskKind::collective:
          collective(t, s);
          break;
        case ir::TaskKind::send:
        case ir::TaskKind::recv:
          transfer(t, s);
          break;
      }
      check_cuda(cudaEventRecord(end_[t], s), "cudaEventRecord");
    } catch (const Failure& e) {
      // A kernel fault is sticky: the next CUDA or cuBLASLt call of any task reports it, so a
      // failure while issuing is first checked against the device's state.
      // (A query, not a synchronisation: that could wait on a collective whose peer never comes.)
      const cudaError_t sticky = cudaStreamQuery(s);
      if (sticky != cudaSuccess && sticky != cudaErrorNotReady) throw kernel_fault(sticky, t, true);
      const std::string what = e.what();
      throw Failure(what.rfind("task '", 0) == 0 ? what : describe(t) + ": " + what);
    }
  }

  // The failure for a device-side fault `e` first seen at task `seen`: blamed on the injected
  // task when there is one, else on `seen` "or one before it".
  Failure kernel_fault(cudaError_t e, ir::TaskId seen, bool while_issuing) {
    failed_ = true;
    const std::string err =
        std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    if (injected_ != UINT32_MAX)
      return Failure(describe(injected_) + ": kernel failed (injected failure): " + err);
    return Failure(describe(seen) + ": " + err +
                   (while_issuing ? " reported while issuing this task (the failing kernel is one "
                                    "issued before it on this rank)"
                                  : " by the end of this task (the failing kernel is this task or "
                                    "one issued before it on this rank)"));
  }

  // GEMM and attention inputs hold random values of the dtype about to read them (refilled, before
  // the task's start event, when the dtype changes: only calibration mixes dtypes).
  void fill_inputs(ir::DType d, cudaStream_t s) {
    if (inputs_filled_ && inputs_dtype_ == d) return;
    const int element = d == ir::DType::bf16   ? 1
                        : d == ir::DType::fp16 ? 2
                        : d == ir::DType::fp8  ? 3
                                               : 0;
    for (int which : {0, 1}) {
      auto& b = scratch_[static_cast<size_t>(which)];
      if (b.first)
        check_cuda(
            static_cast<cudaError_t>(cuda::launch_fill_random(b.first, b.second, element, s)),
            "fill GEMM inputs");
    }
    inputs_filled_ = true;
    inputs_dtype_ = d;
  }

  void compute(ir::TaskId t, const ir::ComputeOp& op, cudaStream_t s) {
    if (!o_.faults.failing_task.empty() && g_.task_name(t) == o_.faults.failing_task &&
        (o_.faults.failing_rank < 0 || o_.faults.failing_rank == rank_)) {
      injected_ = t;
      check_cuda(static_cast<cudaError_t>(cuda::launch_failing_kernel(s)), "launch");
      return;
    }
    switch (op.op) {
      case ir::OpClass::gemm:
        gemm(op.m, op.n, op.k, std::max<int64_t>(op.batch, 1), op.dtype, s);
        break;
      case ir::OpClass::attention: {
        // S = Q K^T, softmax(S), O = S V: `chunk` items at a time, and, for an item whose scores
        // exceed kScoresCapBytes (chunk 1), `rows` rows of it at a time.
        const int64_t items = attention_items(op), chunk = attention_chunk(op, items),
                      rows = attention_rows(op);
        for (int64_t done = 0; done < items; done += chunk) {
          const int64_t c = std::min(chunk, items - done);
          for (int64_t first = 0; first < op.m; first += rows) {
            const int64_t r = std::min(rows, op.m - first);
            gemm(r, op.n, op.k, c, op.dtype, s, 4);
            check_cuda(static_cast<cudaError_t>(cuda::launch_row_softmax(
                           scratch(2, static_cast<size_t>(c * r * op.n) * 4), c * r, op.n,
                           op.causal, first, s)),
                       "softmax");
            gemm(r, op.k, op.n, c, op.dtype, s, 4);
          }
        }
        break;
      }
      case ir::OpClass::optimizer:
        adamw(s);
        break;
      default: {
        // In passes of at most kStreamCapFloats over the same scratch.
        const size_t n = stream_floats(op);
        for (size_t done = 0; done < n; done += kStreamCapFloats) {
          const size_t part =
              std::max<size_t>(std::min(kStreamCapFloats, n - done) / 1024 * 1024, 1024);
          float* x = scratch(0, part * 4);
          float* y = scratch(3, part * 4);
          const auto rows = static_cast<int64_t>(part / 1024);
          cudaError_t e = cudaSuccess;
          if (op.op == ir::OpClass::norm)
            e = static_cast<cudaError_t>(cuda::launch_layer_norm(y, x, rows, 1024, s));
          else if (op.op == ir::OpClass::softmax || op.op == ir::OpClass::cross_entropy)
            e = static_cast<cudaError_t>(cuda::launch_row_softmax(y, rows, 1024, false, 0, s));
          else
            e = static_cast<cudaError_t>(cuda::launch_streaming(y, x, part, s));
          check_cuda(e, std::string(ir::to_string(op.op)) + " kernel");
        }
        break;
      }
    }
  }

  // C[m,n] = A[m,k] B[k,n], column-major, `batch` strided products, FP32 accumulation.
  // Above kGemmBufferCap, as blocks of rows and columns (gemm_blocks) over the same scratch.
  void gemm(int64_t m, int64_t n, int64_t k, int64_t batch, ir::DType dtype, cudaStream_t s,
            size_t c_size = 0) {
    const GemmTypes ty = gemm_types(dtype);
    const GemmBlocks blk = gemm_blocks(m, n, k, batch, static_cast<int64_t>(ty.in_size),
                                       static_cast<int64_t>(std::max(c_size, ty.out_size)));
    const float alpha = 1.0f, beta = 0.0f;
    void* c = scratch(2, 0);
    for (int64_t row = 0; row < m; row += blk.m) {
      for (int64_t col = 0; col < n; col += blk.n) {
        const GemmPlan& p =
            plan(std::min(blk.m, m - row), std::min(blk.n, n - col), k, batch, dtype);
        check_blas(cublasLtMatmul(lt_, p.desc, &alpha, scratch(0, 0), p.a, scratch(1, 0), p.b,
                                  &beta, c, p.c, c, p.c, &p.algo, workspace_, kWorkspace, s),
                   "cublasLtMatmul");
      }
    }
  }

  // AdamW over each parameter block with its gradient block; the moments m and v live in the
  // graph's optimizer-state memory (8 bytes a parameter in fp32 and amp; more with master
  // weights), or, where the graph's state is smaller (a ZeRO shard), in a buffer of our own.
  void adamw(cudaStream_t s) {
    ++adam_step_;
    const auto& params = ledger_.live(ir::MemoryCategory::parameters);
    const auto& grads = ledger_.live(ir::MemoryCategory::gradients);
    const auto& state = ledger_.live(ir::MemoryCategory::optimizer_state);
    size_t total = 0;
    for (const Block& p : params) total += static_cast<size_t>(p.bytes / 4);
    float* moments = nullptr;
    if (!state.empty() && static_cast<size_t>(state[0].bytes) >= 8 * total) {
      moments = static_cast<float*>(state[0].ptr);
    } else {
      if (own_adam_floats_ < 2 * total) {
        if (own_adam_state_) check_cuda(cudaFree(own_adam_state_), "cudaFree(AdamW moments)");
        check_cuda(cudaMalloc(&own_adam_state_, std::max<size_t>(2 * total, 1) * 4),
                   "cudaMalloc(AdamW moments)");
        check_cuda(cudaMemsetAsync(own_adam_state_, 0, std::max<size_t>(2 * total, 1) * 4, s),
                   "cudaMemsetAsync(AdamW moments)");
        own_adam_floats_ = 2 * total;
      }
      moments = static_cast<float*>(own_adam_state_);
    }
    if (adam_step_ == 1)
      check_cuda(cudaMemsetAsync(moments, 0, 2 * total * 4, s), "cudaMemsetAsync(AdamW moments)");
    size_t at = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const size_t n = static_cast<size_t>(params[i].bytes / 4);
      const float* g = i < grads.size() && grads[i].bytes >= params[i].bytes
                           ? static_cast<const float*>(grads[i].ptr)
                           : nullptr;
      if (!g)
        g = scratch_[1].second >= n * 4
                ? scratch(1, n * 4)
                : static_cast<const float*>(
                      params[i].ptr);  // no gradient of its size: read something as large
      check_cuda(static_cast<cudaError_t>(cuda::launch_adamw(static_cast<float*>(params[i].ptr), g,
                                                             moments + at, moments + total + at, n,
                                                             adam_step_, s)),
                 "adamw");
      at += n;
    }
  }

  // Memory tasks: real allocations from the stream-ordered pool, counted by the ledger both
  // backends share (executor/memory_ledger.h).
  void memory(ir::TaskId t, const ir::MemoryOp& m, cudaStream_t s) {
    if (m.delta <= 0) {
      ledger_.free(m.category, -m.delta,
                   [&](Block& b) { check_cuda(cudaFreeAsync(b.ptr, s), "cudaFreeAsync"); });
      return;
    }
    if (ledger_.take_back(m.category, m.delta)) return;
    if (ledger_.beyond(o_.faults.memory_limit, m.delta))
      out_of_memory(t, m, "over the " + mib(o_.faults.memory_limit) + " limit");
    void* p = nullptr;
    const cudaError_t e = cudaMallocAsync(&p, static_cast<size_t>(m.delta), s);
    if (e != cudaSuccess) {
      cudaGetLastError();  // an allocation failure is not sticky: clear it and say what was alive
      size_t free = 0, total = 0;
      cudaMemGetInfo(&free, &total);
      out_of_memory(t, m,
                    std::string(cudaGetErrorString(e)) + "; the GPU has " +
                        mib(static_cast<int64_t>(free)) + " free of " +
                        mib(static_cast<int64_t>(total)) + ", " + mib(scratch_bytes()) +
                        " of it taken by this backend's kernel scratch");
    }
    if (m.category == ir::MemoryCategory::parameters) {
      check_cuda(static_cast<cudaError_t>(cuda::launch_fill(
                     static_cast<float*>(p), static_cast<size_t>(m.delta / 4), 0.01f, s)),
                 "fill");
    }
    ledger_.add(m.category, {p, m.delta});
  }

  [[noreturn]] void out_of_memory(ir::TaskId t, const ir::MemoryOp& m, const std::string& why) {
    throw Failure(describe(t) + ": out of memory: asked for " + mib(m.delta) + " (" +
                  std::string(ir::to_string(m.category)) + ") with " + mib(ledger_.current()) +
                  " alive (" + ledger_.alive_text(mib) + "): " + why);
  }

  void end_step() { ledger_.end_step(); }

  void collective(ir::TaskId t, cudaStream_t s) {
    const ir::CollectiveCall& call = g_.collective(g_.task(t));
    if (!o_.faults.skipped_collective.empty() && g_.task_name(t) == o_.faults.skipped_collective &&
        o_.faults.skipping_rank == rank_)
      return;
    const auto it = group_comms_.find(call.group);
    if (it == group_comms_.end())
      throw Failure("no communicator for group " + std::to_string(call.group));
    ncclComm_t comm = it->second;
    const size_t n = g_.group_ranks(call.group).size();
    size_t count = static_cast<size_t>(std::max<int64_t>(call.bytes.count / 4, 1));
    count = std::max<size_t>(count / n, 1) * n;
    float* in = scratch(0, count * 4);
    float* out = scratch(3, count * 4);
    switch (call.type) {
      case ir::CollectiveType::all_reduce:
        check_nccl(ncclAllReduce(in, out, count, ncclFloat, ncclSum, comm, s), "ncclAllReduce");
        break;
      case ir::CollectiveType::all_gather:
        check_nccl(ncclAllGather(in, out, count / n, ncclFloat, comm, s), "ncclAllGather");
        break;
      case ir::CollectiveType::reduce_scatter:
        check_nccl(ncclReduceScatter(in, out, count / n, ncclFloat, ncclSum, comm, s),
                   "ncclReduceScatter");
        break;
      case ir::CollectiveType::broadcast:
        check_nccl(ncclBroadcast(in, out, count, ncclFloat, 0, comm, s), "ncclBroadcast");
        break;
      case ir::CollectiveType::all_to_all: {
        const size_t per = count / n;
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        for (size_t p = 0; p < n; ++p) {
          check_nccl(ncclSend(in + p * per, per, ncclFloat, static_cast<int>(p), comm, s),
                     "ncclSend");
          check_nccl(ncclRecv(out + p * per, per, ncclFloat, static_cast<int>(p), comm, s),
                     "ncclRecv");
        }
        check_nccl(ncclGroupEnd(), "ncclGroupEnd");
        break;
      }
    }
  }

  void transfer(ir::TaskId t, cudaStream_t s) {
    const ir::Task& task = g_.task(t);
    const ir::Transfer& x = g_.transfer(task);
    const auto it = pair_comms_.find({x.src, x.dst});
    if (it == pair_comms_.end())
      throw Failure("no communicator for transfers from rank " + std::to_string(x.src) + " to " +
                    std::to_string(x.dst));
    const size_t count = static_cast<size_t>(std::max<int64_t>(x.bytes.count / 4, 1));
    if (task.kind == ir::TaskKind::send)
      check_nccl(ncclSend(scratch(0, count * 4), count, ncclFloat, 1, it->second, s), "ncclSend");
    else
      check_nccl(ncclRecv(scratch(3, count * 4), count, ncclFloat, 0, it->second, s), "ncclRecv");
  }

  // Waits for the step's last events; past the timeout, names the first task that has not
  // finished (a hung collective or transfer) and aborts the communicators. A kernel fault is
  // sticky (every later query reports it), so it is blamed on the injected task when there is
  // one, and otherwise on the first unfinished task "or one before it".
  void wait_for_step() {
    const auto deadline = std::chrono::steady_clock::now() + o_.timeout;
    for (ir::TaskId t : order_) {
      for (;;) {
        const cudaError_t e = cudaEventQuery(end_[t]);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) throw kernel_fault(e, t, false);
        if (std::chrono::steady_clock::now() > deadline) {
          abort();
          throw Failure(describe(t) + ": did not finish within " +
                        std::to_string(o_.timeout.count() / 1000) +
                        " s; a collective or transfer is waiting for a peer that never arrives "
                        "(communicators aborted)");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }

  struct Block {
    void* ptr;
    int64_t bytes;
  };
  const ir::TaskGraph& g_;
  int rank_, device_;
  const CudaOptions& o_;
  std::vector<cudaStream_t> streams_;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  std::map<ir::GroupId, ncclComm_t> group_comms_;
  std::map<std::pair<ir::RankId, ir::RankId>, ncclComm_t> pair_comms_;
  std::map<GemmKey, GemmPlan> plans_;
  std::vector<ir::TaskId> order_;
  std::multimap<ir::TaskId, ir::TaskId> cross_;  // task -> explicit predecessor on another stream
  std::vector<cudaEvent_t> start_, end_;
  cudaEvent_t step_start_ = nullptr;
  std::map<ir::TaskId, std::pair<float, float>> times_;
  std::array<std::pair<void*, size_t>, 4> scratch_{};
  MemoryLedger<Block> ledger_;
  void* own_adam_state_ = nullptr;
  size_t own_adam_floats_ = 0;
  int adam_step_ = 0;
  ir::TaskId injected_ = UINT32_MAX;
  bool failed_ = false;
  bool inputs_filled_ = false;
  ir::DType inputs_dtype_ = ir::DType::fp32;
};

bool needs_nccl(const ir::TaskGraph& g) {
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const auto k = g.task(t).kind;
    if (k == ir::TaskKind::collective || k == ir::TaskKind::send || k == ir::TaskKind::recv)
      return true;
  }
  return false;
}

std::string version_text(int v, int major_div, int minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string(v % major_div / minor_div);
}

std::string environment_line(int device) {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device);
  int driver = 0, runtime = 0, nccl = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  ncclGetVersion(&nccl);
  const size_t lt = cublasLtGetVersion();
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " +
         std::to_string(static_cast<long long>(prop.totalGlobalMem >> 20)) + " MiB), driver API " +
         version_text(driver, 1000, 10) + ", CUDA runtime " + version_text(runtime, 1000, 10) +
         ", cuBLASLt " + std::to_string(lt / 10000) + "." + std::to_string(lt % 10000 / 100) + "." +
         std::to_string(lt % 100) + ", NCCL " + std::to_string(nccl / 10000) + "." +
         std::to_string(nccl % 10000 / 100) + "." + std::to_string(nccl % 100);
}

// The devices' threads: runs `work(r)` for every local device at once; collects every failure.
template <class Work>
void on_all(std::vector<std::unique_ptr<Device>>& devs, Work&& work) {
  std::vector<std::string> errors(devs.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < devs.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        work(r);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        devs[r]->mark_failed();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::string all;
  for (size_t r = 0; r < devs.size(); ++r) {
    if (!errors[r].empty()) all += errors[r] + "\n";
  }
  if (!all.empty()) {
    for (auto& d : devs) d->mark_failed();
    all.pop_back();
    throw ExecutionError(all);
  }
}

// World communicators that are destroyed (or, after a failure, aborted) however the run ends.
struct WorldComms {
  std::vector<ncclComm_t> comms;
  bool failed = false;
  ~WorldComms() {
    for (ncclComm_t c : comms) {
      if (c) failed ? ncclCommAbort(c) : ncclCommDestroy(c);
    }
  }
};

// The plugin's functions (cuda_plugin.h): cuda_backend.h's, which the program's loader forwards.
int device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device on this machine";
  return n;
}

std::string environment(std::string* why) {
  if (device_count(why) == 0) return "";
  return environment_line(0);
}

bool has_fp8() {
  std::string why;
  if (device_count(&why) == 0) return false;
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  return major * 10 + minor >= 89;
}

Measured run(const ir::TaskGraph& graph, const CudaOptions& o) {
  std::string why;
  const int devices = device_count(&why);
  const int world = static_cast<int>(graph.ranks());
  if (devices < world) {
    throw ExecutionError(
        "the cuda backend needs " + std::to_string(world) +
        " GPUs on this machine (one per rank: one GPU cannot host two NCCL ranks), found " +
        std::to_string(devices) + (why.empty() ? "" : ": " + why));
  }
  if (graph.representative())
    throw ExecutionError(
        "the executor needs every rank in the graph (built without representative ranks)");
  WorldComms wc;
  wc.comms.assign(static_cast<size_t>(world), nullptr);
  if (needs_nccl(graph)) {
    std::vector<int> devlist(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) devlist[static_cast<size_t>(r)] = r;
    if (const ncclResult_t res = ncclCommInitAll(wc.comms.data(), world, devlist.data());
        res != ncclSuccess) {
      wc.comms.assign(static_cast<size_t>(world), nullptr);
      throw ExecutionError(std::string("ncclCommInitAll over ") + std::to_string(world) +
                           " GPUs: " + ncclGetErrorString(res));
    }
  }
  std::vector<std::unique_ptr<Device>> devs;
  for (int r = 0; r < world; ++r) devs.push_back(std::make_unique<Device>(graph, r, r, o));
  std::vector<std::vector<float>> step_ms(static_cast<size_t>(world));
  try {
    on_all(devs, [&](size_t r) { devs[r]->setup(wc.comms[r]); });
    for (int step = 0; step < o.warmup + o.steps; ++step) {
      const bool measured = step >= o.warmup;
      on_all(devs, [&](size_t r) {
        const float ms = devs[r]->step(measured);
        if (measured) step_ms[r].push_back(ms);
      });
    }
  } catch (const ExecutionError&) {
    wc.failed = true;
    throw;
  }
  Measured m;
  m.timeline.tasks.assign(graph.size(), sim::TaskTiming{});
  m.timeline.memory.assign(graph.ranks(), sim::RankMemory{});
  int64_t scratch = 0;
  for (int r = 0; r < world; ++r) {
    Device& d = *devs[static_cast<size_t>(r)];
    for (const auto& [t, span] : d.times()) {
      const SimTime a = SimTime::from_seconds(span.first * 1e-3),
                    b = SimTime::from_seconds(span.second * 1e-3);
      m.timeline.tasks[t] = {a, a, b};
      m.timeline.makespan = std::max(m.timeline.makespan, b);
    }
    m.timeline.memory[static_cast<size_t>(r)].peak = d.pool_peak();
    m.timeline.memory[static_cast<size_t>(r)].at_peak = d.at_peak();
    scratch = std::max(scratch, d.scratch_bytes());
  }
  for (size_t i = 0; i < step_ms[0].size(); ++i) {
    float worst = 0;
    for (const auto& v : step_ms) worst = std::max(worst, v[i]);
    m.step_times.push_back(SimTime::from_seconds(worst * 1e-3));
  }
  std::vector<SimTime> sorted = m.step_times;
  std::sort(sorted.begin(), sorted.end());
  m.median_step = sorted.empty() ? SimTime{} : sorted[sorted.size() / 2];
  m.fastest_step = sorted.empty() ? SimTime{} : sorted.front();
  m.device = "cuda: " + std::to_string(world) + " x " + environment_line(0) + "; kernel scratch " +
             mib(scratch) + " per GPU outside the measured pool";
  return m;
}

std::optional<Measured> run_launched(const ir::TaskGraph& graph, const CudaOptions& o,
                                     const CudaLaunch& l) {
  const int world = static_cast<int>(graph.ranks());
  if (world != l.world)
    throw ExecutionError("the graph has " + std::to_string(world) +
                         " ranks but the launcher started " + std::to_string(l.world));
  if (graph.representative())
    throw ExecutionError(
        "the executor needs every rank in the graph (built without representative ranks)");
  const std::string base = l.dir + "/rank" + std::to_string(l.rank);
  std::filesystem::create_directories(l.dir);
  std::filesystem::remove(base + ".result");
  std::filesystem::remove(base + ".error");
  auto fail = [&](const std::string& msg) -> ExecutionError {
    std::ofstream(base + ".error") << msg << "\n";
    return ExecutionError("rank " + std::to_string(l.rank) + ": " + msg);
  };
  std::string why;
  const int devices = device_count(&why);
  if (l.local_rank >= devices) {
    throw fail("local rank " + std::to_string(l.local_rank) + " needs GPU " +
               std::to_string(l.local_rank) + " but this node has " + std::to_string(devices) +
               (why.empty() ? "" : " (" + why + ")") +
               "; start at most one rank per GPU (one GPU cannot host two NCCL ranks)");
  }
  if (cudaSetDevice(l.local_rank) != cudaSuccess)
    throw fail("cudaSetDevice(" + std::to_string(l.local_rank) + ") failed");
  WorldComms wc;
  wc.comms.assign(1, nullptr);
  if (needs_nccl(graph)) {
    // Rank 0 makes the unique id and publishes it atomically (write, then rename); the others poll.
    const std::string id_path = l.dir + "/nccl.id";
    ncclUniqueId id{};
    if (l.rank == 0) {
      if (ncclGetUniqueId(&id) != ncclSuccess) throw fail("ncclGetUniqueId failed");
      {
        std::ofstream f(id_path + ".tmp", std::ios::binary);
        f.write(id.internal, sizeof id.internal);
      }
      std::filesystem::rename(id_path + ".tmp", id_path);
    } else {
      const auto deadline = std::chrono::steady_clock::now() + o.timeout;
      for (;;) {
        std::ifstream f(id_path, std::ios::binary);
        if (f && f.read(id.internal, sizeof id.internal)) break;
        if (std::chrono::steady_clock::now() > deadline)
          throw fail("rank 0 published no NCCL unique id in " + id_path +
                     " (is that directory shared by every node?)");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    if (const ncclResult_t res = ncclCommInitRank(&wc.comms[0], world, id, l.rank);
        res != ncclSuccess) {
      wc.comms[0] = nullptr;
      throw fail(std::string("ncclCommInitRank: ") + ncclGetErrorString(res));
    }
  }
  std::vector<std::unique_ptr<Device>> devs;
  devs.push_back(std::make_unique<Device>(graph, l.rank, l.local_rank, o));
  std::vector<float> step_ms;
  try {
    on_all(devs, [&](size_t) { devs[0]->setup(wc.comms[0]); });
    for (int step = 0; step < o.warmup + o.steps; ++step) {
      on_all(devs, [&](size_t) {
        const float ms = devs[0]->step(step >= o.warmup);
        if (step >= o.warmup) step_ms.push_back(ms);
      });
    }
  } catch (const ExecutionError& e) {
    wc.failed = true;
    throw fail(e.what());
  }
  // The result file of the cpu backend's format (launcher.cpp reads it), with each step's times
  // counted from that step's own start event ("relative").
  {
    Device& d = *devs[0];
    std::ofstream f(base + ".result.tmp");
    f << "relative 1\nsteps " << step_ms.size() << "\nwarmup_end 0\n";
    for (size_t i = 0; i < step_ms.size(); ++i)
      f << "step " << i << " 0 " << static_cast<int64_t>(step_ms[i] * 1e6) << "\n";
    // Only the last step's task times are kept: report them as every measured step's.
    for (size_t i = 0; i < step_ms.size(); ++i) {
      for (const auto& [t, span] : d.times())
        f << "task " << t << " " << i << " " << static_cast<int64_t>(span.first * 1e6) << " "
          << static_cast<int64_t>(span.second * 1e6) << "\n";
    }
    f << "peak " << d.pool_peak() << " 0";
    for (int64_t b : d.at_peak()) f << " " << b;
    f << "\nparams -\ngrads -\ndevice cuda: " << world << " ranks under a launcher, rank 0 on "
      << environment_line(l.local_rank) << "\n";
  }
  std::filesystem::rename(base + ".result.tmp", base + ".result");
  devs.clear();
  if (l.rank != 0) return std::nullopt;
  return collect_launched(graph, l.dir, o.timeout * (o.warmup + o.steps + 2));
}

}  // namespace
}  // namespace cs::exec

// The plugin's one export (its version script hides every other symbol).
extern "C" const void* clustersim_cuda_plugin() {  // const void*: see cpu_rank.cpp's entry
  using namespace cs::exec;
  static const CudaPlugin table{.abi = kCudaPluginAbi,
                                .device_count = device_count,
                                .environment = environment,
                                .has_fp8 = has_fp8,
                                .run = run,
                                .run_launched = run_launched};
  return &table;
}
