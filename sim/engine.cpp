#include "sim/engine.h"

#include <algorithm>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "sim/event_queue.h"
#include "sim/flow_network.h"

namespace cs::sim {

namespace {

constexpr SimTime kClockLimit{int64_t{1} << 62};

// A collective or transfer in flight at the flow level: its tasks end when its last phase's flow
// finishes, plus the plan's latency.
struct Comm {
  std::vector<ir::TaskId> tasks;
  const cost::LinkPlan* plan = nullptr;
  double bytes = 0;
  size_t phase = 0;
};

// Work whose speed changes while it runs (interference): a compute task, or an analytic-level
// collective or transfer. `remaining` is seconds of work at full speed.
struct Stretchable {
  double remaining = 0;
  double rate = 1;
  SimTime since;
};

class Run {
 public:
  Run(const ir::TaskGraph& g, const cost::CostModel& c, NetworkFidelity fidelity,
      bool memory_samples, const RankSymmetry& replicas, const std::vector<double>& compute_rates)
      : g_(g), costs_(c), memory_samples_(memory_samples), compute_rates_(compute_rates) {
    const size_t n = g.size();
    tl_.memory.assign(g.ranks(), RankMemory{});
    memory_total_.assign(g.ranks(), 0);
    arrived_.assign(g.collective_count(), 0);
    // Each collective's arrived tasks, side by side (its arrivals() slots from waiting_begin_[c]).
    waiting_begin_.resize(g.collective_count() + 1);
    waiting_begin_[0] = 0;
    for (ir::CollectiveId c = 0; c < g.collective_count(); ++c)
      waiting_begin_[c + 1] = waiting_begin_[c] + g.arrivals(c);
    waiting_.resize(waiting_begin_.back());
    transfer_waiting_.assign(g.transfer_count(), UINT32_MAX);
    tl_.links.bytes.assign(c.link_count(), 0.0);
    tl_.links.busy_seconds.assign(c.link_count(), 0.0);
    capacity_.resize(c.link_count());
    for (uint32_t l = 0; l < capacity_.size(); ++l) capacity_[l] = c.link_capacity(l);
    if (fidelity == NetworkFidelity::flow) network_ = std::make_unique<FlowNetwork>(capacity_);
    if (network_ && g.representative() && replicas.count() > 1) {
      // Every plan the representatives run, so that the kept links are known before any is folded.
      folding_ = std::make_unique<ReplicaFolding>(replicas, c.link_count());
      for (ir::CollectiveId k = 0; k < g.collective_count(); ++k) {
        const ir::CollectiveCall& call = g.collective_call(k);
        if (const cost::LinkPlan* p = c.collective(call, g.group_ranks(call.group)).plan)
          folding_->keep(*p);
      }
      for (const ir::Task& t : g.tasks()) {
        if (t.kind != ir::TaskKind::send) continue;
        if (const cost::LinkPlan* p = c.transfer(g.transfer(t)).plan) folding_->keep(*p);
      }
    }
    interference_ = c.interference();
    interferes_ = interference_.any();
    // Each distinct compute op priced once (graphs share identical ops between tasks).
    op_cost_.reserve(g.compute_ops().size());
    for (const ir::ComputeOp& op : g.compute_ops())
      op_cost_.emplace_back(c.compute(op), c.host_time(op));
    // A task's record holds its unfinished predecessors until it is released (see kUnreleased):
    // the engine keeps no per-task record of its own (one bit each, next_only_), so a
    // 15-million-task graph is simulated in little more than its graph and timeline.
    tl_.tasks.assign(n, TaskTiming{kUnreleased, SimTime{}, SimTime{}});
    succ_ = g.successors_begin(0);
    succ_offsets_ = g.successor_offset_of(0);
    for (const ir::TaskId* s = succ_; s != succ_ + succ_offsets_[n]; ++s) --tl_.tasks[*s].ready.ps;
    size_t memory_tasks = 0;
    next_only_.assign(n / 64 + 1, 0);
    for (ir::TaskId id = 0; id < n; ++id) {
      if (tl_.tasks[id].ready == kUnreleased) roots_.push_back(id);
      memory_tasks += g.task(id).kind == ir::TaskKind::memory;
      if (succ_offsets_[id + 1] - succ_offsets_[id] == 1 && succ_[succ_offsets_[id]] == id + 1)
        next_only_[id / 64] |= uint64_t{1} << (id % 64);
    }
    if (memory_samples_) tl_.memory_samples.reserve(memory_tasks);
    if (interferes_) {
      version_.assign(n, 0);
      comm_in_flight_.assign(g.ranks(), 0);
      computing_.assign(g.ranks(), {});
      rank_comms_.assign(g.ranks(), {});
    }
  }

  Timeline go() {
    for (ir::TaskId t : roots_) make_ready(t, SimTime{});
    roots_ = {};
    for (;;) {
      const SimTime net_next = network_ ? network_->next_completion() : FlowNetwork::kNever;
      if (!events_.empty() && (!network_ || events_.next_time() <= net_next)) {
        const Event e = events_.take();
        if (e.starts) {
          start_compute(e.task, e.time, compute_duration(g_.task(e.task)));
          continue;
        }
        if (!version_.empty() && e.version != version_[e.task]) continue;  // re-timed since
        finish(e.task, e.time);
      } else if (net_next != FlowNetwork::kNever) {
        for (FlowNetwork::FlowId f : network_->advance(net_next)) flow_done(f, net_next);
      } else {
        break;
      }
    }
    account_link_loads();
    // Time arithmetic saturates at the clock's end instead of wrapping; a step anywhere near it
    // comes from a figure far outside physics (common/limits.h bounds what a user can give).
    if (tl_.makespan >= kClockLimit)
      throw UserError(
          "the simulated step reaches the simulator's clock limit (2^62 ps, 53 days): a "
          "bandwidth, latency or compute rate in the scenario or its profile is far from physical");
    if (finished_ != g_.size()) {
      // A graph built without names (the planner's) still says which task.
      auto who = [&](ir::TaskId t) {
        const std::string& n = g_.task_name(t);
        return n.empty() ? "#" + std::to_string(t) : n;
      };
      for (ir::TaskId t = 0; t < g_.size(); ++t) {
        if (tl_.tasks[t].ready.ps < 0) {
          throw std::logic_error("simulation deadlock: task '" + who(t) + "' on rank " +
                                 std::to_string(g_.task(t).rank) + " never started (" +
                                 std::to_string(g_.size() - finished_) + " tasks unfinished)");
        }
      }
      for (ir::TaskId t = 0; t < g_.size(); ++t) {
        if (tl_.tasks[t].end == SimTime{} && g_.task(t).kind != ir::TaskKind::memory) {
          throw std::logic_error("simulation deadlock: '" + who(t) + "' on rank " +
                                 std::to_string(g_.task(t).rank) +
                                 " waits for peers that never arrive");
        }
      }
    }
    return std::move(tl_);
  }

 private:
  void schedule(ir::TaskId t, SimTime start, SimTime duration) {
    tl_.tasks[t].start = start;
    tl_.tasks[t].end = start + duration;
    events_.push({start + duration, t});
  }

  void make_ready(ir::TaskId t, SimTime now) {
    // Graphs are emitted rank by rank, so a rank's next tasks follow this one by id, while the
    // ranks advance side by side, each through its own stretch of every per-task array: too many
    // streams for the hardware prefetcher, a cache miss per array and task otherwise. Fetch the
    // lines of a task a little ahead (a hint only: nothing depends on it).
    if (t + 8 < tl_.tasks.size()) {
      __builtin_prefetch(&g_.task(t + 8));
      __builtin_prefetch(succ_offsets_ + t + 8);
    }
    if (t + 4 < tl_.tasks.size()) {
      __builtin_prefetch(&tl_.tasks[t + 4], 1);
      __builtin_prefetch(succ_ + succ_offsets_[t + 4]);
      const ir::Task& ahead = g_.task(t + 4);  // a memory task's delta is in a table of its own
      if (ahead.kind == ir::TaskKind::memory) __builtin_prefetch(&g_.memory(ahead));
    }
    const ir::Task& task = g_.task(t);
    tl_.tasks[t].ready = now;  // released: no longer a count of predecessors
    // Memory and compute tasks first, by plain branches: they are most tasks, and a jump table's
    // indirect branch mispredicts where they alternate.
    if (task.kind == ir::TaskKind::memory) {
      apply_memory(task.rank, g_.memory(task), now);
      schedule(t, now, SimTime{});
      return;
    }
    if (task.kind == ir::TaskKind::compute) {
      const SimTime start = issued(task.rank, op_cost_[task.payload].second, now);
      const SimTime duration = compute_duration(task);
      if (interferes_) {
        if (start > now) {
          events_.push({start, t, 0, 1});
        } else {
          start_compute(t, now, duration);
        }
      } else {
        schedule(t, start, duration);
      }
      return;
    }
    switch (task.kind) {
      case ir::TaskKind::compute:
      case ir::TaskKind::memory:
        break;  // above
      case ir::TaskKind::delay:
        schedule(t, now, g_.delay(task));
        break;
      case ir::TaskKind::collective: {
        const auto c = static_cast<ir::CollectiveId>(task.payload);
        waiting_[waiting_begin_[c] + arrived_[c]] = t;
        if (++arrived_[c] == g_.arrivals(c)) {
          const auto& call = g_.collective_call(c);
          const std::span<const ir::TaskId> tasks(waiting_.data() + waiting_begin_[c], arrived_[c]);
          const std::vector<ir::RankId>& ranks = g_.group_ranks(call.group);
          const cost::CommCost cost = costs_.collective(call, ranks);
          const cost::LinkPlan* flow_plan = cost.plan;
          if (folding_ && flow_plan) {  // the copies' loads folded in (a collective's copies: its
                                        // images as rank sets)
            flow_plan =
                &folding_->fold(*flow_plan, ranks, true, [&](const std::vector<ir::RankId>& copy) {
                  return costs_.collective(call, copy).plan;
                });
          }
          start_comm(tasks, cost, flow_plan, static_cast<double>(call.bytes.count), now);
        }
        break;
      }
      case ir::TaskKind::send:
      case ir::TaskKind::recv: {
        const auto x = static_cast<ir::TransferId>(task.payload);
        if (transfer_waiting_[x] == UINT32_MAX) {
          transfer_waiting_[x] = t;
        } else {
          const ir::Transfer& tr = g_.transfer(task);
          const ir::TaskId pair[2] = {transfer_waiting_[x], t};
          const cost::CommCost cost = costs_.transfer(tr);
          const cost::LinkPlan* flow_plan = cost.plan;
          if (folding_ && flow_plan) {  // a transfer's copies: its images as (src, dst) pairs
            flow_plan = &folding_->fold(*flow_plan, {tr.src, tr.dst}, false,
                                        [&](const std::vector<ir::RankId>& copy) {
                                          return costs_.transfer({copy[0], copy[1], tr.bytes}).plan;
                                        });
          }
          start_comm(pair, cost, flow_plan, static_cast<double>(tr.bytes.count), now);
        }
        break;
      }
    }
  }

  // Every plan's summed bytes onto its links, in the order the plans were first used.
  void account_link_loads() {
    for (const cost::LinkPlan* plan : plans_used_) {
      const double bytes = plan_bytes_[plan];
      for (const cost::LinkPhase& ph : plan->phases) {
        const double units = bytes * ph.units_per_byte;
        for (const cost::LinkLoad& l : ph.loads) {
          tl_.links.bytes[l.link] += units * l.bytes;
          tl_.links.busy_seconds[l.link] += units * l.weight / capacity_[l.link];
        }
      }
    }
  }

  // When the GPU can start a compute op that is ready at `now`: its host issues kernels in program
  // order, running ahead of the GPU from the step's start (it never waits for the GPU), so the op
  // starts once the host has issued it. Without a host cost this is `now`.
  SimTime issued(ir::RankId r, SimTime cost, SimTime now) {
    if (cost == SimTime{}) return now;
    if (host_issued_.empty()) host_issued_.assign(g_.ranks(), SimTime{});
    host_issued_[r] += cost;
    return std::max(now, host_issued_[r]);
  }

  // Every member has arrived: add the bytes to the plan's total (its link loads, the simulated
  // ranks' own, are spread once at the end: account_link_loads), then
  // either schedule the closed-form end or start the first phase's flow over `flow_plan` (the
  // plan itself, or with representative ranks the plan with its copies' loads folded in).
  void start_comm(std::span<const ir::TaskId> tasks, const cost::CommCost& cost,
                  const cost::LinkPlan* flow_plan, double bytes, SimTime now) {
    const cost::LinkPlan* plan = cost.plan;
    if (plan) {
      // Loads scale with the bytes: summed per plan here, spread over its links once at the end
      // (a data-parallel ring over 131,072 GPUs loads hundreds of thousands of links, every call).
      auto [it, first] = plan_bytes_.try_emplace(plan, 0.0);
      if (first) plans_used_.push_back(plan);
      it->second += bytes;
    }
    if (interferes_) {
      for (ir::TaskId p : tasks) comm_started(g_.task(p).rank, now);
    }
    if (!network_ || !plan || plan->phases.empty()) {
      if (interferes_) {
        start_stretchable_comm({tasks.begin(), tasks.end()}, cost.time, now);
        return;
      }
      for (ir::TaskId p : tasks) schedule(p, now, cost.time);
      return;
    }
    for (ir::TaskId p : tasks) tl_.tasks[p].start = now;
    comms_.push_back({{tasks.begin(), tasks.end()}, flow_plan, bytes, 0});
    start_phase(comms_.size() - 1, now);
  }

  void start_phase(size_t comm, SimTime now) {
    const Comm& c = comms_[comm];
    const cost::LinkPhase& ph = c.plan->phases[c.phase];
    const FlowNetwork::FlowId f = network_->start(now, c.bytes * ph.units_per_byte, ph.loads);
    if (flow_owner_.size() <= f) flow_owner_.resize(f + 1);
    flow_owner_[f] = comm;
  }

  void flow_done(FlowNetwork::FlowId f, SimTime now) {
    const size_t comm = flow_owner_[f];
    Comm& c = comms_[comm];
    if (++c.phase < c.plan->phases.size()) {
      start_phase(comm, now);
      return;
    }
    const SimTime end = now + c.plan->latency;
    for (ir::TaskId p : c.tasks) {
      tl_.tasks[p].end = end;
      events_.push({end, p, version_.empty() ? 0 : version_[p]});
    }
    c.tasks = {};
  }

  void finish(ir::TaskId t, SimTime now) {
    ++finished_;
    if (interferes_) ended(t, now);
    if (next_only_[t / 64] >> (t % 64) & 1) {
      if (++tl_.tasks[t + 1].ready.ps == kUnreleased.ps) make_ready(t + 1, now);
    } else {
      const ir::TaskId* end = succ_ + succ_offsets_[t + 1];
      for (const ir::TaskId* s = succ_ + succ_offsets_[t]; s != end; ++s) {
        if (++tl_.tasks[*s].ready.ps == kUnreleased.ps) make_ready(*s, now);
      }
    }
    if (now > tl_.makespan) tl_.makespan = now;
  }

  // --- interference (cost::Interference)
  // ---------------------------------------------------------- Each running compute task and
  // analytic-level comm is a Stretchable; when a rank starts or stops communicating (or computing),
  // the work it overlaps is re-timed at its new speed and its end event re-issued (the old one goes
  // stale by version).
  void start_compute(ir::TaskId t, SimTime now, SimTime duration) {
    const ir::RankId r = g_.task(t).rank;
    work_[t] = {duration.seconds(),
                comm_in_flight_[r] > 0 ? 1 / (1 + interference_.compute_slowdown) : 1.0, now};
    tl_.tasks[t].start = now;
    const bool first = computing_[r].empty();
    computing_[r].push_back(t);
    issue_end(t, now);
    if (first) retime_comms(r, now);
  }

  void start_stretchable_comm(std::vector<ir::TaskId> tasks, SimTime duration, SimTime now) {
    const size_t id = comm_work_.size();
    comm_work_.push_back({{duration.seconds(), 1.0, now}, tasks});
    for (ir::TaskId p : tasks) {
      tl_.tasks[p].start = now;
      rank_comms_[g_.task(p).rank].push_back(id);
    }
    comm_work_[id].work.rate = comm_rate(id);
    issue_comm_end(id, now);
  }

  void comm_started(ir::RankId r, SimTime now) {
    if (comm_in_flight_[r]++ == 0) retime_computes(r, now);
  }

  void ended(ir::TaskId t, SimTime now) {
    const ir::Task& task = g_.task(t);
    const ir::RankId r = task.rank;
    if (task.kind == ir::TaskKind::compute) {
      auto& c = computing_[r];
      c.erase(std::find(c.begin(), c.end(), t));
      work_.erase(t);
      if (c.empty()) retime_comms(r, now);
    } else if (task.kind == ir::TaskKind::collective || task.kind == ir::TaskKind::send ||
               task.kind == ir::TaskKind::recv) {
      auto& comms = rank_comms_[r];
      comms.erase(std::remove_if(comms.begin(), comms.end(),
                                 [&](size_t id) {
                                   const auto& ts = comm_work_[id].tasks;
                                   return std::find(ts.begin(), ts.end(), t) != ts.end();
                                 }),
                  comms.end());
      if (--comm_in_flight_[r] == 0) retime_computes(r, now);
    }
  }

  double comm_rate(size_t id) const {
    for (ir::TaskId p : comm_work_[id].tasks) {
      if (!computing_[g_.task(p).rank].empty()) return 1 / (1 + interference_.comm_slowdown);
    }
    return 1.0;
  }

  static bool set_rate(Stretchable& w, double rate, SimTime now) {
    if (rate == w.rate) return false;
    w.remaining = std::max(0.0, w.remaining - (now - w.since).seconds() * w.rate);
    w.since = now;
    w.rate = rate;
    return true;
  }

  void retime_computes(ir::RankId r, SimTime now) {
    const double rate = comm_in_flight_[r] > 0 ? 1 / (1 + interference_.compute_slowdown) : 1.0;
    for (ir::TaskId t : computing_[r]) {
      if (set_rate(work_[t], rate, now)) issue_end(t, now);
    }
  }

  void retime_comms(ir::RankId r, SimTime now) {
    for (size_t id : rank_comms_[r]) {
      if (set_rate(comm_work_[id].work, comm_rate(id), now)) issue_comm_end(id, now);
    }
  }

  void issue_end(ir::TaskId t, SimTime now) {
    const Stretchable& w = work_[t];
    const SimTime end = now + SimTime::from_seconds(w.remaining / w.rate);
    tl_.tasks[t].end = end;
    events_.push({end, t, ++version_[t]});
  }

  void issue_comm_end(size_t id, SimTime now) {
    const Stretchable& w = comm_work_[id].work;
    const SimTime end = now + SimTime::from_seconds(w.remaining / w.rate);
    for (ir::TaskId p : comm_work_[id].tasks) {
      tl_.tasks[p].end = end;
      events_.push({end, p, ++version_[p]});
    }
  }

  // A compute task's time on its rank's GPU: its op's, at the rank's rate (a straggler's slower).
  SimTime compute_duration(const ir::Task& task) const {
    const SimTime d = op_cost_[task.payload].first;
    if (compute_rates_.empty() || compute_rates_[task.rank] == 1.0) return d;
    return SimTime::from_seconds(d.seconds() / compute_rates_[task.rank]);
  }

  void apply_memory(ir::RankId rank, const ir::MemoryOp& op, SimTime now) {
    RankMemory& rm = tl_.memory[rank];
    rm.current[static_cast<size_t>(op.category)] += op.delta;
    const int64_t total = memory_total_[rank] += op.delta;  // the sum of rm.current
    if (total > rm.peak) {
      rm.peak = total;
      rm.peak_time = now;
      rm.at_peak = rm.current;
    }
    if (memory_samples_)
      tl_.memory_samples.push_back(
          {now, rank, op.category, total, rm.current[static_cast<size_t>(op.category)]});
  }

  const ir::TaskGraph& g_;
  const cost::CostModel& costs_;
  bool memory_samples_;
  Timeline tl_;
  // Before its release a task's timeline record counts its unfinished predecessors in `ready`:
  // kUnreleased - pending (each finishing predecessor adds one; at kUnreleased it is released and
  // `ready` becomes its time, never negative).
  static constexpr SimTime kUnreleased{-1};
  const std::vector<double>& compute_rates_;          // by graph rank; empty: all 1
  std::vector<std::pair<SimTime, SimTime>> op_cost_;  // by op: CostModel::compute, host_time
  const ir::TaskId* succ_ = nullptr;                  // the graph's successor lists, one flat array
  const uint32_t* succ_offsets_ = nullptr;  // t's list: [succ_offsets_[t], succ_offsets_[t + 1])
  // By task, a bit: its one successor is the next task by id (most tasks: the next on its stream,
  // emitted next), so finishing it reads no successor list.
  std::vector<uint64_t> next_only_;
  std::vector<ir::TaskId> roots_;      // tasks without predecessors, in id order
  std::vector<int64_t> memory_total_;  // by rank: bytes allocated, all categories
  std::vector<uint32_t> arrived_;
  std::vector<uint32_t> waiting_begin_;  // by collective: its first slot in waiting_
  std::vector<ir::TaskId> waiting_;      // arrived tasks of each collective
  std::vector<ir::TaskId> transfer_waiting_;
  EventQueue events_;
  std::vector<double> capacity_;             // usable bytes/s per topology link
  std::unique_ptr<FlowNetwork> network_;     // flow-level fidelity only
  std::unique_ptr<ReplicaFolding> folding_;  // flow level with representative ranks only
  std::vector<Comm> comms_;
  std::unordered_map<const cost::LinkPlan*, double> plan_bytes_;  // bytes run on each plan
  std::vector<const cost::LinkPlan*> plans_used_;  // plan_bytes_'s keys, by first use
  std::vector<size_t> flow_owner_;                 // FlowId -> index in comms_
  size_t finished_ = 0;
  std::vector<SimTime> host_issued_;  // by rank: when its host has issued its compute so far
  // Interference only (empty otherwise).
  struct CommWork {
    Stretchable work;
    std::vector<ir::TaskId> tasks;
  };
  cost::Interference interference_;
  bool interferes_ = false;                         // interference_.any()
  std::vector<uint32_t> version_;                   // by task: its latest end event
  std::vector<int> comm_in_flight_;                 // by rank
  std::vector<std::vector<ir::TaskId>> computing_;  // by rank: compute tasks running
  std::vector<std::vector<size_t>> rank_comms_;     // by rank: analytic comms in flight
  std::unordered_map<ir::TaskId, Stretchable> work_;
  std::vector<CommWork> comm_work_;
};

}  // namespace

Engine::Engine(const ir::TaskGraph& graph, const cost::CostModel& costs, NetworkFidelity fidelity,
               bool memory_samples, RankSymmetry replicas)
    : graph_(graph),
      costs_(costs),
      fidelity_(fidelity),
      memory_samples_(memory_samples),
      replicas_(std::move(replicas)) {
  if (!graph.finalized()) throw std::logic_error("Engine needs a finalized task graph");
}

Engine& Engine::with_compute_rates(std::vector<double> rates) {
  if (!rates.empty() && rates.size() != graph_.ranks())
    throw std::logic_error("Engine::with_compute_rates needs one rate per graph rank");
  compute_rates_ = std::move(rates);
  return *this;
}

Timeline Engine::run() {
  return Run(graph_, costs_, fidelity_, memory_samples_, replicas_, compute_rates_).go();
}

}  // namespace cs::sim
