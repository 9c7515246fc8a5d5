#include "taskgraph/task_graph.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace cs::ir {

std::string_view to_string(TaskKind k) {
  switch (k) {
    case TaskKind::compute:
      return "compute";
    case TaskKind::collective:
      return "collective";
    case TaskKind::send:
      return "send";
    case TaskKind::recv:
      return "recv";
    case TaskKind::memory:
      return "memory";
    case TaskKind::delay:
      return "delay";
  }
  return "?";
}
std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::forward:
      return "forward";
    case Phase::backward:
      return "backward";
    case Phase::optimizer:
      return "optimizer";
    case Phase::other:
      return "other";
  }
  return "?";
}
std::string_view to_string(OpClass c) {
  switch (c) {
    case OpClass::gemm:
      return "gemm";
    case OpClass::attention:
      return "attention";
    case OpClass::elementwise:
      return "elementwise";
    case OpClass::norm:
      return "norm";
    case OpClass::softmax:
      return "softmax";
    case OpClass::embedding:
      return "embedding";
    case OpClass::cross_entropy:
      return "cross_entropy";
    case OpClass::optimizer:
      return "optimizer";
    case OpClass::memcpy:
      return "memcpy";
  }
  return "?";
}
std::string_view to_string(DType d) {
  switch (d) {
    case DType::fp32:
      return "fp32";
    case DType::tf32:
      return "tf32";
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::fp8:
      return "fp8";
    case DType::fp4:
      return "fp4";
  }
  return "?";
}
std::string_view to_string(CollectiveType t) {
  switch (t) {
    case CollectiveType::all_reduce:
      return "all_reduce";
    case CollectiveType::all_gather:
      return "all_gather";
    case CollectiveType::reduce_scatter:
      return "reduce_scatter";
    case CollectiveType::broadcast:
      return "broadcast";
    case CollectiveType::all_to_all:
      return "all_to_all";
  }
  return "?";
}
std::string_view to_string(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::parameters:
      return "parameters";
    case MemoryCategory::gradients:
      return "gradients";
    case MemoryCategory::optimizer_state:
      return "optimizer_state";
    case MemoryCategory::activations:
      return "activations";
    case MemoryCategory::comm_buffers:
      return "comm_buffers";
    case MemoryCategory::workspace:
      return "workspace";
    case MemoryCategory::logits:
      return "logits";
    case MemoryCategory::reserve:
      return "reserve";
  }
  return "?";
}
int64_t dtype_bytes(DType d) {
  switch (d) {
    case DType::fp32:
    case DType::tf32:
      return 4;
    case DType::bf16:
    case DType::fp16:
      return 2;
    case DType::fp8:
    case DType::fp4:
      return 1;
  }
  return 4;
}

TaskGraph::TaskGraph(uint32_t ranks) : ranks_(ranks), cluster_size_(ranks) {
  if (ranks == 0) throw std::logic_error("a task graph needs at least one rank");
  for (RankId r = 0; r < ranks; ++r) cluster_rank_.push_back(r);
}

void TaskGraph::set_cluster_ranks(std::vector<RankId> map, uint32_t cluster_size) {
  if (map.size() != ranks_ || cluster_size < ranks_)
    throw std::logic_error("cluster rank map does not match the graph's ranks");
  for (RankId r : map) {
    if (r >= cluster_size) throw std::logic_error("cluster rank out of range");
  }
  cluster_rank_ = std::move(map);
  cluster_size_ = cluster_size;
}

StreamId TaskGraph::add_stream(std::string name) {
  if (stream_names_.size() >= 255) throw std::logic_error("too many streams");
  stream_names_.push_back(std::move(name));
  return static_cast<StreamId>(stream_names_.size() - 1);
}

NameId TaskGraph::intern(std::string_view name) {
  if (!keep_names_) {
    if (unnamed_ == kNoName) unnamed_ = intern_kept({});
    return unnamed_;
  }
  return intern_kept(name);
}

NameId TaskGraph::intern_kept(std::string_view name) {
  auto it = name_index_.find(name);
  if (it != name_index_.end()) return it->second;
  names_.emplace_back(name);
  NameId id = static_cast<NameId>(names_.size() - 1);
  name_index_.emplace(names_.back(), id);
  return id;
}

Label TaskGraph::label(std::string_view name, Phase phase, int layer, int micro_batch,
                       bool recompute) {
  return label(intern(name), phase, layer, micro_batch, recompute);
}

GroupId TaskGraph::group(std::vector<RankId> ranks) {
  std::string key;
  for (RankId r : ranks) {
    if (r >= cluster_size_)
      throw std::logic_error("group names rank " + std::to_string(r) + " of " +
                             std::to_string(cluster_size_));
    key += std::to_string(r) + ",";
  }
  auto it = group_index_.find(key);
  if (it != group_index_.end()) return it->second;
  groups_.push_back(std::move(ranks));
  GroupId id = static_cast<GroupId>(groups_.size() - 1);
  group_index_.emplace(std::move(key), id);
  return id;
}

CollectiveId TaskGraph::new_collective(CollectiveType type, Bytes bytes, GroupId g,
                                       bool gradients) {
  collectives_.push_back({type, bytes, g, gradients});
  return static_cast<CollectiveId>(collectives_.size() - 1);
}

TransferId TaskGraph::new_transfer(RankId src, RankId dst, Bytes bytes) {
  transfers_.push_back({src, dst, bytes});
  return static_cast<TransferId>(transfers_.size() - 1);
}

TaskId TaskGraph::push(TaskKind kind, RankId r, StreamId s, const Label& l, uint32_t payload) {
  if (finalized_) throw std::logic_error("task graph is finalized");
  if (r >= ranks_)
    throw std::logic_error("task on rank " + std::to_string(r) + " of " + std::to_string(ranks_));
  if (s >= stream_names_.size())
    throw std::logic_error("task on undeclared stream " + std::to_string(s));
  tasks_.push_back(Task{kind, s, l.phase, static_cast<uint8_t>(l.recompute), r, l.name, l.layer,
                        l.micro_batch, payload});
  return static_cast<TaskId>(tasks_.size() - 1);
}

namespace {
// Field by field, doubles by their bits: ops equal here price the same under any cost model.
// A field added to ComputeOp must join same_op and op_hash, or ops differing in it would share.
static_assert(sizeof(ComputeOp) == 56, "ComputeOp changed: update same_op and op_hash");
bool same_op(const ComputeOp& a, const ComputeOp& b) {
  return a.op == b.op && a.dtype == b.dtype && a.causal == b.causal &&
         a.attention_kernel == b.attention_kernel && a.kernels == b.kernels && a.m == b.m &&
         a.n == b.n && a.k == b.k && a.batch == b.batch &&
         std::bit_cast<uint64_t>(a.flops.value) == std::bit_cast<uint64_t>(b.flops.value) &&
         a.bytes.count == b.bytes.count;
}
uint64_t op_hash(const ComputeOp& o) {
  uint64_t h = 0;
  const auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x9E3779B97F4A7C15ull; };
  mix(static_cast<uint64_t>(o.op) | static_cast<uint64_t>(o.dtype) << 8 |
      static_cast<uint64_t>(o.causal) << 16 | static_cast<uint64_t>(o.attention_kernel) << 24 |
      static_cast<uint64_t>(o.kernels) << 32);
  mix(static_cast<uint64_t>(o.m));
  mix(static_cast<uint64_t>(o.n));
  mix(static_cast<uint64_t>(o.k));
  mix(static_cast<uint64_t>(o.batch));
  mix(std::bit_cast<uint64_t>(o.flops.value));
  mix(static_cast<uint64_t>(o.bytes.count));
  return h;
}
constexpr int kRecentOpsBits = 12;  // TaskGraph::recent_ops_ has 2^12 slots
}  // namespace

TaskId TaskGraph::add_compute(RankId r, StreamId s, const ComputeOp& op, const Label& l) {
  if (recent_ops_.empty()) recent_ops_.assign(size_t{1} << kRecentOpsBits, 0);
  // The hash's top bits: a product's low bits see only its factors' low bits, and a double's low
  // bits are often all zero.
  uint32_t& slot = recent_ops_[op_hash(op) >> (64 - kRecentOpsBits)];
  if (slot == 0 || !same_op(compute_ops_[slot - 1], op)) {
    compute_ops_.push_back(op);
    slot = static_cast<uint32_t>(compute_ops_.size());
  }
  return push(TaskKind::compute, r, s, l, slot - 1);
}
TaskId TaskGraph::add_collective(RankId r, StreamId s, CollectiveId c, const Label& l) {
  return push(TaskKind::collective, r, s, l, c);
}
TaskId TaskGraph::add_send(RankId r, StreamId s, TransferId t, const Label& l) {
  return push(TaskKind::send, r, s, l, t);
}
TaskId TaskGraph::add_recv(RankId r, StreamId s, TransferId t, const Label& l) {
  return push(TaskKind::recv, r, s, l, t);
}
TaskId TaskGraph::add_memory(RankId r, StreamId s, int64_t delta, MemoryCategory cat,
                             const Label& l) {
  memory_ops_.push_back({delta, cat});
  return push(TaskKind::memory, r, s, l, static_cast<uint32_t>(memory_ops_.size() - 1));
}
TaskId TaskGraph::add_delay(RankId r, StreamId s, SimTime duration, const Label& l) {
  delays_.push_back(duration);
  return push(TaskKind::delay, r, s, l, static_cast<uint32_t>(delays_.size() - 1));
}

void TaskGraph::reserve_for_ranks(size_t ranks) {
  const auto room = [ranks](size_t built) { return built * ranks + built * ranks / 8; };
  tasks_.reserve(room(tasks_.size()));
  deps_.reserve(room(deps_.size()));
}

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  if (finalized_) throw std::logic_error("task graph is finalized");
  if (before >= tasks_.size() || after >= tasks_.size() || before == after) {
    throw std::logic_error("bad dependency " + std::to_string(before) + " -> " +
                           std::to_string(after));
  }
  deps_.emplace_back(before, after);
}

template <typename Edge>
void TaskGraph::for_each_stream_successor(Edge&& edge) const {
  const size_t streams = stream_names_.size();
  std::vector<TaskId> last_on_stream(static_cast<size_t>(ranks_) * streams, UINT32_MAX);
  for (TaskId t = 0; t < tasks_.size(); ++t) {
    TaskId& last = last_on_stream[static_cast<size_t>(tasks_[t].rank) * streams + tasks_[t].stream];
    if (last != UINT32_MAX) edge(last, t);
    last = t;
  }
}

std::vector<std::pair<TaskId, TaskId>> TaskGraph::dependencies() const {
  if (!finalized_) return deps_;
  // Each list: the stream successor first when t has one, then t's explicit successors.
  std::vector<char> has_stream_successor(tasks_.size(), 0);
  for_each_stream_successor([&](TaskId a, TaskId) { has_stream_successor[a] = 1; });
  std::vector<std::pair<TaskId, TaskId>> deps;
  for (TaskId t = 0; t < tasks_.size(); ++t) {
    for (const TaskId* s = successors_begin(t) + has_stream_successor[t]; s != successors_end(t);
         ++s)
      deps.emplace_back(t, *s);
  }
  return deps;
}

void TaskGraph::finalize() {
  if (finalized_) return;
  // No shrink_to_fit: the array's unused capacity was never written, so it holds no pages, and
  // copying the array to shed it touched as many pages again as the array itself.
  const size_t n = tasks_.size();
  // Participation checks: each collective has one task per group member, each transfer one send
  // on its source and one recv on its destination.
  std::vector<uint32_t>& arrivals = arrivals_;
  arrivals.assign(collectives_.size(), 0);
  std::vector<std::vector<RankId>> seen(collectives_.size());
  std::vector<uint8_t> sends(transfers_.size(), 0), recvs(transfers_.size(), 0);
  for (TaskId t = 0; t < n; ++t) {
    const Task& task = tasks_[t];
    if (task.kind == TaskKind::collective) {
      const auto& members = groups_[collectives_[task.payload].group];
      const RankId cr = cluster_rank_[task.rank];
      if (std::find(members.begin(), members.end(), cr) == members.end()) {
        throw std::logic_error("task '" + names_[task.name] + "' on rank " + std::to_string(cr) +
                               " joins a collective of a group it is not in");
      }
      auto& ranks_seen = seen[task.payload];
      if (std::find(ranks_seen.begin(), ranks_seen.end(), cr) != ranks_seen.end()) {
        throw std::logic_error("task '" + names_[task.name] + "' on rank " + std::to_string(cr) +
                               " joins a collective twice");
      }
      ranks_seen.push_back(cr);
      ++arrivals[task.payload];
    } else if (task.kind == TaskKind::send) {
      if (transfers_[task.payload].src != cluster_rank_[task.rank])
        throw std::logic_error("send '" + names_[task.name] + "' on wrong rank");
      ++sends[task.payload];
    } else if (task.kind == TaskKind::recv) {
      // On its destination, or, in a representative graph, on its source when the destination is
      // not simulated: a folded ring's receive, whose real sender is an image of this rank.
      const Transfer& x = transfers_[task.payload];
      const RankId cr = cluster_rank_[task.rank];
      const bool folded = representative() && x.src == cr && !simulated(x.dst);
      if (x.dst != cr && !folded)
        throw std::logic_error("recv '" + names_[task.name] + "' on wrong rank");
      ++recvs[task.payload];
    }
  }
  for (CollectiveId c = 0; c < collectives_.size(); ++c) {
    const size_t group_size = groups_[collectives_[c].group].size();
    if (arrivals[c] == 0 || (!representative() && arrivals[c] != group_size)) {
      throw std::logic_error("collective " + std::to_string(c) + " has " +
                             std::to_string(arrivals[c]) + " participants for a group of " +
                             std::to_string(group_size));
    }
  }
  for (TransferId x = 0; x < transfers_.size(); ++x) {
    if (sends[x] != 1 || recvs[x] != 1)
      throw std::logic_error("transfer " + std::to_string(x) + " lacks its send or recv");
  }

  // Successor lists (CSR): the next task on the same (rank, stream) first, then explicit
  // dependencies in the order added (dependencies() relies on both).
  // Built in the offsets array itself (degrees, then each list's start used as its write cursor,
  // which leaves it at the next list's start), so no per-task scratch array joins the graph.
  succ_offsets_.assign(n + 1, 0);
  for_each_stream_successor([&](TaskId a, TaskId) { ++succ_offsets_[a + 1]; });
  for (auto [a, b] : deps_) ++succ_offsets_[a + 1];
  for (size_t t = 0; t < n; ++t) succ_offsets_[t + 1] += succ_offsets_[t];
  succ_.assign(succ_offsets_[n], 0);
  for_each_stream_successor([&](TaskId a, TaskId b) { succ_[succ_offsets_[a]++] = b; });
  for (auto [a, b] : deps_) succ_[succ_offsets_[a]++] = b;
  for (size_t t = n; t > 0; --t) succ_offsets_[t] = succ_offsets_[t - 1];  // cursors: ends
  succ_offsets_[0] = 0;
  std::vector<std::pair<TaskId, TaskId>>().swap(deps_);  // freed (`= {}` would keep its capacity)
  std::vector<uint32_t>().swap(recent_ops_);
  finalized_ = true;
}

}  // namespace cs::ir
