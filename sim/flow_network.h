// Flow-level network: flows that share links max-min fairly, started and finished as events.
//
// A flow is one phase of a LinkPlan: `work` units to move, loading each of its links with
// rate x weight. Rates are the weighted max-min fair allocation (progressive filling): all
// unfrozen flows grow at the same rate until some link is full; the flows on it freeze; repeat.
// A ring is one flow over all its hops, so its hops advance in lock step at the pace of its most
// contended link, as a ring's steps do. Rates are recomputed whenever a flow starts or finishes.
// Incremental: the network keeps which active flows load each link. A link loaded by one flow
// only ever limits that flow, to its capacity over the flow's weight, and that bound is never
// looser than the flow's tightest link alone (`solo`, computed once when the flow starts); so a
// re-solve visits only the links two or more active flows share, plus one bound per flow, and
// gives the full progressive filling's rates (tests/flow_solver_test.cpp checks it against one).
// A folded collective loads thousands of links that no other flow touches: with the full solve,
// those were 90% of a flow-level DeepSeek-V3 step at 2,048 GPUs.
// Clock: integer picoseconds; a flow's finish time is rounded up to the next picosecond.
// ReplicaFolding (below) lets one representative flow stand for its symmetric copies.
// Validation: tests/network_test.cpp (hand-derived shares on shared and oversubscribed links, the
// max-min two-link example) and tests/flow_folding_test.cpp (folded against fully simulated).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/units.h"
#include "cost_models/link_plan.h"

namespace cs::sim {

class FlowNetwork {
 public:
  using FlowId = uint32_t;
  static constexpr SimTime kNever{std::numeric_limits<int64_t>::max()};

  // capacities[link] in bytes/s; links referenced by loads must be in range.
  explicit FlowNetwork(std::vector<double> capacities);

  // The flow keeps `loads` (a shared list: copying it copies a pointer).
  FlowId start(SimTime now, double work, cost::LoadList loads);
  bool idle() const { return active_.empty(); }
  SimTime next_completion() const { return next_; }
  // Moves the clock to `t` (no later than next_completion()) and returns the flows that finish
  // at `t`, in the order they were started.
  std::vector<FlowId> advance(SimTime t);
  double rate(FlowId f) const { return flows_.at(f).rate; }

 private:
  struct Flow {
    double remaining = 0;
    double rate = 0;
    SimTime finish = kNever;
    cost::LoadList loads;
    // The rate its most limiting link would allow it alone: min over loads of capacity / weight
    // (infinite when no load weighs anything).
    double solo = 0;
    bool frozen = false;  // reallocate()'s scratch
  };
  struct OnLink {
    FlowId flow;
    double weight;
  };
  void progress(SimTime t);
  void reallocate();
  // reallocate()'s parts: every flow back to rate 0 and unfrozen (the list of those a link
  // limits); the next rise of the fill level (each shared link's unfrozen weight kept in
  // weight_); the flows of links it fills frozen; the unfrozen flows at `filled`, those still free
  // returned; each flow's finish at its rate.
  std::vector<FlowId> reset_rates();
  double fill_step(const std::vector<FlowId>& unfrozen, double filled);
  void freeze_full_links(double step);
  std::vector<FlowId> raise(const std::vector<FlowId>& unfrozen, double filled);
  void schedule_finishes();
  void attach(FlowId f);  // records f on its links
  void detach(FlowId f);

  std::vector<double> capacity_;
  std::vector<Flow> flows_;
  std::vector<FlowId> active_;
  SimTime now_;
  SimTime next_ = kNever;
  std::vector<std::vector<OnLink>> on_link_;  // by link: the active flows loading it
  std::vector<uint32_t> shared_;              // links with two or more active flows
  std::vector<uint32_t> shared_slot_;         // by link: its index in shared_ + 1 (0: not shared)
  // Scratch for reallocate(), by link (read only for shared links).
  std::vector<double> residual_, weight_;
};

// --- Folding symmetric replicas (representative ranks at the flow level) -----------------------
//
// With representative ranks the graph simulates one rank per pipeline stage (and context-parallel
// index); the other tensor- and data-parallel replicas run the same tasks at the same instants
// but are not simulated. Their collectives and transfers are images of the representatives'
// under a permutation s of the cluster's ranks (RankSymmetry), started at the same instants.
// The whole cluster's max-min fair allocation is unique, so it is invariant under s: every copy
// of a flow f runs at f's rate. A link l's constraint in the whole cluster is then
//     sum over flows f of rate_f * W_f(l) <= capacity(l),  W_f(l) = sum over copies x of f of
//     w_x(l)
// and a representative flow loaded with W_f(l) stands for all its copies exactly (a copy counts
// once however many shifts map onto it: a collective's copies are its distinct rank sets, a
// transfer's its distinct (src, dst) pairs). Progressive filling freezes f when a link with
// W_f(l) > 0 fills, which is when its copies freeze. Only links that the representatives' own
// plans load are kept: any other loaded link is the image s(l) of a kept one, with the same
// constraint, so dropping it changes nothing and keeps the folded flows short.
// Limits: exact when each shift is an automorphism of the topology (equal capacities on image
// links); where it is not (a partly filled leaf, nodes_per_leaf not aligned with the layout),
// copies are still counted on the kept links but are assumed to keep their representative's pace.
// A copy whose plan has fewer phases than the representative's adds nothing to the missing phases.
struct RankSymmetry {
  // One digit of the cluster rank in mixed radix: (rank / stride) % extent, shifted cyclically.
  struct Axis {
    uint32_t stride = 1;
    uint32_t extent = 1;
  };
  std::vector<Axis> axes;
  // Shifts, the identity (0) included: the product of the extents.
  uint32_t count() const;
  // The image of `rank` under shift j in [0, count()): axis i's digit advanced by j's i-th digit.
  uint32_t image(uint32_t rank, uint32_t shift) const;
};

class ReplicaFolding {
 public:
  // The plan of the same collective or transfer over other ranks (a copy's).
  using PlanOf = std::function<const cost::LinkPlan*(const std::vector<uint32_t>& ranks)>;

  ReplicaFolding(RankSymmetry symmetry, size_t link_count);
  // Marks the links `plan` loads as kept. Call it with every plan the representatives will run
  // before folding any (a link kept later would miss from the plans folded before).
  void keep(const cost::LinkPlan& plan);
  // The plan whose phases load W(l) on the kept links, for the representative's `plan` over
  // `ranks` (a collective's group, `as_set`; or a transfer's {src, dst}). Latency and closed-form
  // figures are the representative's. Cached by `plan` (one plan is one group's): the result
  // lives as long as this object.
  const cost::LinkPlan& fold(const cost::LinkPlan& plan, const std::vector<uint32_t>& ranks,
                             bool as_set, const PlanOf& plan_of);

 private:
  // The plans of `plan`'s distinct images under the symmetry, `plan` first.
  std::vector<const cost::LinkPlan*> copies_of(const cost::LinkPlan& plan,
                                               const std::vector<uint32_t>& ranks, bool as_set,
                                               const PlanOf& plan_of) const;
  // Phase `i` of the copies summed on the kept links and the representative's own.
  std::vector<cost::LinkLoad> fold_phase(size_t i,
                                         const std::vector<const cost::LinkPlan*>& copies);

  RankSymmetry symmetry_;
  std::vector<char> kept_;  // by link
  std::unordered_map<const cost::LinkPlan*, std::unique_ptr<cost::LinkPlan>> folded_;
  // Scratch for fold(), sized to the link count.
  std::vector<double> weight_, bytes_;
  std::vector<char> own_;
};

}  // namespace cs::sim
