#include "strategies/step_emitter.h"

#include <stdexcept>

namespace cs::strategy {

TaskId StepEmitter::on_compute_stream(RankState& r, TaskId t) {
  for (TaskId in : pending_inputs_) g_.add_dependency(in, t);
  pending_inputs_.clear();
  return r.last_compute = t;
}

TaskId StepEmitter::compute(RankState& r, const ir::ComputeOp& op, const ir::Label& l) {
  return on_compute_stream(r, g_.add_compute(r.rank, kComputeStream, op, l));
}

TaskId StepEmitter::memory(RankState& r, ir::StreamId s, int64_t delta, ir::MemoryCategory cat,
                           const std::string& name, ir::Phase phase, int layer, int mb) {
  return memory(r, s, delta, cat, g_.intern(name), phase, layer, mb);
}

TaskId StepEmitter::memory(RankState& r, ir::StreamId s, int64_t delta, ir::MemoryCategory cat,
                           ir::NameId name, ir::Phase phase, int layer, int mb) {
  const TaskId t = g_.add_memory(r.rank, s, delta, cat, g_.label(name, phase, layer, mb));
  if (s == kComputeStream) r.last_compute = t;
  return t;
}

TaskNames::Slot& TaskNames::find(const Key& k) {
  // The key's fields mixed by a 64-bit finaliser (MurmurHash3's fmix64): the pointers in it are
  // aligned and close together, so their low bits alone would crowd a few slots.
  uint64_t h = k.a ^ (k.b * 0x9E3779B97F4A7C15ULL) ^ (static_cast<uint64_t>(k.index) << 1) ^
               (k.joined ? 1 : 0);
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDULL;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ULL;
  h ^= h >> 33;
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    if (!slots_[i].used || slots_[i].key == k) return slots_[i];
  }
}

void TaskNames::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  for (const Slot& s : old) {
    if (s.used) find(s.key) = s;
  }
}

ir::NameId TaskNames::joined(ir::NameId base, std::string_view suffix, int index) {
  return find_or_add({base, reinterpret_cast<uintptr_t>(suffix.data()), index, true}, [&] {
    std::string name = g_.name(base);
    name += suffix;
    if (index >= 0) name += std::to_string(index);
    return name;
  });
}

TaskId StepEmitter::collective(RankState& r, ir::StreamId s, ir::GroupId group,
                               ir::CollectiveType type, Bytes bytes, const ir::Label& l,
                               bool gradients) {
  const TaskId t =
      g_.add_collective(r.rank, s, collective_for(r, group, s, type, bytes, gradients), l);
  return s == kComputeStream ? on_compute_stream(r, t) : t;
}

TaskId StepEmitter::send(const RankState& r, ir::StreamId s, ir::RankId to, Bytes bytes,
                         const ir::Label& l, TaskId after) {
  const TaskId tx = g_.add_send(r.rank, s, transfer_for(r.cluster, to, bytes, true), l);
  depends(after, tx);
  return tx;
}

TaskId StepEmitter::receive(const RankState& r, ir::StreamId s, ir::RankId from, Bytes bytes,
                            const ir::Label& l, bool held) {
  const TaskId rx = g_.add_recv(r.rank, s, transfer_for(from, r.cluster, bytes, false), l);
  if (held) hold_input(rx);
  return rx;
}

TaskId StepEmitter::receive_own_send(const RankState& r, ir::StreamId s, ir::RankId to, Bytes bytes,
                                     const ir::Label& l, bool held) {
  const TaskId rx = g_.add_recv(r.rank, s, transfer_for(r.cluster, to, bytes, false), l);
  if (held) hold_input(rx);
  return rx;
}

ir::CollectiveId StepEmitter::collective_for(const RankState& r, ir::GroupId group, ir::StreamId s,
                                             ir::CollectiveType type, Bytes bytes, bool gradients) {
  auto& calls = collectives_[{group, s}];
  size_t& n = collective_seen_[{r.rank, group, s}];
  if (n == calls.size()) calls.push_back(g_.new_collective(type, bytes, group, gradients));
  const ir::CollectiveId c = calls[n++];
  const auto& call = g_.collective_call(c);
  if (call.type != type || call.bytes.count != bytes.count)
    throw std::logic_error("ranks of a group disagree on a collective");
  return c;
}

ir::TransferId StepEmitter::transfer_for(ir::RankId src, ir::RankId dst, Bytes bytes, bool sender) {
  auto& xs = transfers_[{src, dst}];
  size_t& n = (sender ? sends_seen_ : recvs_seen_)[{src, dst}];
  if (n == xs.size()) xs.push_back(g_.new_transfer(src, dst, bytes));
  return xs[n++];
}

}  // namespace cs::strategy
