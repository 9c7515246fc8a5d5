#include "cost_models/collective_algorithms.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "common/error.h"

namespace cs::cost {
namespace {
CollectiveFits g_collective_fits;
}  // namespace

const CollectiveFits& collective_fits() { return g_collective_fits; }

ScopedCollectiveFits::ScopedCollectiveFits(const CollectiveFits& fits) : saved_(g_collective_fits) {
  g_collective_fits = fits;
}
ScopedCollectiveFits::~ScopedCollectiveFits() { g_collective_fits = saved_; }
namespace {

using ir::CollectiveType;

// The group as the topology sees it: members per node (nodes in order of first appearance,
// members in group order), the channels across nodes and where each channel enters a node.
struct GroupShape {
  std::vector<std::vector<int>> by_node;
  int channels = 1;
  std::vector<std::vector<int>> entry;  // [channel][node index]: the GPU beside the channel's NIC
  HopKind intra_hop = HopKind::nvlink;

  size_t nodes() const { return by_node.size(); }
  size_t max_per_node() const {
    size_t m = 0;
    for (const auto& v : by_node) m = std::max(m, v.size());
    return m;
  }
  bool uniform() const {
    return std::all_of(by_node.begin(), by_node.end(),
                       [&](const auto& v) { return v.size() == by_node[0].size(); });
  }
  // Node j's members in ring order for channel c: the entry GPU first, then the others in group
  // order, cyclically.
  std::vector<int> ring_order(size_t c, size_t j) const {
    const auto& m = by_node[j];
    if (nodes() == 1) return m;
    const auto start = std::find(m.begin(), m.end(), entry[c][j]) - m.begin();
    std::vector<int> out;
    for (size_t i = 0; i < m.size(); ++i)
      out.push_back(m[(static_cast<size_t>(start) + i) % m.size()]);
    return out;
  }
};

GroupShape shape_of(const topo::Topology& t, const std::vector<ir::RankId>& ranks) {
  GroupShape g;
  std::map<int, size_t> index_of_node;
  for (ir::RankId r : ranks) {
    const int node = t.node_of(static_cast<int>(r));
    auto [it, inserted] = index_of_node.emplace(node, g.by_node.size());
    if (inserted) g.by_node.emplace_back();
    g.by_node[it->second].push_back(static_cast<int>(r));
  }
  // Intra-node hops are NVLink when the group's first two same-node members meet over NVLink only.
  g.intra_hop = HopKind::pcie;
  for (const auto& m : g.by_node) {
    if (m.size() < 2) continue;
    const topo::Route route = t.route(m[0], m[1]);
    const bool nvlink_only = std::all_of(route.links.begin(), route.links.end(), [&](uint32_t l) {
      return t.link(l).kind == topo::LinkKind::nvlink;
    });
    g.intra_hop = nvlink_only ? HopKind::nvlink : HopKind::pcie;
    break;
  }
  if (g.nodes() == 1) return g;
  // One channel per distinct NIC that every node's members sit beside (the fewest over nodes).
  std::vector<std::vector<int>> nic_entries(g.nodes());
  for (size_t j = 0; j < g.nodes(); ++j) {
    std::map<topo::VertexId, int> first_member_of_nic;
    for (int r : g.by_node[j]) {
      const auto nic = t.nic_of(r);
      if (!nic)
        throw UserError("topology: GPU " + t.device(t.gpu(r)).name +
                        " has no NIC to reach other nodes");
      first_member_of_nic.emplace(*nic, r);
    }
    for (const auto& [nic, r] : first_member_of_nic) nic_entries[j].push_back(r);
  }
  g.channels = static_cast<int>(nic_entries[0].size());
  for (const auto& e : nic_entries) g.channels = std::min(g.channels, static_cast<int>(e.size()));
  g.entry.assign(static_cast<size_t>(g.channels), std::vector<int>(g.nodes()));
  for (int c = 0; c < g.channels; ++c) {
    for (size_t j = 0; j < g.nodes(); ++j)
      g.entry[static_cast<size_t>(c)][j] = nic_entries[j][static_cast<size_t>(c)];
  }
  return g;
}

// Accumulates one phase's link loads.
// A zero-filled index of `n` slots: calloc maps large blocks as zero pages, so a builder over a
// 131,072-GPU cluster pays only for the slots its group touches, not for every link.
class DenseIndex {
 public:
  explicit DenseIndex(size_t n)
      : slots_(static_cast<uint32_t*>(std::calloc(n > 0 ? n : 1, sizeof(uint32_t)))) {
    if (!slots_) throw std::bad_alloc();
  }
  // The value stored for `key` (0: none yet).
  uint32_t& operator[](size_t key) { return slots_.get()[key]; }

 private:
  struct Free {
    void operator()(uint32_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint32_t, Free> slots_;
};

// A phase's loads are kept in link order (finish() sorts them; kept ring hops come sorted). A
// function object, not a function, so that the sorts inline it.
constexpr auto by_link = [](const LinkLoad& a, const LinkLoad& b) { return a.link < b.link; };

class PhaseBuilder {
 public:
  struct SmHop {
    int gpu;
    uint32_t link;
    double weight;
  };
  static constexpr auto by_gpu = [](const SmHop& a, const SmHop& b) { return a.gpu < b.gpu; };
  // What hop() and exit_hop() added, at a line efficiency of 1: each link's payload, and the
  // SM-driven hops. A protocol's phase over the same hops is this with the weights divided by its
  // line efficiency.
  struct Hops {
    std::vector<LinkLoad> loads;
    std::vector<SmHop> sm_hops;
  };

  PhaseBuilder(const topo::Topology& t, const CollectiveParams& p, double line_efficiency)
      : t_(t), p_(p), line_efficiency_(line_efficiency), slot_(t.link_count()) {}
  PhaseBuilder(const topo::Topology& t, const CollectiveParams& p, double line_efficiency,
               const Hops& hops)
      : PhaseBuilder(t, p, line_efficiency) {
    loads_ = hops.loads;
    for (size_t i = 0; i < loads_.size(); ++i) {
      loads_[i].weight = loads_[i].bytes / line_efficiency_;
      slot_[loads_[i].link] = static_cast<uint32_t>(i + 1);
    }
    sm_hops_ = hops.sm_hops;
  }
  // Valid for a builder made with line efficiency 1 that only took hops; it gives them up. The
  // loads come in link order, the SM-driven hops by GPU (finish()'s orders), so that the phases
  // built over them sort nothing.
  Hops take_hops() {
    Hops h{std::move(loads_), std::move(sm_hops_)};
    std::sort(h.loads.begin(), h.loads.end(), by_link);
    std::stable_sort(h.sm_hops.begin(), h.sm_hops.end(), by_gpu);
    return h;
  }

  // Payload `weight` per unit over the route src -> dst. Inside a node the source GPU's SMs drive
  // the transfer; across nodes the NIC does.
  void hop(int src, int dst, double weight) {
    if (src == dst) return;
    const topo::Route r = t_.route(src, dst);
    for (uint32_t l : r.links) add(l, weight);
    if (t_.node_of(src) == t_.node_of(dst) && !r.links.empty())
      sm_hops_.push_back({src, r.links.front(), weight});
  }
  // Leaving a node on a channel's rail: over NVLink to the NIC's GPU first when needed (PXN).
  void exit_hop(int last, int nic_gpu, int next_entry, double weight) {
    hop(last, nic_gpu, weight);
    hop(nic_gpu, next_entry, weight);
  }
  // Loads directly on one link (NVLS: GPU to switch and back).
  void raw(uint32_t link, double bytes, double weight) {
    LinkLoad& l = load(link);
    l.bytes += bytes;
    l.weight += weight;
  }

  // `passes_per_unit`: buffer passes the GPUs make per unit of work, charged on their SM-driven
  // egress links in proportion to the payload each carries. Once: the loads move into the phase.
  LinkPhase finish(double units_per_byte, double passes_per_unit) {
    const double pass_rate = p_.pass_efficiency * p_.memory_bandwidth.value;
    // GPUs in ascending order, each GPU's hops in the order they were added (same sums, same order
    // as per-GPU lists would give).
    if (!std::is_sorted(sm_hops_.begin(), sm_hops_.end(), by_gpu))
      std::stable_sort(sm_hops_.begin(), sm_hops_.end(), by_gpu);
    for (size_t first = 0; first < sm_hops_.size();) {
      size_t last = first;
      double total = 0;
      for (; last < sm_hops_.size() && sm_hops_[last].gpu == sm_hops_[first].gpu; ++last)
        total += sm_hops_[last].weight;
      for (size_t i = first; i < last; ++i) {
        const double extra = sm_hops_[i].weight / total * link_capacity(t_, p_, sm_hops_[i].link) *
                             passes_per_unit / pass_rate;
        load(sm_hops_[i].link).weight += extra;
      }
      first = last;
    }
    // The builder is done with its loads: they become the phase's.
    std::vector<LinkLoad> loads = std::move(loads_);
    if (!std::is_sorted(loads.begin(), loads.end(), by_link))
      std::sort(loads.begin(), loads.end(), by_link);
    LinkPhase phase;
    phase.units_per_byte = units_per_byte;
    phase.loads = std::move(loads);
    for (const LinkLoad& load : phase.loads) {
      phase.seconds_per_unit =
          std::max(phase.seconds_per_unit, load.weight / link_capacity(t_, p_, load.link));
    }
    return phase;
  }

 private:
  void add(uint32_t link, double payload) { raw(link, payload, payload / line_efficiency_); }
  LinkLoad& load(uint32_t link) {
    uint32_t& slot = slot_[link];
    if (slot == 0) {
      loads_.push_back({link, 0, 0});
      slot = static_cast<uint32_t>(loads_.size());
    }
    return loads_[slot - 1];
  }

  const topo::Topology& t_;
  const CollectiveParams& p_;
  double line_efficiency_;
  // A ring over thousands of GPUs adds a load per hop and link: indexed densely by link (slot - 1
  // in loads_), sorted once in finish().
  std::vector<LinkLoad> loads_;
  DenseIndex slot_;
  std::vector<SmHop> sm_hops_;  // SM-driven hops inside a node, in the order added
};

SimTime steps_latency(int64_t steps, HopKind hop, Algorithm a, Protocol p) {
  return SimTime{steps * step_latency(hop, a, p).ps};
}

SimTime us(double v) { return SimTime::from_us(v); }

// NCCL 2.28's latency of a network step: with one GPU per node every step is exposed and NCCL
// uses the tree's network figure (tuning.cc, "ppn=1").
SimTime network_step(const GroupShape& g, Algorithm a, Protocol p) {
  const bool one_per_node = g.max_per_node() == 1;
  return step_latency(HopKind::network, one_per_node ? Algorithm::tree : a, p);
}

// Scales a phase so that its bus bandwidth (units per second; units are bus bytes) is at most `cap`
// bytes/s: NCCL's llMaxBw cap on ring LL. Weights grow with it, so the flow level agrees.
void cap_bus_bandwidth(LinkPhase& phase, double cap) {
  if (phase.seconds_per_unit <= 0 || cap <= 0) return;
  const double bus = 1.0 / phase.seconds_per_unit;
  if (bus <= cap) return;
  const double r = bus / cap;
  phase.seconds_per_unit *= r;
  phase.loads = phase.loads.scaled(r);
}

// Rings over the group, one per channel, each carrying 1/k of the work. `closed` = false leaves
// out the hop back to the start (a broadcast chain).
void add_rings(PhaseBuilder& b, const GroupShape& g, bool closed) {
  const double w = 1.0 / g.channels;
  for (size_t c = 0; c < static_cast<size_t>(g.channels); ++c) {
    std::vector<std::vector<int>> orders;
    for (size_t j = 0; j < g.nodes(); ++j) orders.push_back(g.ring_order(c, j));
    for (size_t j = 0; j < g.nodes(); ++j) {
      const auto& o = orders[j];
      for (size_t i = 0; i + 1 < o.size(); ++i) b.hop(o[i], o[i + 1], w);
      const bool last_node = j + 1 == g.nodes();
      if (last_node && !closed) continue;
      const int next = orders[(j + 1) % g.nodes()].front();
      if (g.nodes() == 1)
        b.hop(o.back(), next, w);
      else
        b.exit_hop(o.back(), o.front(), next, w);
    }
  }
}

struct Built {
  CommPlan plan;
  bool ok = true;
  std::string why_not;
};

Built not_possible(std::string why) { return {{}, false, std::move(why)}; }

// plan_collective is asked for every algorithm, protocol and collective of a group in turn (up to
// a dozen plans), so what depends on the group alone is kept for the last groups, per thread: a
// group of 131,072 GPUs is shaped and walked once rather than a dozen times. Two are kept because
// an MoE step alternates between two large groups (the dense parameters' data-parallel group and
// the experts' one, a GPU per node).
struct LastGroup {
  uint64_t topology = 0;  // Topology::version(): an address could be a later topology's
  std::vector<ir::RankId> ranks;
  GroupShape shape;
  // The rings' hops at line efficiency 1, loads sorted by link: open (a broadcast chain) and
  // closed. A ring loads the same links whatever the protocol (it scales them) and the collective
  // (it sets the units).
  std::optional<PhaseBuilder::Hops> ring_hops[2];
  // Ring phases finished from those hops, by everything finish() reads: all_gather and
  // reduce_scatter share theirs.
  struct RingPhase {
    bool closed;
    CollectiveParams params;
    double line_efficiency, units, passes;
    LinkPhase phase;
  };
  std::vector<RingPhase> ring_phases;
};

LastGroup& last_group(const topo::Topology& t, const std::vector<ir::RankId>& ranks) {
  thread_local std::array<LastGroup, 2> kept;
  thread_local size_t newest = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (kept[i].topology == t.version() && kept[i].ranks == ranks) {
      newest = i;
      return kept[i];
    }
  }
  GroupShape shape = shape_of(t, ranks);  // may throw: nothing kept then
  newest = (newest + 1) % kept.size();    // replaces the older one
  LastGroup& g = kept[newest];
  g = {};
  g.topology = t.version();
  g.ranks = ranks;
  g.shape = std::move(shape);
  return g;
}

LinkPhase ring_phase(const topo::Topology& t, const CollectiveParams& p, LastGroup& group,
                     bool closed, double line_efficiency, double units, double passes) {
  for (const auto& r : group.ring_phases) {
    if (r.closed == closed && r.line_efficiency == line_efficiency && r.units == units &&
        r.passes == passes && r.params == p)
      return r.phase;
  }
  std::optional<PhaseBuilder::Hops>& hops = group.ring_hops[closed ? 1 : 0];
  if (!hops) {
    PhaseBuilder b(t, p, 1.0);
    add_rings(b, group.shape, closed);
    hops = b.take_hops();
  }
  PhaseBuilder b(t, p, line_efficiency, *hops);
  group.ring_phases.push_back({closed, p, line_efficiency, units, passes, b.finish(units, passes)});
  return group.ring_phases.back().phase;
}

Built ring(const topo::Topology& t, const CollectiveParams& p, CollectiveType type, Protocol proto,
           LastGroup& group, ChannelRamp* ramp) {
  CommPlan plan;
  const GroupShape& g = group.shape;
  const size_t n = group.ranks.size();
  const double nd = static_cast<double>(n);
  const bool broadcast = type == CollectiveType::broadcast;
  double units = 1.0, passes = 1.0;
  int64_t steps = static_cast<int64_t>(n) - 1;
  if (type == CollectiveType::all_reduce) {
    units = 2.0 * (nd - 1) / nd;  // bus bytes per rank
    passes = 2.0 / units;         // read the input, write the output
    steps = 2 * (static_cast<int64_t>(n) - 1);
  } else if (!broadcast) {
    units = (nd - 1) / nd;
    passes = 1.0 / units;
  }
  plan.phases.push_back(
      ring_phase(t, p, group, !broadcast, protocol_bandwidth_factor(proto), units, passes));
  // Units are bus bytes (nccl-tests' busbw = units per buffer byte x algbw), so the bus rate is 1 /
  // seconds_per_unit.
  if (proto == Protocol::ll) {
    cap_bus_bandwidth(plan.phases.back(),
                      ll_max_bus_bandwidth(p.arch, static_cast<int>(g.nodes())) * 1e9);
    // One channel per 512 threads x 8 B x nRanks of buffer (NCCL 2.28 enqueue.cc, ring LL).
    if (ramp)
      *ramp = {static_cast<double>(kNccl228.ll_max_threads * kNccl228.ll_thread_threshold) * nd,
               p.ll_channel_rate.value};
  }
  // Of a ring's n hops, N cross nodes: that share of the steps pays the network latency. Steps
  // inside a node floor at NCCL's network post overhead when the ring crosses nodes.
  const auto nodes = static_cast<int64_t>(g.nodes());
  const int64_t inter =
      nodes > 1 ? (steps * nodes + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n) : 0;
  SimTime intra = step_latency(g.intra_hop, Algorithm::ring, proto);
  if (nodes > 1) {
    const double overhead = kNccl228.net_overhead_intel_us *
                            (proto == Protocol::simple ? kNccl228.net_overhead_simple_factor : 1.0);
    intra = std::max(intra, us(overhead));
  }
  plan.latency = p.launch_overhead + SimTime{(steps - inter) * intra.ps} +
                 SimTime{inter * network_step(g, Algorithm::ring, proto).ps};
  return {std::move(plan), true, {}};
}

Built tree(const topo::Topology& t, const CollectiveParams& p, CollectiveType type, Protocol proto,
           const GroupShape& g) {
  if (type != CollectiveType::all_reduce) return not_possible("tree implements all_reduce only");
  if (g.nodes() < 2)
    return not_possible("tree needs a group spanning several nodes (NCCL uses it between nodes)");
  CommPlan plan;
  // NCCL 2.28: tree all-reduce busBw x 0.92; LL / 3.8; LL128 x 120/128 across nodes.
  double factor = kNccl228.tree_all_reduce_factor;
  if (proto == Protocol::ll) factor *= kNccl228.tree_ll_factor;
  if (proto == Protocol::ll128) factor *= kNccl228.tree_ll128_factor_nodes;
  PhaseBuilder b(t, p, factor);
  const size_t nodes = g.nodes();
  const double w = 1.0 / g.channels;
  for (size_t c = 0; c < static_cast<size_t>(g.channels); ++c) {
    for (size_t j = 0; j < nodes; ++j) {  // chain inside the node, reduce up and broadcast down
      const auto o = g.ring_order(c, j);
      for (size_t i = 0; i + 1 < o.size(); ++i) {
        b.hop(o[i + 1], o[i], w);
        b.hop(o[i], o[i + 1], w);
      }
    }
    // Two binary trees over the nodes, each carrying half: a heap and its mirror image.
    for (int tree_index = 0; tree_index < 2; ++tree_index) {
      for (size_t j = 1; j < nodes; ++j) {
        size_t child = j, parent = (j - 1) / 2;
        if (tree_index == 1) {
          child = nodes - 1 - j;
          parent = nodes - 1 - (j - 1) / 2;
        }
        const int from = g.entry[c][child], to = g.entry[c][parent];
        b.hop(from, to, w / 2);
        b.hop(to, from, w / 2);
      }
    }
  }
  plan.phases.push_back(b.finish(1.0, 2.0));
  const auto per_node = static_cast<int64_t>(g.max_per_node());
  int64_t depth = 0;  // NCCL's log2i: floor(log2 nodes)
  for (size_t v = nodes; v > 1; v >>= 1) ++depth;
  plan.latency = p.launch_overhead +
                 SimTime{2 * (steps_latency(per_node - 1, g.intra_hop, Algorithm::tree, proto) +
                              SimTime{depth * network_step(g, Algorithm::tree, proto).ps})
                                 .ps};
  return {std::move(plan), true, {}};
}

Built nvls(const topo::Topology& t, const CollectiveParams& p, CollectiveType type,
           const GroupShape& g) {
  if (type != CollectiveType::all_reduce) return not_possible("nvls implements all_reduce only");
  if (g.nodes() != 1)
    return not_possible("nvls reduces inside one node's NVSwitch; the group spans " +
                        std::to_string(g.nodes()) + " nodes");
  const auto& m = g.by_node[0];
  if (!t.has_nvls(t.node_of(m[0])))
    return not_possible(
        "the node's NVSwitch does not reduce in the switch (NVLS needs NVSwitch gen 3, e.g. DGX "
        "H100)");
  CommPlan plan;
  PhaseBuilder b(t, p, 1.0);
  const double w = 1.0 / p.nvls_efficiency;
  for (size_t i = 0; i < m.size(); ++i) {
    const topo::Route out = t.route(m[i], m[(i + 1) % m.size()]);
    const topo::Route in = t.route(m[(i + m.size() - 1) % m.size()], m[i]);
    if (out.links.size() != 2 ||
        t.device(t.link_target(out.links[0])).kind != topo::DeviceKind::nvswitch) {
      return not_possible("nvls needs every pair of the group's GPUs to meet through the NVSwitch");
    }
    b.raw(out.links.front(), 1.0, w);
    b.raw(in.links.back(), 1.0, w);
  }
  plan.phases.push_back(b.finish(1.0, 0.0));
  // NCCL 2.28: NVLS latency is its NVLink step alone (25 us); the fit adds the pipeline's fill.
  plan.latency = p.launch_overhead +
                 step_latency(HopKind::nvlink, Algorithm::nvls, Protocol::simple) +
                 p.nvls_pipeline_latency;
  return {std::move(plan), true, {}};
}

Built hierarchical(const topo::Topology& t, const CollectiveParams& p, CollectiveType type,
                   Protocol proto, const GroupShape& g) {
  if (type != CollectiveType::all_reduce)
    return not_possible("hierarchical implements all_reduce only");
  if (!g.uniform())
    return not_possible("hierarchical needs the same number of group members on every node");
  CommPlan plan;
  const size_t local = g.by_node[0].size(), nodes = g.nodes();
  const double ld = static_cast<double>(local), nd = static_cast<double>(nodes);
  const double factor = protocol_bandwidth_factor(proto);
  SimTime latency = p.launch_overhead;
  auto intra_phase = [&] {
    PhaseBuilder b(t, p, factor);
    for (const auto& m : g.by_node) {
      for (size_t i = 0; i < local; ++i) b.hop(m[i], m[(i + 1) % local], 1.0);
    }
    plan.phases.push_back(b.finish((ld - 1) / ld, ld / (ld - 1)));
    latency += steps_latency(static_cast<int64_t>(local) - 1, g.intra_hop, Algorithm::ring, proto);
  };
  if (local > 1) intra_phase();  // reduce-scatter inside each node
  if (nodes > 1) {               // all-reduce of each 1/L shard among the GPUs of one local index
    PhaseBuilder b(t, p, factor);
    for (size_t l = 0; l < local; ++l) {
      for (size_t j = 0; j < nodes; ++j) b.hop(g.by_node[j][l], g.by_node[(j + 1) % nodes][l], 1.0);
    }
    plan.phases.push_back(b.finish(2.0 * (nd - 1) / nd / ld, 0.0));
    latency += steps_latency(2 * (static_cast<int64_t>(nodes) - 1), HopKind::network,
                             Algorithm::ring, proto);
  }
  if (local > 1) intra_phase();  // all-gather inside each node
  plan.latency = latency;
  return {std::move(plan), true, {}};
}

// PAT (NCCL 2.23+): all_gather / reduce_scatter over one GPU per node. Each rank's NIC carries
// (n-1)/n S as on the ring, at NCCL's 0.75 of the ring's bus bandwidth; latency grows with
// log2(nodes) x netLat / 3.5 plus 2.8 us per rank (NCCL 2.28 tuning.cc).
Built pat(const topo::Topology& t, const CollectiveParams& p, CollectiveType type,
          LastGroup& group) {
  const GroupShape& g = group.shape;
  const size_t n = group.ranks.size();
  if (type != CollectiveType::all_gather && type != CollectiveType::reduce_scatter)
    return not_possible("pat implements all_gather and reduce_scatter only");
  if (!nccl_pat_enabled(static_cast<int>(n), static_cast<int>(g.nodes()))) {
    return not_possible(
        "pat needs one GPU per node (NCCL 2.28 enables it only when nNodes == nRanks); the group "
        "has " +
        std::to_string(n) + " GPUs on " + std::to_string(g.nodes()) + " nodes");
  }
  CommPlan plan;
  const double nd = static_cast<double>(n);
  // The ring's links (the group's closed rings, walked once for all its algorithms).
  plan.phases.push_back(
      ring_phase(t, p, group, true, kNccl228.pat_factor, (nd - 1) / nd, nd / (nd - 1)));
  int64_t log_nodes = 0;
  for (size_t v = g.nodes(); v > 1; v >>= 1) ++log_nodes;
  const double net =
      nccl_step_latency_us(HopKind::network, Algorithm::tree, Protocol::simple);  // ppn = 1
  plan.latency = p.launch_overhead +
                 us(static_cast<double>(log_nodes) * net / kNccl228.pat_log_latency_divisor +
                    nd * kNccl228.pat_per_rank_latency_us);
  return {std::move(plan), true, {}};
}

Built direct(const topo::Topology& t, const CollectiveParams& p, CollectiveType type,
             const std::vector<ir::RankId>& ranks, const GroupShape& g) {
  if (type != CollectiveType::all_to_all) return not_possible("direct implements all_to_all only");
  CommPlan plan;
  PhaseBuilder b(t, p, 1.0);
  const double w = 1.0 / static_cast<double>(ranks.size());
  for (ir::RankId i : ranks) {
    for (ir::RankId j : ranks) b.hop(static_cast<int>(i), static_cast<int>(j), w);
  }
  plan.phases.push_back(b.finish(1.0, 1.0));
  const HopKind widest = g.nodes() > 1 ? HopKind::network : g.intra_hop;
  plan.latency = p.launch_overhead + step_latency(widest, Algorithm::ring, Protocol::simple);
  return {std::move(plan), true, {}};
}

void total_up(CommPlan& plan) {
  plan.seconds_per_byte = 0;
  for (const LinkPhase& ph : plan.phases)
    plan.seconds_per_byte += ph.units_per_byte * ph.seconds_per_unit;
}

}  // namespace

double ChannelRamp::extra_seconds(double bytes, double seconds_per_byte) const {
  if (channel_bytes <= 0 || channel_rate <= 0 || bytes <= 0) return 0;
  const double channels = std::max(1.0, std::floor(bytes / channel_bytes));
  return std::max(0.0, bytes / (channels * channel_rate) - bytes * seconds_per_byte);
}

double link_capacity(const topo::Topology& topology, const CollectiveParams& params,
                     uint32_t link) {
  const topo::Link& l = topology.link(link);
  double eff = 1.0;
  switch (l.kind) {
    case topo::LinkKind::nvlink:
      eff = params.nvlink_efficiency;
      break;
    case topo::LinkKind::pcie:
      eff = params.pcie_efficiency;
      break;
    case topo::LinkKind::infiniband:
      eff = params.infiniband_efficiency;
      break;
    case topo::LinkKind::ethernet:
      eff = params.ethernet_efficiency;
      break;
    case topo::LinkKind::socket:
      eff = params.socket_efficiency;
      break;
  }
  return l.bandwidth.value * eff;
}

std::optional<CommPlan> plan_collective(const topo::Topology& topology,
                                        const CollectiveParams& params, CollectiveType type,
                                        Algorithm algorithm, Protocol protocol,
                                        const std::vector<ir::RankId>& ranks, std::string* why_not,
                                        ChannelRamp* ramp) {
  auto fail = [&](std::string why) -> std::optional<CommPlan> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  if (!supports(algorithm, protocol)) {
    return fail("algorithm " + std::string(to_string(algorithm)) + " has no " +
                std::string(to_string(protocol)) + " protocol");
  }
  if (ranks.size() < 2) {
    CommPlan plan;
    plan.algorithm = algorithm;
    plan.protocol = protocol;
    return plan;  // nothing to move
  }
  LastGroup& group = last_group(topology, ranks);
  const GroupShape& g = group.shape;
  Built b;
  switch (algorithm) {
    case Algorithm::ring:
      if (type == CollectiveType::all_to_all)
        return fail("ring does not implement all_to_all; use direct");
      b = ring(topology, params, type, protocol, group, ramp);
      break;
    case Algorithm::tree:
      b = tree(topology, params, type, protocol, g);
      break;
    case Algorithm::nvls:
      b = nvls(topology, params, type, g);
      break;
    case Algorithm::pat:
      b = pat(topology, params, type, group);
      break;
    case Algorithm::hierarchical:
      b = hierarchical(topology, params, type, protocol, g);
      break;
    case Algorithm::direct:
      b = direct(topology, params, type, ranks, g);
      break;
    case Algorithm::p2p:
      return fail("p2p is for send/recv, not collectives");
  }
  if (!b.ok) return fail(b.why_not);
  b.plan.algorithm = algorithm;
  b.plan.protocol = protocol;
  b.plan.channels = g.channels;
  total_up(b.plan);
  return std::move(b.plan);
}

CommPlan plan_p2p(const topo::Topology& topology, const CollectiveParams& params, ir::RankId src,
                  ir::RankId dst) {
  CommPlan plan;
  plan.algorithm = Algorithm::p2p;
  plan.protocol = Protocol::simple;
  if (src == dst) return plan;
  PhaseBuilder b(topology, params, 1.0);
  b.hop(static_cast<int>(src), static_cast<int>(dst), 1.0);
  plan.phases.push_back(b.finish(1.0, 1.0));
  plan.latency = params.launch_overhead +
                 topology.latency(topology.route(static_cast<int>(src), static_cast<int>(dst)));
  total_up(plan);
  return plan;
}

}  // namespace cs::cost
