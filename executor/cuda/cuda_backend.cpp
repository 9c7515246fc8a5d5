// Host side of the cuda backend (see executor/cuda_backend.h).
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <queue>
#include <thread>

#include "executor/cuda/cuda_kernels.h"
#include "executor/cuda_backend.h"

namespace cs::exec {
namespace {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check_cuda(cudaError_t e, const std::string& where) {
  if (e != cudaSuccess) throw Failure(where + ": CUDA error " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
void check_blas(cublasStatus_t s, const std::string& where) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Failure(where + ": cuBLASLt status " + std::to_string(static_cast<int>(s)));
}
void check_nccl(ncclResult_t r, const std::string& where) {
  if (r != ncclSuccess) throw Failure(where + ": NCCL error " + ncclGetErrorString(r));
}

std::string mib(int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

cudaDataType_t cuda_type(ir::DType d) {
  switch (d) {
    case ir::DType::fp16: return CUDA_R_16F;
    case ir::DType::fp32:
    case ir::DType::tf32: return CUDA_R_32F;
    default: return CUDA_R_16BF;  // bf16, and fp8 run as bf16 (no FP8 scaling set up)
  }
}
size_t type_size(ir::DType d) { return cuda_type(d) == CUDA_R_32F ? 4 : 2; }

// One GPU's state and its host thread's work.
class Device {
 public:
  Device(const ir::TaskGraph& g, int rank, const CudaOptions& o) : g_(g), rank_(rank), o_(o) {}

  void setup(ncclComm_t world) {
    check_cuda(cudaSetDevice(rank_), "cudaSetDevice");
    streams_.resize(g_.stream_names().size());
    for (auto& s : streams_) check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    check_blas(cublasLtCreate(&lt_), "cublasLtCreate");
    check_cuda(cudaMalloc(&workspace_, kWorkspace), "cudaMalloc(workspace)");
    check_cuda(cudaDeviceGetDefaultMemPool(&pool_, rank_), "cudaDeviceGetDefaultMemPool");
    uint64_t keep = UINT64_MAX;  // keep freed memory in the pool: steps reuse it
    check_cuda(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
    // Every group and transfer pair gets its own communicator, split from the world in one order
    // on every rank (non-members pass NCCL_SPLIT_NOCOLOR).
    std::map<ir::GroupId, bool> groups;
    std::map<std::pair<ir::RankId, ir::RankId>, bool> pairs;
    for (ir::TaskId t = 0; t < g_.size(); ++t) {
      const auto& task = g_.task(t);
      if (task.kind == ir::TaskKind::collective) groups[g_.collective(task).group] = true;
      if (task.kind == ir::TaskKind::send) pairs[{g_.transfer(task).src, g_.transfer(task).dst}] = true;
    }
    int color = 0;
    for (const auto& [group, unused] : groups) {
      const auto& members = g_.group_ranks(group);
      const auto it = std::find(members.begin(), members.end(), static_cast<ir::RankId>(rank_));
      ncclComm_t c = nullptr;
      check_nccl(ncclCommSplit(world, it == members.end() ? NCCL_SPLIT_NOCOLOR : color, static_cast<int>(it - members.begin()), &c, nullptr),
                 "ncclCommSplit(group " + std::to_string(group) + ")");
      if (c) group_comms_[group] = c;
      ++color;
    }
    for (const auto& [pair, unused] : pairs) {
      const int key = pair.first == static_cast<ir::RankId>(rank_) ? 0 : 1;
      const bool member = pair.first == static_cast<ir::RankId>(rank_) || pair.second == static_cast<ir::RankId>(rank_);
      ncclComm_t c = nullptr;
      check_nccl(ncclCommSplit(world, member ? color : NCCL_SPLIT_NOCOLOR, key, &c, nullptr), "ncclCommSplit(p2p)");
      if (c) pair_comms_[pair] = c;
      ++color;
    }
    order_ = issue_order();
    start_.resize(g_.size(), nullptr);
    end_.resize(g_.size(), nullptr);
    for (ir::TaskId t : order_) {
      check_cuda(cudaEventCreate(&start_[t]), "cudaEventCreate");
      check_cuda(cudaEventCreate(&end_[t]), "cudaEventCreate");
    }
    check_cuda(cudaEventCreate(&step_start_), "cudaEventCreate");
  }

  // Issues one step and waits for it; returns its duration from the step-start event.
  float step(bool measured) {
    check_cuda(cudaSetDevice(rank_), "cudaSetDevice");
    if (measured) {
      uint64_t zero = 0;
      check_cuda(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero), "reset pool high-water mark");
    }
    check_cuda(cudaEventRecord(step_start_, streams_[0]), "cudaEventRecord");
    for (size_t s = 1; s < streams_.size(); ++s) check_cuda(cudaStreamWaitEvent(streams_[s], step_start_, 0), "cudaStreamWaitEvent");
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
    cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &v);
    return static_cast<int64_t>(v);
  }
  const std::array<int64_t, ir::kMemoryCategoryCount>& at_peak() const { return at_peak_; }
  void abort() {
    for (auto& [g, c] : group_comms_) ncclCommAbort(c);
    for (auto& [p, c] : pair_comms_) ncclCommAbort(c);
  }

 private:
  // cuBLASLt workspace: 32 MiB, NVIDIA's recommendation for Hopper (cuBLAS docs, "cublasSetWorkspace").
  static constexpr size_t kWorkspace = 32u << 20;

  std::string describe(ir::TaskId t) const {
    return "task '" + g_.task_name(t) + "' (" + std::string(ir::to_string(g_.task(t).kind)) + ") on rank " + std::to_string(rank_) + ", stream " +
           g_.stream_names()[g_.task(t).stream];
  }

  // A topological order of this rank's tasks (stream order + explicit dependencies), lowest
  // task id first among the ready ones, so every rank issues its groups' calls in graph order.
  std::vector<ir::TaskId> issue_order() {
    std::vector<ir::TaskId> mine;
    std::map<ir::TaskId, std::vector<ir::TaskId>> next;
    std::map<ir::TaskId, int> indegree;
    std::vector<ir::TaskId> last(streams_.size(), UINT32_MAX);
    for (ir::TaskId t = 0; t < g_.size(); ++t) {
      if (g_.task(t).rank != static_cast<ir::RankId>(rank_)) continue;
      mine.push_back(t);
      indegree[t] += 0;
      ir::TaskId& prev = last[g_.task(t).stream];
      if (prev != UINT32_MAX) {
        next[prev].push_back(t);
        ++indegree[t];
      }
      prev = t;
    }
    for (const auto& [before, after] : g_.dependencies()) {
      if (g_.task(after).rank != static_cast<ir::RankId>(rank_)) continue;
      next[before].push_back(after);
      ++indegree[after];
      cross_.emplace(after, before);
    }
    std::priority_queue<ir::TaskId, std::vector<ir::TaskId>, std::greater<>> ready;
    for (ir::TaskId t : mine) {
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
    if (order.size() != mine.size()) throw Failure("rank " + std::to_string(rank_) + ": the task graph has a dependency cycle");
    return order;
  }

  float* scratch(int which, size_t bytes) {
    auto& b = scratch_[static_cast<size_t>(which)];
    if (b.second < bytes) {
      if (b.first) check_cuda(cudaFree(b.first), "cudaFree(scratch)");
      check_cuda(cudaMalloc(&b.first, bytes), "cudaMalloc(scratch of " + mib(static_cast<int64_t>(bytes)) + ")");
      check_cuda(cudaMemset(b.first, 0, bytes), "cudaMemset");
      b.second = bytes;
    }
    return static_cast<float*>(b.first);
  }

  void issue(ir::TaskId t) {
    const ir::Task& task = g_.task(t);
    cudaStream_t s = streams_[task.stream];
    auto [lo, hi] = cross_.equal_range(t);
    for (auto it = lo; it != hi; ++it) check_cuda(cudaStreamWaitEvent(s, end_[it->second], 0), describe(t) + ": cudaStreamWaitEvent");
    check_cuda(cudaEventRecord(start_[t], s), describe(t) + ": cudaEventRecord");
    try {
      switch (task.kind) {
        case ir::TaskKind::compute: compute(t, g_.compute(task), s); break;
        case ir::TaskKind::memory: memory(t, g_.memory(task), s); break;
        case ir::TaskKind::delay: break;
        case ir::TaskKind::collective: collective(t, s); break;
        case ir::TaskKind::send:
        case ir::TaskKind::recv: transfer(t, s); break;
      }
    } catch (const Failure& e) {
      const std::string what = e.what();
      throw Failure(what.rfind("task '", 0) == 0 ? what : describe(t) + ": " + what);
    }
    check_cuda(cudaEventRecord(end_[t], s), describe(t) + ": cudaEventRecord");
  }

  void compute(ir::TaskId t, const ir::ComputeOp& op, cudaStream_t s) {
    if (!o_.faults.failing_task.empty() && g_.task_name(t) == o_.faults.failing_task && (o_.faults.failing_rank < 0 || o_.faults.failing_rank == rank_)) {
      check_cuda(static_cast<cudaError_t>(cuda::launch_failing_kernel(s)), "launch");
      return;
    }
    switch (op.op) {
      case ir::OpClass::gemm: gemm(op.m, op.n, op.k, std::max<int64_t>(op.batch, 1), op.dtype, s); break;
      case ir::OpClass::attention: {
        // Scores S = Q K^T, softmax, O = P V: two batched TF32 GEMMs around a softmax kernel.
        const int64_t b = std::max<int64_t>(op.batch, 1);
        gemm(op.m, op.n, op.k, b, ir::DType::tf32, s);
        check_cuda(static_cast<cudaError_t>(cuda::launch_row_softmax(scratch(2, 0), b * op.m, op.n, op.causal, s)), "softmax");
        gemm(op.m, op.k, op.n, b, ir::DType::tf32, s);
        break;
      }
      case ir::OpClass::norm: {
        const size_t n = static_cast<size_t>(std::max<int64_t>(op.bytes.count / 8, 1024));
        float* x = scratch(0, n * 4);
        float* y = scratch(3, n * 4);
        check_cuda(static_cast<cudaError_t>(cuda::launch_layer_norm(y, x, static_cast<int64_t>(n / 1024), 1024, s)), "layer_norm");
        break;
      }
      case ir::OpClass::softmax:
      case ir::OpClass::cross_entropy: {
        const size_t n = static_cast<size_t>(std::max<int64_t>(op.bytes.count / 8, 1024));
        check_cuda(static_cast<cudaError_t>(cuda::launch_row_softmax(scratch(3, n * 4), static_cast<int64_t>(n / 1024), 1024, false, s)), "softmax");
        break;
      }
      case ir::OpClass::optimizer: adamw(s); break;
      default: {
        const size_t n = static_cast<size_t>(std::max<int64_t>(op.bytes.count / 8, 1));
        check_cuda(static_cast<cudaError_t>(cuda::launch_streaming(scratch(3, n * 4), scratch(0, n * 4), n, s)), "streaming kernel");
        break;
      }
    }
  }

  // C[m,n] = A[m,k] B[k,n], column-major, `batch` strided products, FP32 accumulation.
  void gemm(int64_t m, int64_t n, int64_t k, int64_t batch, ir::DType dtype, cudaStream_t s) {
    const cudaDataType_t type = cuda_type(dtype);
    const size_t es = type_size(dtype);
    void* a = scratch(0, static_cast<size_t>(m * k * batch) * es);
    void* b = scratch(1, static_cast<size_t>(k * n * batch) * es);
    void* c = scratch(2, static_cast<size_t>(m * n * batch) * std::max<size_t>(es, 4));
    const cublasComputeType_t compute = dtype == ir::DType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasLtMatmulDesc_t desc = nullptr;
    check_blas(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    check_blas(cublasLtMatrixLayoutCreate(&la, type, static_cast<uint64_t>(m), static_cast<uint64_t>(k), m), "layout A");
    check_blas(cublasLtMatrixLayoutCreate(&lb, type, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k), "layout B");
    check_blas(cublasLtMatrixLayoutCreate(&lc, type, static_cast<uint64_t>(m), static_cast<uint64_t>(n), m), "layout C");
    if (batch > 1) {
      const auto count = static_cast<int32_t>(batch);
      const int64_t sa = m * k, sb = k * n, sc = m * n;
      for (auto [layout, stride] : {std::pair{la, sa}, std::pair{lb, sb}, std::pair{lc, sc}}) {
        check_blas(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "batch count");
        check_blas(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride), "batch stride");
      }
    }
    cublasLtMatmulPreference_t pref = nullptr;
    check_blas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const size_t ws = kWorkspace;
    check_blas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "workspace preference");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    check_blas(cublasLtMatmulAlgoGetHeuristic(lt_, desc, la, lb, lc, lc, pref, 1, &result, &found), "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) throw Failure("cuBLASLt has no algorithm for " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
    const float alpha = 1.0f, beta = 0.0f;
    check_blas(cublasLtMatmul(lt_, desc, &alpha, a, la, b, lb, &beta, c, lc, c, lc, &result.algo, workspace_, kWorkspace, s), "cublasLtMatmul");
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
  }

  void adamw(cudaStream_t s) {
    ++adam_step_;
    const auto& params = live_[static_cast<size_t>(ir::MemoryCategory::parameters)];
    const auto& grads = live_[static_cast<size_t>(ir::MemoryCategory::gradients)];
    for (size_t i = 0; i < params.size(); ++i) {
      const size_t n = static_cast<size_t>(params[i].bytes / 4);
      auto& state = adam_state_[i];
      if (!state.first) {
        check_cuda(cudaMalloc(&state.first, n * 4), "cudaMalloc(AdamW m)");
        check_cuda(cudaMalloc(&state.second, n * 4), "cudaMalloc(AdamW v)");
        check_cuda(cudaMemset(state.first, 0, n * 4), "cudaMemset");
        check_cuda(cudaMemset(state.second, 0, n * 4), "cudaMemset");
      }
      const float* g = i < grads.size() && grads[i].bytes == params[i].bytes ? static_cast<const float*>(grads[i].ptr) : scratch(1, n * 4);
      check_cuda(static_cast<cudaError_t>(cuda::launch_adamw(static_cast<float*>(params[i].ptr), g, state.first, state.second, n, adam_step_, s)), "adamw");
    }
  }

  void memory(ir::TaskId t, const ir::MemoryOp& m, cudaStream_t s) {
    auto& live = live_[static_cast<size_t>(m.category)];
    if (m.delta > 0) {
      auto& kept = kept_[static_cast<size_t>(m.category)];
      auto reuse = std::find_if(kept.begin(), kept.end(), [&](const Block& b) { return b.bytes == m.delta; });
      if (reuse != kept.end()) {
        live.push_back(*reuse);
        kept.erase(reuse);
        return;
      }
      if (o_.faults.memory_limit > 0 && current_ + m.delta > o_.faults.memory_limit) out_of_memory(t, m, "over the " + mib(o_.faults.memory_limit) + " limit");
      void* p = nullptr;
      const cudaError_t e = cudaMallocAsync(&p, static_cast<size_t>(m.delta), s);
      if (e != cudaSuccess) {
        cudaGetLastError();
        out_of_memory(t, m, cudaGetErrorString(e));
      }
      if (m.category == ir::MemoryCategory::parameters) {
        check_cuda(static_cast<cudaError_t>(cuda::launch_fill(static_cast<float*>(p), static_cast<size_t>(m.delta / 4), 0.01f, s)), "fill");
      }
      live.push_back({p, m.delta});
    } else {
      int64_t left = -m.delta;
      auto exact = std::find_if(live.rbegin(), live.rend(), [&](const Block& b) { return b.bytes == left; });
      if (exact != live.rend()) {
        check_cuda(cudaFreeAsync(exact->ptr, s), "cudaFreeAsync");
        live.erase(std::next(exact).base());
        left = 0;
      }
      while (left > 0 && !live.empty()) {
        check_cuda(cudaFreeAsync(live.back().ptr, s), "cudaFreeAsync");
        left -= live.back().bytes;
        live.pop_back();
      }
    }
    current_ += m.delta;
    by_category_[static_cast<size_t>(m.category)] += m.delta;
    if (current_ > host_peak_) {
      host_peak_ = current_;
      at_peak_ = by_category_;
    }
  }

  [[noreturn]] void out_of_memory(ir::TaskId t, const ir::MemoryOp& m, const std::string& why) {
    std::string alive;
    for (int c = 0; c < ir::kMemoryCategoryCount; ++c) {
      if (by_category_[static_cast<size_t>(c)] == 0) continue;
      alive += std::string(alive.empty() ? "" : ", ") + std::string(ir::to_string(static_cast<ir::MemoryCategory>(c))) + " " + mib(by_category_[static_cast<size_t>(c)]);
    }
    throw Failure(describe(t) + ": out of memory: asked for " + mib(m.delta) + " (" + std::string(ir::to_string(m.category)) + ") with " + mib(current_) +
                  " alive (" + (alive.empty() ? "nothing" : alive) + "): " + why);
  }

  void end_step() {
    for (size_t c = 0; c < live_.size(); ++c) {
      for (auto& b : live_[c]) kept_[c].push_back(b);
      live_[c].clear();
    }
  }

  void collective(ir::TaskId t, cudaStream_t s) {
    const ir::CollectiveCall& call = g_.collective(g_.task(t));
    if (!o_.faults.skipped_collective.empty() && g_.task_name(t) == o_.faults.skipped_collective && o_.faults.skipping_rank == rank_) return;
    ncclComm_t comm = group_comms_.at(call.group);
    const size_t n = g_.group_ranks(call.group).size();
    size_t count = static_cast<size_t>(std::max<int64_t>(call.bytes.count / 4, 1));
    count = std::max<size_t>(count / n, 1) * n;
    float* in = scratch(0, count * 4);
    float* out = scratch(3, count * 4);
    switch (call.type) {
      case ir::CollectiveType::all_reduce: check_nccl(ncclAllReduce(in, out, count, ncclFloat, ncclSum, comm, s), "ncclAllReduce"); break;
      case ir::CollectiveType::all_gather: check_nccl(ncclAllGather(in, out, count / n, ncclFloat, comm, s), "ncclAllGather"); break;
      case ir::CollectiveType::reduce_scatter: check_nccl(ncclReduceScatter(in, out, count / n, ncclFloat, ncclSum, comm, s), "ncclReduceScatter"); break;
      case ir::CollectiveType::broadcast: check_nccl(ncclBroadcast(in, out, count, ncclFloat, 0, comm, s), "ncclBroadcast"); break;
      case ir::CollectiveType::all_to_all: {
        const size_t per = count / n;
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        for (size_t p = 0; p < n; ++p) {
          check_nccl(ncclSend(in + p * per, per, ncclFloat, static_cast<int>(p), comm, s), "ncclSend");
          check_nccl(ncclRecv(out + p * per, per, ncclFloat, static_cast<int>(p), comm, s), "ncclRecv");
        }
        check_nccl(ncclGroupEnd(), "ncclGroupEnd");
        break;
      }
    }
  }

  void transfer(ir::TaskId t, cudaStream_t s) {
    const ir::Task& task = g_.task(t);
    const ir::Transfer& x = g_.transfer(task);
    ncclComm_t comm = pair_comms_.at({x.src, x.dst});
    const size_t count = static_cast<size_t>(std::max<int64_t>(x.bytes.count / 4, 1));
    if (task.kind == ir::TaskKind::send) check_nccl(ncclSend(scratch(0, count * 4), count, ncclFloat, 1, comm, s), "ncclSend");
    else check_nccl(ncclRecv(scratch(3, count * 4), count, ncclFloat, 0, comm, s), "ncclRecv");
  }

  // Waits for the step's last events; past the timeout, names the first task that has not
  // finished (a hung collective or transfer) and aborts the communicators.
  void wait_for_step() {
    const auto deadline = std::chrono::steady_clock::now() + o_.timeout;
    for (ir::TaskId t : order_) {
      for (;;) {
        const cudaError_t e = cudaEventQuery(end_[t]);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) throw Failure(describe(t) + ": CUDA error " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") by the end of this task");
        if (std::chrono::steady_clock::now() > deadline) {
          abort();
          throw Failure(describe(t) + ": did not finish within " + std::to_string(o_.timeout.count() / 1000) +
                        " s; a collective or transfer is waiting for a peer that never arrives (communicators aborted)");
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
  int rank_;
  const CudaOptions& o_;
  std::vector<cudaStream_t> streams_;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  std::map<ir::GroupId, ncclComm_t> group_comms_;
  std::map<std::pair<ir::RankId, ir::RankId>, ncclComm_t> pair_comms_;
  std::vector<ir::TaskId> order_;
  std::multimap<ir::TaskId, ir::TaskId> cross_;  // task -> explicit predecessor
  std::vector<cudaEvent_t> start_, end_;
  cudaEvent_t step_start_ = nullptr;
  std::map<ir::TaskId, std::pair<float, float>> times_;
  std::array<std::pair<void*, size_t>, 4> scratch_{};
  std::array<std::vector<Block>, ir::kMemoryCategoryCount> live_, kept_;
  std::map<size_t, std::pair<float*, float*>> adam_state_;
  int adam_step_ = 0;
  int64_t current_ = 0, host_peak_ = 0;
  std::array<int64_t, ir::kMemoryCategoryCount> by_category_{}, at_peak_{};
};

}  // namespace

bool cuda_backend_built() { return true; }

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device on this machine";
  return n;
}

Measured run_cuda(const ir::TaskGraph& graph, const CudaOptions& o) {
  std::string why;
  const int devices = cuda_device_count(&why);
  const int world = static_cast<int>(graph.ranks());
  if (devices < world) throw ExecutionError("the cuda backend needs " + std::to_string(world) + " GPUs on this machine, found " + std::to_string(devices) + (why.empty() ? "" : ": " + why));
  if (graph.representative()) throw ExecutionError("the executor needs every rank in the graph (built without representative ranks)");
  std::vector<ncclComm_t> world_comms(static_cast<size_t>(world));
  std::vector<int> devlist(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) devlist[static_cast<size_t>(r)] = r;
  if (const ncclResult_t res = ncclCommInitAll(world_comms.data(), world, devlist.data()); res != ncclSuccess) {
    throw ExecutionError(std::string("ncclCommInitAll: ") + ncclGetErrorString(res));
  }
  std::vector<std::unique_ptr<Device>> devs;
  for (int r = 0; r < world; ++r) devs.push_back(std::make_unique<Device>(graph, r, o));
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::vector<float>> step_ms(static_cast<size_t>(world));
  auto on_all = [&](auto&& work) {
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r) {
      threads.emplace_back([&, r] {
        try {
          work(r);
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(r)] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    std::string all;
    for (int r = 0; r < world; ++r) {
      if (!errors[static_cast<size_t>(r)].empty()) all += "rank " + std::to_string(r) + ": " + errors[static_cast<size_t>(r)] + "\n";
    }
    if (!all.empty()) {
      all.pop_back();
      throw ExecutionError(all);
    }
  };
  on_all([&](int r) { devs[static_cast<size_t>(r)]->setup(world_comms[static_cast<size_t>(r)]); });
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    const bool measured = step >= o.warmup;
    on_all([&](int r) {
      const float ms = devs[static_cast<size_t>(r)]->step(measured);
      if (measured) step_ms[static_cast<size_t>(r)].push_back(ms);
    });
  }
  Measured m;
  m.timeline.tasks.assign(graph.size(), sim::TaskTiming{});
  m.timeline.memory.assign(graph.ranks(), sim::RankMemory{});
  for (int r = 0; r < world; ++r) {
    for (const auto& [t, span] : devs[static_cast<size_t>(r)]->times()) {
      const SimTime a = SimTime::from_seconds(span.first * 1e-3), b = SimTime::from_seconds(span.second * 1e-3);
      m.timeline.tasks[t] = {a, a, b};
      m.timeline.makespan = std::max(m.timeline.makespan, b);
    }
    m.timeline.memory[static_cast<size_t>(r)].peak = devs[static_cast<size_t>(r)]->pool_peak();
    m.timeline.memory[static_cast<size_t>(r)].at_peak = devs[static_cast<size_t>(r)]->at_peak();
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
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  int driver = 0, runtime = 0, nccl = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  ncclGetVersion(&nccl);
  m.device = "cuda: " + std::to_string(world) + " x " + prop.name + ", driver " + std::to_string(driver) + ", CUDA runtime " + std::to_string(runtime) +
             ", NCCL " + std::to_string(nccl);
  for (auto& c : world_comms) ncclCommDestroy(c);
  return m;
}

}  // namespace cs::exec
