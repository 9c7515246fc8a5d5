// The primitives every part of a training step emits tasks with: compute, memory, collective and
// point-to-point tasks on a rank's streams, with the bookkeeping that keeps ranks consistent.
//
// Ranks are emitted one after another. Members of a group emit the same sequence of calls on the
// same stream, so the n-th call a rank makes on (group, stream) is matched to the n-th call of
// every other member; likewise the n-th send from a to b with the n-th receive. Inputs that arrive
// on other streams (pipeline receives, parameter gathers) are held until the next compute task on
// the compute stream, which waits for them.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "strategies/layout.h"
#include "taskgraph/task_graph.h"

namespace cs::strategy {

using ir::TaskId;
inline constexpr TaskId kNoTask = UINT32_MAX;

// Streams every rank has: compute and the data-parallel gradient stream always; the others only
// when the layout needs them (their ids follow in the order they are added).
inline constexpr ir::StreamId kComputeStream = 0;
inline constexpr ir::StreamId kCommStream = 1;

// Where one rank is and what it has emitted so far in the step.
struct RankState {
  ir::RankId rank = 0;     // graph rank
  ir::RankId cluster = 0;  // cluster rank
  Coord at;
  ir::GroupId tp_group = 0, dp_group = 0;
  // MoE: the ranks splitting the experts, those splitting each expert, those holding the same
  // expert shard (strategies/layout.h's expert grid).
  ir::GroupId ep_group = 0, etp_group = 0, expert_dp_group = 0;
  ir::GroupId etp_ep_group = 0;   // etp x ep: one copy of every expert (allgather dispatcher)
  TaskId last_compute = kNoTask;  // last task on the compute stream
  std::vector<TaskId> syncs;      // gradient syncs the optimizer waits for
  // Context parallelism: the ring's neighbours, its group, its streams, the KV chunk last
  // received (or gathered) and the KV gradient chunk last received.
  ir::RankId cp_next = 0, cp_prev = 0;
  ir::GroupId cp_group = 0;
  ir::GroupId cp_a2a_group = 0;  // the all-to-all level's ranks (cp_comm a2a, a2a+p2p)
  ir::StreamId cp_send = 0, cp_recv = 0;
  bool cp_ring_folded = false;  // the ring's other ranks are images of this one (StepOptions)
  TaskId kv_arrived = kNoTask, dkv_arrived = kNoTask;
  // Tensor-parallel communication overlap: chunks per overlapped GEMM (0: none) and its stream.
  int tp_chunks = 0;
  ir::StreamId tp_stream = 0;
};

// Task names made of parts, interned once per graph. Built and hashed for every task they were a
// tenth of building a graph: a rank emits the same few hundred names for every layer and
// micro-batch (the layer and micro-batch are the label's own fields).
class TaskNames {
 public:
  explicit TaskNames(ir::TaskGraph& g) : g_(g) {}
  // The name `make()` builds, identified by `owner` (an object that outlives the graph's build,
  // e.g. the op or block it names) and `suffix` (a string literal: keyed by its address).
  template <typename Make>
  ir::NameId of(const void* owner, const char* suffix, Make&& make) {
    return find_or_add(
        {reinterpret_cast<uintptr_t>(owner), reinterpret_cast<uintptr_t>(suffix), -1, false}, make);
  }
  // `base` + `suffix` (static storage: a literal or ir::to_string's), then `index` if >= 0.
  ir::NameId joined(ir::NameId base, std::string_view suffix, int index = -1);

 private:
  struct Key {
    uintptr_t a, b;
    int index;
    bool joined;
    bool operator==(const Key&) const = default;
  };
  template <typename Make>
  ir::NameId find_or_add(const Key& k, Make&& make) {
    if (!g_.keeps_names()) return g_.intern({});
    Slot& slot = find(k);
    if (slot.used) return slot.id;
    const ir::NameId id = g_.intern(make());
    slot = {k, id, true};
    if (++used_ * 2 > slots_.size()) grow();  // moves the slots: `slot` is not read after
    return id;
  }
  // Open addressing over a power-of-two table at most half full: a step asks for a name once per
  // task (15 million times for Llama 2 70B on 64 GPUs with every rank) among tens of thousands of
  // names. The node-based map it replaces was a tenth of that run's profile; the run went from
  // 3.8 to 3.7 s.
  struct Slot {
    Key key{};
    ir::NameId id = 0;
    bool used = false;
  };
  Slot& find(const Key& k);  // k's slot, or the empty one where it goes
  void grow();
  ir::TaskGraph& g_;
  std::vector<Slot> slots_ = std::vector<Slot>(1024);
  size_t used_ = 0;
};

class StepEmitter {
 public:
  explicit StepEmitter(ir::TaskGraph& g) : g_(g), names_(g) {}
  ir::TaskGraph& graph() { return g_; }
  TaskNames& names() { return names_; }

  TaskId compute(RankState& r, const ir::ComputeOp& op, const ir::Label& l);
  // Allocates (delta > 0) or frees on stream s; on the compute stream it orders after the last
  // compute task but does not consume held inputs.
  TaskId memory(RankState& r, ir::StreamId s, int64_t delta, ir::MemoryCategory cat,
                const std::string& name, ir::Phase phase, int layer = -1, int mb = -1);
  TaskId memory(RankState& r, ir::StreamId s, int64_t delta, ir::MemoryCategory cat,
                ir::NameId name, ir::Phase phase, int layer = -1, int mb = -1);
  TaskId collective(RankState& r, ir::StreamId s, ir::GroupId group, ir::CollectiveType type,
                    Bytes bytes, const ir::Label& l, bool gradients = false);
  // A send that starts once `after` has finished (typically the rank's last compute task).
  TaskId send(const RankState& r, ir::StreamId s, ir::RankId to, Bytes bytes, const ir::Label& l,
              TaskId after);
  // A receive; `held`: the next compute task waits for it.
  TaskId receive(const RankState& r, ir::StreamId s, ir::RankId from, Bytes bytes,
                 const ir::Label& l, bool held = true);
  // The receiving end of this rank's own next send to `to`, on this rank: a folded ring's
  // receive, whose real sender (the previous rank) is an image of this one.
  TaskId receive_own_send(const RankState& r, ir::StreamId s, ir::RankId to, Bytes bytes,
                          const ir::Label& l, bool held);
  // The next compute task waits for `input` (a task on another stream).
  void hold_input(TaskId input) { pending_inputs_.push_back(input); }
  void depends(TaskId before, TaskId after) {
    if (before != kNoTask) g_.add_dependency(before, after);
  }

 private:
  TaskId on_compute_stream(RankState& r, TaskId t);
  ir::CollectiveId collective_for(const RankState& r, ir::GroupId group, ir::StreamId s,
                                  ir::CollectiveType type, Bytes bytes, bool gradients);
  ir::TransferId transfer_for(ir::RankId src, ir::RankId dst, Bytes bytes, bool sender);

  ir::TaskGraph& g_;
  TaskNames names_;
  std::vector<TaskId> pending_inputs_;
  std::map<std::pair<ir::GroupId, ir::StreamId>, std::vector<ir::CollectiveId>> collectives_;
  std::map<std::tuple<ir::RankId, ir::GroupId, ir::StreamId>, size_t> collective_seen_;
  std::map<std::pair<ir::RankId, ir::RankId>, std::vector<ir::TransferId>> transfers_;
  std::map<std::pair<ir::RankId, ir::RankId>, size_t> sends_seen_, recvs_seen_;
};

}  // namespace cs::strategy
