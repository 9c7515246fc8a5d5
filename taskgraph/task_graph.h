// The task graph: the IR that strategies emit, the simulator schedules and the executor runs.
//
// A rank is one device with in-order streams (CUDA-stream semantics): a task starts when the task
// before it on the same (rank, stream) has finished and all its explicit dependencies have
// finished. A collective is one task per participating rank sharing a CollectiveId; it starts when
// every participant has arrived. A point-to-point transfer is a send task and a recv task sharing a
// TransferId and starts when both have arrived (NCCL send/recv semantics).
//
// Representative ranks: a strategy whose ranks are symmetric (data-parallel replicas,
// tensor-parallel peers) may emit tasks for a subset of the cluster's ranks only. Graph ranks
// 0..ranks()-1 then map to cluster ranks (cluster_rank()); groups and transfers name cluster ranks,
// so costs still see the whole group, and a collective starts when the tasks present for it
// (arrivals()) have arrived. A full graph maps rank r to cluster rank r and must have one task
// per group member.
//
// Compactness: a Task is 20 bytes; op payloads live in per-kind tables and names are interned, so
// a million-task graph takes tens of MB. Compute ops are shared: a step repeats the same few
// shapes (every layer, every micro-batch), so add_compute reuses an identical op already stored,
// and whatever prices ops (the engine) prices each distinct op once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/units.h"

namespace cs::ir {

using RankId = uint32_t;
using TaskId = uint32_t;
using NameId = uint32_t;
using StreamId = uint8_t;
using GroupId = uint32_t;
using CollectiveId = uint32_t;
using TransferId = uint32_t;

enum class TaskKind : uint8_t { compute, collective, send, recv, memory, delay };
enum class Phase : uint8_t { forward, backward, optimizer, other };

// The op classes the compute model and the executor know. Shapes mean:
//   gemm:      C[m,n] = A[m,k] B[k,n], `batch` independent products
//   attention: batch = b*heads, m = query length, n = key length, k = head dim (fused kernel)
//   others:    memory-bound; `bytes` read+written, `flops` for completeness
enum class OpClass : uint8_t {
  gemm,
  attention,
  elementwise,
  norm,
  softmax,
  embedding,
  cross_entropy,
  optimizer,
  memcpy
};
// fp8: E4M3/E5M2 (per-tensor, rowwise or MXFP8 block scales); fp4: E2M1 (NVFP4), Blackwell on.
enum class DType : uint8_t { fp32, tf32, bf16, fp16, fp8, fp4 };
// Which fused-attention kernel family an attention op runs (a run's `training.attention_backend`):
// cudnn, cuDNN's flash attention (PyTorch SDPA's default on Hopper from 2.11, Transformer Engine);
// flash2, FlashAttention-2 (SDPA's default before). The compute model prices each from its own
// measured table where the profile has one (cost_models/compute_model.h). Ignored by other ops.
enum class AttentionKernel : uint8_t { cudnn, flash2 };
enum class CollectiveType : uint8_t {
  all_reduce,
  all_gather,
  reduce_scatter,
  broadcast,
  all_to_all
};
enum class MemoryCategory : uint8_t {
  parameters,
  gradients,
  optimizer_state,
  activations,
  comm_buffers,
  workspace,
  logits,
  // What a GPU holds beside the step's tensors (CUDA context, cuBLAS and NCCL buffers, the
  // allocator's fragmentation): strategies/memory_reserve.h, added after the step is run.
  reserve
};
inline constexpr int kMemoryCategoryCount = 8;

std::string_view to_string(TaskKind k);
std::string_view to_string(Phase p);
std::string_view to_string(OpClass c);
std::string_view to_string(DType d);
std::string_view to_string(CollectiveType t);
std::string_view to_string(MemoryCategory c);
// Bytes per element; fp4 packs two elements a byte and answers 1 (the smallest addressable unit).
int64_t dtype_bytes(DType d);

struct ComputeOp {
  OpClass op = OpClass::elementwise;
  DType dtype = DType::bf16;
  bool causal = false;  // attention only
  // Attention given an explicit boolean mask (PyTorch SDPA with attn_mask): the kernel visits
  // every block of the s x s square and applies the mask, at the masked path's rate (attention
  // only; cost_models/compute_model.cpp, kMaskedAttentionShare).
  bool explicit_mask = false;
  AttentionKernel attention_kernel = AttentionKernel::cudnn;  // attention only (fills padding)
  // Kernel launches the op stands for (a software stack that does not fuse runs an elementwise
  // chain as several kernels): each costs the host its dispatch time (CostModel::host_time).
  uint16_t kernels = 1;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  Flops flops;  // arithmetic work
  Bytes bytes;  // HBM traffic (read + written)
};

// `bytes` follows nccl-tests' "size": the all_reduce / broadcast buffer, the all_gather output
// (whole), the reduce_scatter input (whole), the all_to_all buffer per rank.
// `gradients`: the call reduces the rank's gradient memory (data-parallel gradient
// synchronisation), rather than a buffer of its own; an executor that moves real data reduces the
// gradients there.
struct CollectiveCall {
  CollectiveType type = CollectiveType::all_reduce;
  Bytes bytes;
  GroupId group = 0;
  bool gradients = false;
};

struct Transfer {
  RankId src = 0, dst = 0;
  Bytes bytes;
};

struct MemoryOp {
  int64_t delta = 0;  // > 0 allocates, < 0 frees
  MemoryCategory category = MemoryCategory::workspace;
};

struct Label {
  NameId name = 0;
  Phase phase = Phase::other;
  int16_t layer = -1;        // -1: not tied to a layer
  int16_t micro_batch = -1;  // -1: not tied to a micro-batch
  bool recompute = false;    // activation recomputation (not counted as model FLOPs)
};

struct Task {
  TaskKind kind;
  StreamId stream;
  Phase phase;
  uint8_t recompute;
  RankId rank;
  NameId name;
  int16_t layer;
  int16_t micro_batch;
  uint32_t payload;  // index into the table of its kind
};
static_assert(sizeof(Task) == 20, "keep tasks compact");

class TaskGraph {
 public:
  explicit TaskGraph(uint32_t ranks = 1);
  // Declares that graph rank r stands for cluster rank map[r] in a cluster of `cluster_size`.
  void set_cluster_ranks(std::vector<RankId> map, uint32_t cluster_size);

  // --- building ---------------------------------------------------------------------------
  StreamId add_stream(std::string name);  // same set of streams on every rank
  NameId intern(std::string_view name);
  // Off: every name interns as "" (a graph built only to be timed skips hashing its names).
  void keep_names(bool keep) { keep_names_ = keep; }
  // Room for `ranks` times what has been built so far (one rank of many), and an eighth more:
  // the arrays then never double and copy while the other ranks are added (a fifth of the page
  // faults of a 64-rank run). Capacity not used is never touched, so it costs no memory.
  void reserve_for_ranks(size_t ranks);
  Label label(std::string_view name, Phase phase, int layer = -1, int micro_batch = -1,
              bool recompute = false);
  Label label(NameId name, Phase phase, int layer = -1, int micro_batch = -1,
              bool recompute = false) {
    return Label{name, phase, static_cast<int16_t>(layer), static_cast<int16_t>(micro_batch),
                 recompute};
  }
  bool keeps_names() const { return keep_names_; }

  GroupId group(std::vector<RankId> ranks);  // interned: the same rank list gives the same id
  CollectiveId new_collective(CollectiveType type, Bytes bytes, GroupId group,
                              bool gradients = false);
  TransferId new_transfer(RankId src, RankId dst, Bytes bytes);

  TaskId add_compute(RankId r, StreamId s, const ComputeOp& op, const Label& l);
  TaskId add_collective(RankId r, StreamId s, CollectiveId c, const Label& l);
  TaskId add_send(RankId r, StreamId s, TransferId t, const Label& l);
  TaskId add_recv(RankId r, StreamId s, TransferId t, const Label& l);
  TaskId add_memory(RankId r, StreamId s, int64_t delta, MemoryCategory cat, const Label& l);
  TaskId add_delay(RankId r, StreamId s, SimTime duration, const Label& l);
  void add_dependency(TaskId before, TaskId after);

  // Checks the contract (every collective has exactly one task per group member, every transfer
  // one send on its src and one recv on its dst, dependencies point to existing tasks) and builds
  // the successor lists. Throws std::logic_error naming the offending task: a malformed graph is
  // a strategy bug, not a user error.
  void finalize();
  bool finalized() const { return finalized_; }

  // --- reading ----------------------------------------------------------------------------
  uint32_t ranks() const { return ranks_; }  // graph ranks (simulated)
  uint32_t cluster_size() const { return cluster_size_; }
  RankId cluster_rank(RankId r) const { return cluster_rank_[r]; }
  bool representative() const { return cluster_size_ != ranks_; }
  // Whether cluster rank c is one of the graph's ranks.
  bool simulated(RankId c) const {
    return std::find(cluster_rank_.begin(), cluster_rank_.end(), c) != cluster_rank_.end();
  }
  size_t size() const { return tasks_.size(); }
  const Task& task(TaskId t) const { return tasks_[t]; }
  const std::vector<Task>& tasks() const { return tasks_; }
  const std::vector<std::string>& stream_names() const { return stream_names_; }
  const std::string& name(NameId n) const { return names_[n]; }
  size_t name_count() const { return names_.size(); }
  const std::string& task_name(TaskId t) const { return names_[tasks_[t].name]; }

  const ComputeOp& compute(const Task& t) const { return compute_ops_[t.payload]; }
  // The distinct compute ops (Task::payload of a compute task indexes them); tasks may share one.
  const std::vector<ComputeOp>& compute_ops() const { return compute_ops_; }
  const CollectiveCall& collective(const Task& t) const { return collectives_[t.payload]; }
  const CollectiveCall& collective_call(CollectiveId c) const { return collectives_[c]; }
  const Transfer& transfer(const Task& t) const { return transfers_[t.payload]; }
  const MemoryOp& memory(const Task& t) const { return memory_ops_[t.payload]; }
  SimTime delay(const Task& t) const { return delays_[t.payload]; }
  const std::vector<RankId>& group_ranks(GroupId g) const { return groups_[g]; }
  size_t collective_count() const { return collectives_.size(); }
  uint32_t arrivals(CollectiveId c) const {
    return arrivals_[c];
  }  // tasks joining c (after finalize)
  size_t transfer_count() const { return transfers_.size(); }

  // Explicit dependencies (before, after), without the stream order: grouped by `before`, each
  // group in the order added. Rebuilt from the successor lists on each call (finalize() drops its
  // own list: at 15 million tasks, 90 MB that only exporters and executors read).
  std::vector<std::pair<TaskId, TaskId>> dependencies() const;
  // Successors: explicit ones and the next task on its stream.
  // Successors of t after finalize(): [succ_offsets_[t], succ_offsets_[t+1]).
  const TaskId* successors_begin(TaskId t) const { return succ_.data() + succ_offsets_[t]; }
  const TaskId* successors_end(TaskId t) const { return succ_.data() + succ_offsets_[t + 1]; }
  // Where t's successor offset is stored: t's list is [*p, *(p + 1)) in successors_begin(0)'s
  // array (the engine walks them by offset).
  const uint32_t* successor_offset_of(TaskId t) const { return succ_offsets_.data() + t; }

 private:
  TaskId push(TaskKind kind, RankId r, StreamId s, const Label& l, uint32_t payload);
  // Calls edge(a, b) for each task a and the next task b on its (rank, stream), in b's order.
  template <typename Edge>
  void for_each_stream_successor(Edge&& edge) const;

  uint32_t ranks_;
  uint32_t cluster_size_;
  std::vector<RankId> cluster_rank_;
  bool finalized_ = false;
  std::vector<Task> tasks_;
  std::vector<std::string> stream_names_;
  std::vector<std::string> names_;
  struct StringHash {  // lets intern() look names up without building a std::string
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, NameId, StringHash, std::equal_to<>> name_index_;
  std::vector<std::vector<RankId>> groups_;
  std::unordered_map<std::string, GroupId> group_index_;
  std::vector<ComputeOp> compute_ops_;
  // Recently added compute ops by hash (index + 1; 0: empty): add_compute's duplicate lookup. A
  // small direct-mapped table, not a map: a collision only stores a duplicate, and graph building
  // stays a push per task.
  std::vector<uint32_t> recent_ops_;
  std::vector<CollectiveCall> collectives_;
  std::vector<uint32_t> arrivals_;
  bool keep_names_ = true;
  static constexpr NameId kNoName = ~NameId{0};
  NameId unnamed_ = kNoName;  // "" once interned (names not kept)
  NameId intern_kept(std::string_view name);
  std::vector<Transfer> transfers_;
  std::vector<MemoryOp> memory_ops_;
  std::vector<SimTime> delays_;
  std::vector<std::pair<TaskId, TaskId>> deps_;  // until finalize(): the successor lists then
  std::vector<uint32_t> succ_offsets_;
  std::vector<TaskId> succ_;
};

}  // namespace cs::ir
