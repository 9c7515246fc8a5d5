#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cs::sim {

FlowNetwork::FlowNetwork(std::vector<double> capacities)
    : capacity_(std::move(capacities)),
      residual_(capacity_.size(), 0.0),
      weight_(capacity_.size(), 0.0),
      full_(capacity_.size(), 0) {}

FlowNetwork::FlowId FlowNetwork::start(SimTime now, double work, const std::vector<cost::LinkLoad>& loads) {
  for (const cost::LinkLoad& l : loads) {
    if (l.link >= capacity_.size() || capacity_[l.link] <= 0) throw std::logic_error("flow on a link the network does not know");
  }
  progress(now);
  const auto id = static_cast<FlowId>(flows_.size());
  flows_.push_back({work, 0.0, kNever, &loads});
  active_.push_back(id);
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
    for (FlowId f : done) flows_[f].remaining = 0;
    std::erase_if(active_, [&](FlowId f) { return flows_[f].finish <= t; });
    reallocate();
  }
  return done;
}

void FlowNetwork::progress(SimTime t) {
  const double dt = (t - now_).seconds();
  if (dt > 0) {
    for (FlowId f : active_) flows_[f].remaining = std::max(0.0, flows_[f].remaining - flows_[f].rate * dt);
  }
  now_ = t;
}

void FlowNetwork::reallocate() {
  // Weighted progressive filling over the links the active flows touch.
  std::vector<uint32_t> links;
  for (FlowId f : active_) {
    flows_[f].rate = 0;
    for (const cost::LinkLoad& l : *flows_[f].loads) {
      if (!full_[l.link]) links.push_back(l.link);
      full_[l.link] = 1;  // "seen" while collecting
    }
  }
  for (uint32_t l : links) {
    full_[l] = 0;
    residual_[l] = capacity_[l];
  }
  std::vector<FlowId> unfrozen;
  for (FlowId f : active_) {
    if (flows_[f].loads->empty()) flows_[f].rate = std::numeric_limits<double>::infinity();
    else unfrozen.push_back(f);
  }
  while (!unfrozen.empty()) {
    for (uint32_t l : links) weight_[l] = 0;
    for (FlowId f : unfrozen) {
      for (const cost::LinkLoad& l : *flows_[f].loads) weight_[l.link] += l.weight;
    }
    double step = std::numeric_limits<double>::infinity();
    for (uint32_t l : links) {
      if (weight_[l] > 0) step = std::min(step, residual_[l] / weight_[l]);
    }
    if (std::isinf(step)) {  // flows whose loads weigh nothing are not limited by any link
      for (FlowId f : unfrozen) flows_[f].rate = step;
      break;
    }
    for (uint32_t l : links) {
      residual_[l] -= step * weight_[l];
      // A link is full when what is left would not move its flows by a relative 1e-9.
      full_[l] = weight_[l] > 0 && residual_[l] <= 1e-9 * capacity_[l];
    }
    std::vector<FlowId> still;
    for (FlowId f : unfrozen) {
      flows_[f].rate += step;
      const bool blocked = std::any_of(flows_[f].loads->begin(), flows_[f].loads->end(),
                                       [&](const cost::LinkLoad& l) { return full_[l.link] != 0; });
      if (!blocked) still.push_back(f);
    }
    unfrozen.swap(still);
  }
  for (uint32_t l : links) {
    residual_[l] = 0;
    weight_[l] = 0;
    full_[l] = 0;
  }
  next_ = kNever;
  for (FlowId f : active_) {
    Flow& fl = flows_[f];
    const double seconds = fl.remaining / fl.rate;
    fl.finish = now_ + SimTime{static_cast<int64_t>(std::ceil(seconds * 1e12))};
    next_ = std::min(next_, fl.finish);
  }
}

}  // namespace cs::sim
