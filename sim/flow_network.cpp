#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace cs::sim {

FlowNetwork::FlowNetwork(std::vector<double> capacities)
    : capacity_(std::move(capacities)),
      on_link_(capacity_.size()),
      shared_slot_(capacity_.size(), 0),
      residual_(capacity_.size(), 0.0),
      weight_(capacity_.size(), 0.0) {}

FlowNetwork::FlowId FlowNetwork::start(SimTime now, double work, cost::LoadList loads) {
  double solo = std::numeric_limits<double>::infinity();
  for (const cost::LinkLoad& l : loads) {
    if (l.link >= capacity_.size() || capacity_[l.link] <= 0)
      throw std::logic_error("flow on a link the network does not know");
    if (l.weight > 0) solo = std::min(solo, capacity_[l.link] / l.weight);
  }
  progress(now);
  const auto id = static_cast<FlowId>(flows_.size());
  flows_.push_back({work, 0.0, kNever, std::move(loads), solo});
  active_.push_back(id);
  attach(id);
  reallocate();
  return id;
}

std::vector<FlowNetwork::FlowId> FlowNetwork::advance(SimTime t) {
  if (t > next_) throw std::logic_error("FlowNetwork::advance past a completion");
  progress(t);
  std::vector<FlowId> done;
  for (FlowId f : active_) {
    if (flows_[f].finish <= t) done.push_back(f);
  }
  if (!done.empty()) {
    for (FlowId f : done) {
      flows_[f].remaining = 0;
      detach(f);
    }
    std::erase_if(active_, [&](FlowId f) { return flows_[f].finish <= t; });
    reallocate();
  }
  return done;
}

void FlowNetwork::attach(FlowId f) {
  for (const cost::LinkLoad& l : flows_[f].loads) {
    std::vector<OnLink>& on = on_link_[l.link];
    on.push_back({f, l.weight});
    if (on.size() == 2) {
      shared_.push_back(l.link);
      shared_slot_[l.link] = static_cast<uint32_t>(shared_.size());
    }
  }
}

void FlowNetwork::detach(FlowId f) {
  for (const cost::LinkLoad& l : flows_[f].loads) {
    std::vector<OnLink>& on = on_link_[l.link];
    const auto it =
        std::find_if(on.begin(), on.end(), [&](const OnLink& o) { return o.flow == f; });
    if (it == on.end()) throw std::logic_error("FlowNetwork: a finished flow was not on its link");
    on.erase(it);  // keeps the others' order, so sums over the link do not depend on history
    if (on.size() == 1) {
      const uint32_t slot = shared_slot_[l.link] - 1;  // swap out of shared_
      shared_[slot] = shared_.back();
      shared_slot_[shared_[slot]] = slot + 1;
      shared_.pop_back();
      shared_slot_[l.link] = 0;
    }
  }
}

void FlowNetwork::progress(SimTime t) {
  const double dt = (t - now_).seconds();
  if (dt > 0) {
    for (FlowId f : active_)
      flows_[f].remaining = std::max(0.0, flows_[f].remaining - flows_[f].rate * dt);
  }
  now_ = t;
}

void FlowNetwork::reallocate() {
  // Weighted progressive filling: every unfrozen flow's rate is `filled`. A flow's own links
  // bound it at solo - filled; a shared link at its residual over its unfrozen flows' weight.
  std::vector<FlowId> unfrozen = reset_rates();
  for (uint32_t l : shared_) residual_[l] = capacity_[l];
  double filled = 0;
  while (!unfrozen.empty()) {
    const double step = fill_step(unfrozen, filled);
    if (std::isinf(step)) {  // flows whose loads weigh nothing are not limited by any link
      for (FlowId f : unfrozen) flows_[f].rate = step;
      break;
    }
    filled += step;
    freeze_full_links(step);
    unfrozen = raise(unfrozen, filled);
  }
  schedule_finishes();
}

std::vector<FlowNetwork::FlowId> FlowNetwork::reset_rates() {
  std::vector<FlowId> unfrozen;
  for (FlowId f : active_) {
    Flow& fl = flows_[f];
    fl.rate = 0;
    fl.frozen = false;
    if (fl.loads.empty())
      fl.rate = std::numeric_limits<double>::infinity();
    else
      unfrozen.push_back(f);
  }
  return unfrozen;
}

double FlowNetwork::fill_step(const std::vector<FlowId>& unfrozen, double filled) {
  double step = std::numeric_limits<double>::infinity();
  for (uint32_t l : shared_) {
    double w = 0;
    for (const OnLink& o : on_link_[l]) {
      if (!flows_[o.flow].frozen) w += o.weight;
    }
    weight_[l] = w;
    if (w > 0) step = std::min(step, residual_[l] / w);
  }
  for (FlowId f : unfrozen) step = std::min(step, flows_[f].solo - filled);
  return step;
}

// A link is full when what is left would not move its flows by a relative 1e-9.
void FlowNetwork::freeze_full_links(double step) {
  for (uint32_t l : shared_) {
    if (weight_[l] <= 0) continue;
    residual_[l] -= step * weight_[l];
    if (residual_[l] > 1e-9 * capacity_[l]) continue;
    for (const OnLink& o : on_link_[l]) flows_[o.flow].frozen = true;
  }
}

// A flow's own link is full when the flow is within a relative 1e-9 of its solo bound.
std::vector<FlowNetwork::FlowId> FlowNetwork::raise(const std::vector<FlowId>& unfrozen,
                                                    double filled) {
  std::vector<FlowId> still;
  for (FlowId f : unfrozen) {
    Flow& fl = flows_[f];
    fl.rate = filled;
    if (!std::isinf(fl.solo) && fl.solo - filled <= 1e-9 * fl.solo) fl.frozen = true;
    if (!fl.frozen) still.push_back(f);
  }
  return still;
}

void FlowNetwork::schedule_finishes() {
  next_ = kNever;
  for (FlowId f : active_) {
    Flow& fl = flows_[f];
    const double seconds = fl.remaining / fl.rate;
    fl.finish = now_ + SimTime{static_cast<int64_t>(std::ceil(seconds * 1e12))};
    next_ = std::min(next_, fl.finish);
  }
}

// --- ReplicaFolding ---------------------------------------------------------------------------

uint32_t RankSymmetry::count() const {
  uint32_t n = 1;
  for (const Axis& a : axes) n *= a.extent;
  return n;
}

uint32_t RankSymmetry::image(uint32_t rank, uint32_t shift) const {
  for (const Axis& a : axes) {
    const uint32_t digit = rank / a.stride % a.extent;
    const uint32_t by = shift % a.extent;
    shift /= a.extent;
    rank = rank - digit * a.stride + (digit + by) % a.extent * a.stride;
  }
  return rank;
}

ReplicaFolding::ReplicaFolding(RankSymmetry symmetry, size_t link_count)
    : symmetry_(std::move(symmetry)),
      kept_(link_count, 0),
      weight_(link_count, 0.0),
      bytes_(link_count, 0.0),
      own_(link_count, 0) {}

void ReplicaFolding::keep(const cost::LinkPlan& plan) {
  for (const cost::LinkPhase& ph : plan.phases) {
    for (const cost::LinkLoad& l : ph.loads) kept_[l.link] = 1;
  }
}

const cost::LinkPlan& ReplicaFolding::fold(const cost::LinkPlan& plan,
                                           const std::vector<uint32_t>& ranks, bool as_set,
                                           const PlanOf& plan_of) {
  std::unique_ptr<cost::LinkPlan>& slot = folded_[&plan];
  if (slot) return *slot;
  const std::vector<const cost::LinkPlan*> copies = copies_of(plan, ranks, as_set, plan_of);
  auto out = std::make_unique<cost::LinkPlan>(plan);
  for (size_t i = 0; i < plan.phases.size(); ++i) out->phases[i].loads = fold_phase(i, copies);
  slot = std::move(out);
  return *slot;
}

std::vector<const cost::LinkPlan*> ReplicaFolding::copies_of(const cost::LinkPlan& plan,
                                                             const std::vector<uint32_t>& ranks,
                                                             bool as_set,
                                                             const PlanOf& plan_of) const {
  auto key_of = [&](std::vector<uint32_t> r) {
    if (as_set) std::sort(r.begin(), r.end());
    return r;
  };
  const std::vector<uint32_t> own_key = key_of(ranks);
  std::vector<uint32_t> image(ranks.size());
  auto map = [&](const RankSymmetry& sym, uint32_t shift) {
    for (size_t i = 0; i < ranks.size(); ++i) image[i] = sym.image(ranks[i], shift);
  };
  // Axes along which the group is its own image (a data-parallel group shifted along data
  // parallelism) make no copies: enumerate the others only (a 1,024-rank group times every shift
  // would be slow at scale, and each would only find the group again).
  RankSymmetry moving;
  for (const RankSymmetry::Axis& a : symmetry_.axes) {
    map(RankSymmetry{{a}}, 1);
    if (a.extent > 1 && key_of(image) != own_key) moving.axes.push_back(a);
  }
  std::vector<const cost::LinkPlan*> copies{&plan};
  std::set<std::vector<uint32_t>> seen{own_key};
  for (uint32_t j = 1; j < moving.count(); ++j) {
    map(moving, j);
    if (!seen.insert(key_of(image)).second) continue;
    if (const cost::LinkPlan* p = plan_of(image)) copies.push_back(p);
  }
  return copies;
}

std::vector<cost::LinkLoad> ReplicaFolding::fold_phase(
    size_t i, const std::vector<const cost::LinkPlan*>& copies) {
  const cost::LinkPhase& rep = copies.front()->phases[i];
  for (const cost::LinkLoad& l : rep.loads) own_[l.link] = 1;
  std::vector<uint32_t> links;
  for (const cost::LinkPlan* p : copies) {
    if (i >= p->phases.size()) continue;
    const cost::LinkPhase& ph = p->phases[i];
    // A copy that moves more units per byte must run that much faster to keep the
    // representative's pace: its loads per representative unit scale with it (1 when symmetric).
    const double scale = rep.units_per_byte > 0 ? ph.units_per_byte / rep.units_per_byte : 1.0;
    for (const cost::LinkLoad& l : ph.loads) {
      if (!kept_[l.link] && !(own_[l.link] & 1)) continue;
      if (!(own_[l.link] & 2)) links.push_back(l.link);
      own_[l.link] |= 2;
      weight_[l.link] += scale * l.weight;
      bytes_[l.link] += scale * l.bytes;
    }
  }
  std::sort(links.begin(), links.end());
  std::vector<cost::LinkLoad> folded;
  folded.reserve(links.size());
  for (uint32_t l : links) {
    folded.push_back({l, bytes_[l], weight_[l]});
    weight_[l] = bytes_[l] = 0;
    own_[l] = 0;
  }
  for (const cost::LinkLoad& l : rep.loads) own_[l.link] = 0;
  return folded;
}

}  // namespace cs::sim
