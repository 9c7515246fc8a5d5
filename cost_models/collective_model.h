// The collective model: picks the algorithm and protocol NCCL would (the one its model says is
// fastest for this size, group and topology), or the forced one, and prices it.
//
// Plans (collective_algorithms.h) are built once per (type, algorithm, protocol, group) and
// cached; a plan's time is affine in the size (plus NCCL's channel ramp for small LL buffers), so
// choosing is cheap. The analytic level uses that time; the flow-level engine runs the same plan's
// phases over shared links (a small LL buffer gets the plan narrowed to its channels, slower
// phases). Limits: the choice is the fastest by clustersim's own timing, not NCCL's model (which
// nccl_tuning_table prints); validated on 8x H100 nccl-tests
// (validate/suites/nccl_tests_8xh100.yaml).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cost_models/collective_algorithms.h"
#include "topology/topology.h"

namespace cs::cost {

// As NCCL_ALGO / NCCL_PROTO: restrict the choice. Where the forced algorithm cannot run a
// collective (e.g. nvls for an all_gather, or across nodes), `strict` makes that an error;
// otherwise the collective falls back to the automatic choice, as a training job would need.
struct CollectiveOptions {
  std::optional<Algorithm> algorithm;
  std::optional<Protocol> protocol;
  bool strict = false;
};

struct CollectiveChoice {
  const CommPlan* plan = nullptr;  // owned by the model's cache
  SimTime time;                    // alone on the network
};

class CollectiveModel {
 public:
  CollectiveModel(const topo::Topology& topology, CollectiveParams params = {},
                  CollectiveOptions options = {});
  CollectiveModel(CollectiveModel&& other) noexcept;

  // Throws UserError when options are strict and the forced choice cannot run this collective.
  CollectiveChoice choose(ir::CollectiveType type, Bytes size,
                          const std::vector<ir::RankId>& ranks) const;
  SimTime time(ir::CollectiveType type, Bytes size, const std::vector<ir::RankId>& ranks) const {
    return choose(type, size, ranks).time;
  }
  CollectiveChoice p2p(ir::RankId src, ir::RankId dst, Bytes size) const;

  double link_capacity(uint32_t link) const {
    return cost::link_capacity(topology_, params_, link);
  }
  const topo::Topology& topology() const { return topology_; }
  const CollectiveParams& params() const { return params_; }
  const CollectiveOptions& options() const { return options_; }
  // nccl-tests' bus bandwidth factor: busbw = algbw x factor.
  static double bus_factor(ir::CollectiveType type, size_t n);

 private:
  struct Key {
    ir::CollectiveType type;
    Algorithm algorithm;
    Protocol protocol;
    std::vector<ir::RankId> ranks;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  // The cached plan, or nullptr (with why_not) when the algorithm cannot run it. Caller holds
  // mutex_.
  const CommPlan* plan(const Key& key, std::string* why_not) const;
  // A plan's time alone on the network: its closed form plus its channel ramp, if any.
  SimTime time_of(const CommPlan& plan, Bytes size) const;
  double ramp_slowdown(const CommPlan& plan, Bytes size) const;
  const CommPlan* on_fewer_channels(const CommPlan* plan, Bytes size) const;

  // Per (type, group): the plans to choose between, built on first use so that each call only
  // evaluates a few affine times. Looked up without copying the rank list.
  struct Choices {
    std::vector<const CommPlan*> forced;     // the forced algorithm (and protocol), if any can run
    std::vector<const CommPlan*> automatic;  // NCCL's own candidates (under a forced protocol);
                                             // built only when `forced` is empty
    std::string why_not;                     // why the forced or every candidate cannot run
  };
  struct GroupView {
    ir::CollectiveType type;
    const std::vector<ir::RankId>* ranks;
  };
  struct GroupKey {
    ir::CollectiveType type;
    std::vector<ir::RankId> ranks;
  };
  struct GroupHash {
    using is_transparent = void;
    size_t operator()(const GroupView& g) const;
    size_t operator()(const GroupKey& g) const { return (*this)(GroupView{g.type, &g.ranks}); }
  };
  struct GroupEq {
    using is_transparent = void;
    static GroupView view(const GroupKey& g) { return {g.type, &g.ranks}; }
    static GroupView view(const GroupView& g) { return g; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return view(a).type == view(b).type && *view(a).ranks == *view(b).ranks;
    }
  };
  const Choices& choices(ir::CollectiveType type,
                         const std::vector<ir::RankId>& ranks) const;  // caller holds mutex_

  const topo::Topology& topology_;
  CollectiveParams params_;
  CollectiveOptions options_;
  mutable std::mutex mutex_;
  struct Cached {
    std::unique_ptr<CommPlan> plan;  // null when the algorithm cannot run the collective
    std::string why_not;
    ChannelRamp ramp;
  };
  mutable std::unordered_map<const CommPlan*, ChannelRamp> ramps_;
  mutable std::map<std::pair<const CommPlan*, int64_t>, std::unique_ptr<CommPlan>> narrowed_;
  mutable std::unordered_map<Key, Cached, KeyHash> plans_;
  mutable std::unordered_map<uint64_t, std::unique_ptr<CommPlan>> p2p_plans_;
  mutable std::unordered_map<GroupKey, Choices, GroupHash, GroupEq> choices_;
};

}  // namespace cs::cost
