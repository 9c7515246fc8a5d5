#include "cost_models/collective_model.h"

#include <array>
#include <cmath>

#include "common/error.h"

namespace cs::cost {
namespace {

// The algorithms NCCL chooses between on its own for a collective (hierarchical only when forced).
std::vector<Algorithm> automatic_algorithms(ir::CollectiveType type) {
  switch (type) {
    case ir::CollectiveType::all_reduce:
      return {Algorithm::ring, Algorithm::tree, Algorithm::nvls};
    case ir::CollectiveType::all_to_all:
      return {Algorithm::direct, Algorithm::ring};  // ring: only a measured curve has one
    case ir::CollectiveType::all_gather:
    case ir::CollectiveType::reduce_scatter:
      return {Algorithm::ring, Algorithm::pat};  // pat: one GPU per node only
    default:
      return {Algorithm::ring};
  }
}

}  // namespace

CollectiveModel::CollectiveModel(const topo::Topology& topology, CollectiveParams params,
                                 CollectiveOptions options)
    : topology_(topology), params_(params), options_(options) {}

CollectiveModel::CollectiveModel(CollectiveModel&& other) noexcept
    : topology_(other.topology_), params_(other.params_), options_(other.options_) {
  std::lock_guard lock(other.mutex_);
  plans_ = std::move(other.plans_);
  p2p_plans_ = std::move(other.p2p_plans_);
  ramps_ = std::move(other.ramps_);
  narrowed_ = std::move(other.narrowed_);
  choices_ = std::move(other.choices_);
}

size_t CollectiveModel::KeyHash::operator()(const Key& k) const {
  uint64_t h = GroupHash{}(GroupView{k.type, &k.ranks});
  h = (h ^ static_cast<uint64_t>(k.algorithm)) * 1099511628211ULL;
  h = (h ^ static_cast<uint64_t>(k.protocol)) * 1099511628211ULL;
  return static_cast<size_t>(h);
}

size_t CollectiveModel::GroupHash::operator()(const GroupView& g) const {
  // FNV-1a over the ranks in four interleaved lanes, then over the lanes and the type: every
  // collective looks its group up, and one FNV chain over a 131,072-rank group is 131,072
  // dependent multiplies; four lanes run side by side.
  constexpr uint64_t kBasis = 1469598103934665603ULL, kPrime = 1099511628211ULL;
  const std::vector<ir::RankId>& r = *g.ranks;
  std::array<uint64_t, 4> lane{kBasis, kBasis + 1, kBasis + 2, kBasis + 3};
  size_t i = 0;
  for (; i + 4 <= r.size(); i += 4) {
    for (size_t k = 0; k < 4; ++k) lane[k] = (lane[k] ^ r[i + k]) * kPrime;
  }
  for (; i < r.size(); ++i) lane[0] = (lane[0] ^ r[i]) * kPrime;
  uint64_t h = kBasis;
  for (uint64_t v : {lane[0], lane[1], lane[2], lane[3], static_cast<uint64_t>(g.type),
                     static_cast<uint64_t>(r.size())})
    h = (h ^ v) * kPrime;
  return static_cast<size_t>(h);
}

const CommPlan* CollectiveModel::plan(const Key& key, std::string* why_not) const {
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    Cached c;
    std::optional<CommPlan> built;
    if (params_.measured_latency && params_.measured_bus_bandwidth) {
      // Measured on this machine: latency + bus bytes / bus bandwidth, no link loads.
      CommPlan p;
      p.algorithm = key.algorithm;
      p.protocol = key.protocol;
      if (key.ranks.size() > 1) {
        p.latency = *params_.measured_latency;
        p.seconds_per_byte =
            bus_factor(key.type, key.ranks.size()) / params_.measured_bus_bandwidth->value;
      }
      if (key.algorithm == Algorithm::ring && key.protocol == Protocol::simple)
        built = p;
      else
        c.why_not = "collectives were measured as one curve (ring/Simple) on this machine";
    } else {
      built = plan_collective(topology_, params_, key.type, key.algorithm, key.protocol, key.ranks,
                              &c.why_not, &c.ramp);
    }
    if (built) {
      c.plan = std::make_unique<CommPlan>(std::move(*built));
      if (c.ramp.channel_bytes > 0) ramps_.emplace(c.plan.get(), c.ramp);
    }
    it = plans_.emplace(key, std::move(c)).first;
  }
  if (!it->second.plan && why_not) *why_not = it->second.why_not;
  return it->second.plan.get();
}

const CollectiveModel::Choices& CollectiveModel::choices(
    ir::CollectiveType type, const std::vector<ir::RankId>& ranks) const {
  if (auto it = choices_.find(GroupView{type, &ranks}); it != choices_.end()) return it->second;
  Choices c;
  auto collect = [&](const std::vector<Algorithm>& algorithms, std::vector<const CommPlan*>& out) {
    for (Algorithm a : algorithms) {
      for (int pi = 0; pi < kProtocolCount; ++pi) {
        const auto p = static_cast<Protocol>(pi);
        if (options_.protocol && p != *options_.protocol) continue;
        if (!supports(a, p)) {
          c.why_not = "algorithm " + std::string(to_string(a)) + " has no " +
                      std::string(to_string(p)) + " protocol";
          continue;
        }
        if (const CommPlan* plan = this->plan({type, a, p, ranks}, &c.why_not)) out.push_back(plan);
      }
    }
  };
  if (options_.algorithm) collect({*options_.algorithm}, c.forced);
  const std::string why_forced = c.why_not;
  // NCCL's own candidates only when nothing forced applies (building plans over large groups
  // costs).
  if (c.forced.empty()) collect(automatic_algorithms(type), c.automatic);
  if (c.forced.empty() && c.automatic.empty() && !options_.strict) {
    // Only a forced protocol can leave nothing (e.g. LL for an all_to_all): drop the protocol.
    for (Algorithm a : automatic_algorithms(type)) {
      if (const CommPlan* plan = this->plan({type, a, Protocol::simple, ranks}, nullptr))
        c.automatic.push_back(plan);
    }
  }
  if (options_.algorithm && c.forced.empty()) c.why_not = why_forced;
  return choices_.emplace(GroupKey{type, ranks}, std::move(c)).first->second;
}

CollectiveChoice CollectiveModel::choose(ir::CollectiveType type, Bytes size,
                                         const std::vector<ir::RankId>& ranks) const {
  std::lock_guard lock(mutex_);
  const Choices& c = choices(type, ranks);
  auto best_of = [&](const std::vector<const CommPlan*>& plans) {
    CollectiveChoice best;
    for (const CommPlan* p : plans) {
      const SimTime t = time_of(*p, size);
      if (!best.plan || t < best.time) best = {p, t};
    }
    if (best.plan) best.plan = on_fewer_channels(best.plan, size);
    return best;
  };
  if (options_.algorithm) {
    if (!c.forced.empty()) return best_of(c.forced);
    if (options_.strict) {
      throw UserError("cannot run " + std::string(ir::to_string(type)) + " over " +
                      std::to_string(ranks.size()) + " GPUs with algorithm " +
                      std::string(to_string(*options_.algorithm)) +
                      (options_.protocol ? "/" + std::string(to_string(*options_.protocol)) : "") +
                      ": " + c.why_not);
    }
  }
  if (c.automatic.empty())
    throw UserError("cannot run " + std::string(ir::to_string(type)) + ": " + c.why_not);
  return best_of(c.automatic);
}

double CollectiveModel::ramp_slowdown(const CommPlan& plan, Bytes size) const {
  const auto it = ramps_.find(&plan);
  if (it == ramps_.end() || plan.seconds_per_byte <= 0) return 1.0;
  const double bytes = static_cast<double>(size.count);
  return 1.0 +
         it->second.extra_seconds(bytes, plan.seconds_per_byte) / (bytes * plan.seconds_per_byte);
}

SimTime CollectiveModel::time_of(const CommPlan& plan, Bytes size) const {
  const double r = ramp_slowdown(plan, size);
  if (r <= 1.0) return plan.time(size);
  return plan.latency +
         SimTime::from_seconds(static_cast<double>(size.count) * plan.seconds_per_byte * r);
}

// The plan as it runs on fewer channels: the same link loads, each phase slower by `r`, so that
// the flow level (which runs the phases) and the closed form agree. Cached per channel count.
const CommPlan* CollectiveModel::on_fewer_channels(const CommPlan* plan, Bytes size) const {
  const double r = ramp_slowdown(*plan, size);
  if (r <= 1.0) return plan;
  const ChannelRamp& ramp = ramps_.at(plan);
  const auto channels = static_cast<int64_t>(
      std::max(1.0, std::floor(static_cast<double>(size.count) / ramp.channel_bytes)));
  auto& slot = narrowed_[{plan, channels}];
  if (!slot) {
    auto p = std::make_unique<CommPlan>(*plan);
    for (LinkPhase& ph : p->phases) {
      ph.seconds_per_unit *= r;
      ph.loads = ph.loads.scaled(r);
    }
    p->seconds_per_byte *= r;
    slot = std::move(p);
  }
  // On c channels the slowdown is 1 / (c x channel rate x seconds_per_byte) whatever the size, so
  // one narrowed plan per channel count is exact at both levels.
  return slot.get();
}

CollectiveChoice CollectiveModel::p2p(ir::RankId src, ir::RankId dst, Bytes size) const {
  const uint64_t key = (static_cast<uint64_t>(src) << 32) | dst;
  std::lock_guard lock(mutex_);
  auto it = p2p_plans_.find(key);
  if (it == p2p_plans_.end())
    it = p2p_plans_.emplace(key, std::make_unique<CommPlan>(plan_p2p(topology_, params_, src, dst)))
             .first;
  return {it->second.get(), it->second->time(size)};
}

double CollectiveModel::bus_factor(ir::CollectiveType type, size_t n) {
  const double nd = static_cast<double>(n);
  switch (type) {
    case ir::CollectiveType::all_reduce:
      return 2.0 * (nd - 1) / nd;
    case ir::CollectiveType::broadcast:
      return 1.0;
    default:
      return (nd - 1) / nd;
  }
}

}  // namespace cs::cost
