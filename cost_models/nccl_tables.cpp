#include "cost_models/nccl_tables.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace cs::cost {

// NCCL 2.28.9, src/graph/tuning.cc and src/include/device.h (tag v2.28.9-1 of NVIDIA/nccl).
// Rows in NcclAlgo order: tree, ring, nvls, nvls_tree, pat; columns LL, LL128, Simple.
const NcclTuningConstants kNccl228 = {
    .release = "NCCL 2.28.9",
    .source = "NVIDIA/nccl v2.28.9-1 src/graph/tuning.cc, src/enqueue.cc, src/include/device.h",
    .base_latency_us =
        {{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}}},
    .hw_latency_us = {{
        {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}}},      // NVLink
        {{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}}},         // PCIe
        {{{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14.0}}},  // network
    }},
    .ll_max_bw =
        {{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}},
    // Multi-node rows of llMaxBws are indexed by CPU (index1 = 0 for Intel):
    // Volta-N1/Intel-N2/Intel-N4.
    .ll_max_bw_multi_node_intel =
        {{{39.0, 39.0, 20.4}, {39.0, 39.0, 20.4}, {39.0, 39.0, 20.4}, {39.0, 39.0, 20.4}}},
    .per_channel_max_ring_ll128_bw =
        {{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 34.6, 73.4}}},
    .per_channel_max_tree_bw =
        {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}},
    .per_channel_max_tree_ll128_bw =
        {{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}},
    .nvls_efficiency = {0.0, 0.0, 0.85, 0.74},
    .ring_ll_factor = 0.5,
    .ring_ll128_factor = 0.92,
    .tree_all_reduce_factor = 0.92,
    .tree_ll_factor = 1.0 / 3.8,
    .tree_ll128_factor_one_node = 7.0 / 9.0,
    .tree_ll128_factor_nodes = 120.0 / 128.0,
    .pat_factor = 0.75,
    .pat_log_latency_divisor = 3.5,
    .pat_per_rank_latency_us = 2.8,
    .net_overhead_intel_us = 1.0,
    .net_overhead_simple_factor = 3.0,
    .ring_simple_plateau_factor = 1.4,
    .ll_max_threads = 512,
    .ll128_max_threads = 640,
    .simple_max_threads = 512,
    .ll_thread_threshold = 8,
    .ll128_thread_threshold = 8,
    .simple_thread_threshold = 64,
};

namespace {

// tuning.cc treeCorrectionFactor[proto][log2(bytes / 64)], 64 B .. 256 MiB.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

NcclAlgo nccl_row(Algorithm a) {
  switch (a) {
    case Algorithm::tree:
      return NcclAlgo::tree;
    case Algorithm::nvls:
      return NcclAlgo::nvls;
    case Algorithm::pat:
      return NcclAlgo::pat;
    default:
      return NcclAlgo::ring;
  }
}

int log2i(int v) {
  int l = 0;
  while (v >>= 1) ++l;
  return l;
}

size_t node_index(int nodes) { return nodes <= 2 ? static_cast<size_t>(nodes - 1) : 2; }

}  // namespace

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::ring:
      return "ring";
    case Algorithm::tree:
      return "tree";
    case Algorithm::nvls:
      return "nvls";
    case Algorithm::pat:
      return "pat";
    case Algorithm::hierarchical:
      return "hierarchical";
    case Algorithm::direct:
      return "direct";
    case Algorithm::p2p:
      return "p2p";
  }
  return "?";
}

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::ll:
      return "LL";
    case Protocol::ll128:
      return "LL128";
    case Protocol::simple:
      return "Simple";
  }
  return "?";
}

std::string_view to_string(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::tree:
      return "Tree";
    case NcclAlgo::ring:
      return "Ring";
    case NcclAlgo::nvls:
      return "NVLS";
    case NcclAlgo::nvls_tree:
      return "NVLSTree";
    case NcclAlgo::pat:
      return "PAT";
  }
  return "?";
}

double nccl_base_latency_us(Algorithm a, Protocol p) {
  return kNccl228.base_latency_us[static_cast<size_t>(nccl_row(a))][static_cast<size_t>(p)];
}

double nccl_step_latency_us(HopKind hop, Algorithm a, Protocol p) {
  return kNccl228.hw_latency_us[static_cast<size_t>(hop)][static_cast<size_t>(nccl_row(a))]
                               [static_cast<size_t>(p)];
}

SimTime step_latency(HopKind hop, Algorithm a, Protocol p) {
  return SimTime::from_us(nccl_step_latency_us(hop, a, p));
}

double protocol_bandwidth_factor(Protocol p) {
  switch (p) {
    case Protocol::ll:
      return kNccl228.ring_ll_factor;
    case Protocol::ll128:
      return kNccl228.ring_ll128_factor;
    case Protocol::simple:
      return 1.0;
  }
  return 1.0;
}

double ll_max_bus_bandwidth(GpuArch arch, int nodes) {
  const auto a = static_cast<size_t>(arch);
  return nodes <= 1 ? kNccl228.ll_max_bw[a][0]
                    : kNccl228.ll_max_bw_multi_node_intel[a][node_index(nodes)];
}

bool nccl_pat_enabled(int ranks, int nodes) { return nodes == ranks; }

bool supports(Algorithm a, Protocol p) {
  switch (a) {
    case Algorithm::ring:
    case Algorithm::tree:
    case Algorithm::hierarchical:
      return true;
    case Algorithm::nvls:
    case Algorithm::pat:
    case Algorithm::direct:
    case Algorithm::p2p:
      return p == Protocol::simple;
  }
  return false;
}

namespace {

// What every entry of one communicator's table shares, and the collective's step count.
struct TableContext {
  const NcclCommShape& s;
  ir::CollectiveType type;
  size_t arch;
  size_t n2;      // node_index(nodes): the per-channel caps' column
  double ppn;     // ranks per node
  double ll_max;  // LL's bus bandwidth cap
  HopKind hw;     // the hop a single-node ring's broadcast pays
  bool ag_rs;     // all-gather or reduce-scatter
  int nsteps;     // the algorithm's steps over the ranks
};

// NCCL 2.28's table rows: broadcast is ring only; all-gather and reduce-scatter ring, PAT and
// NVLS; all-reduce everything but PAT; NVLS, NVLSTree and PAT Simple only.
bool in_table(ir::CollectiveType type, NcclAlgo a, Protocol p) {
  const bool ag_rs =
      type == ir::CollectiveType::all_gather || type == ir::CollectiveType::reduce_scatter;
  if (type == ir::CollectiveType::broadcast && a != NcclAlgo::ring) return false;
  if (ag_rs && a != NcclAlgo::pat && a != NcclAlgo::ring && a != NcclAlgo::nvls) return false;
  if (type == ir::CollectiveType::all_reduce && a == NcclAlgo::pat) return false;
  return !((a == NcclAlgo::nvls || a == NcclAlgo::nvls_tree || a == NcclAlgo::pat) &&
           p != Protocol::simple);
}

// NVLS needs 2+ channels; NVLSTree is disabled on one node; NVLS across nodes needs CollNet.
double nvls_bus_bandwidth(const TableContext& c, NcclAlgo a) {
  const NcclCommShape& s = c.s;
  if (s.nvls_channels < 2 || s.nvls_bus_bw <= 0 || s.nodes > 1 || a == NcclAlgo::nvls_tree)
    return 0;
  const double per_ch = s.nvls_bus_bw / s.nvls_channels;
  double intra =
      per_ch * kNccl228.nvls_efficiency[c.arch] * (s.nvls_channels - 1) / s.nvls_channels;
  intra *= c.type == ir::CollectiveType::all_reduce ? 2.0 : (c.ppn - 1) / c.ppn;
  if (c.ag_rs) return 0;  // NVLS all-gather/reduce-scatter within a node: not modelled here
  return s.nvls_channels * std::min(intra, per_ch);
}

// The entry's bandwidth (NCCL's busBw per algorithm and protocol, then as algorithm bandwidth).
double table_bandwidth(const TableContext& c, NcclAlgo a, Protocol p) {
  const NcclTuningConstants& k = kNccl228;
  const NcclCommShape& s = c.s;
  double bus = a == NcclAlgo::tree ? s.tree_bus_bw : s.ring_bus_bw;
  if (a == NcclAlgo::nvls || a == NcclAlgo::nvls_tree) bus = nvls_bus_bandwidth(c, a);
  if (a == NcclAlgo::ring && p == Protocol::ll) bus = std::min(c.ll_max, bus * k.ring_ll_factor);
  if (a == NcclAlgo::ring && p == Protocol::ll128)
    bus = std::min(bus * k.ring_ll128_factor,
                   s.channels * k.per_channel_max_ring_ll128_bw[c.arch][c.n2]);
  if (a == NcclAlgo::tree && c.type == ir::CollectiveType::all_reduce)
    bus = std::min(bus * k.tree_all_reduce_factor,
                   s.channels * k.per_channel_max_tree_bw[c.arch][c.n2]);
  if (a == NcclAlgo::tree && p == Protocol::ll) bus = std::min(bus / 3.8, c.ll_max);
  if (a == NcclAlgo::tree && p == Protocol::ll128)
    bus = std::min(bus * (s.nodes == 1 ? k.tree_ll128_factor_one_node : k.tree_ll128_factor_nodes),
                   s.channels * k.per_channel_max_tree_ll128_bw[c.arch][c.n2]);
  if (a == NcclAlgo::tree && s.nodes == 1) bus = 0;  // tree is an inter-node algorithm
  if (a == NcclAlgo::pat) bus = nccl_pat_enabled(s.ranks, s.nodes) ? bus * k.pat_factor : 0;
  if (a == NcclAlgo::ring || a == NcclAlgo::nvls || a == NcclAlgo::nvls_tree) {
    if (!(c.ag_rs && a != NcclAlgo::ring)) bus *= static_cast<double>(s.ranks) / c.nsteps;
  } else if (!c.ag_rs) {
    bus *= 0.5;
  }
  return bus;
}

// A ring's latency: its steps inside nodes (floored at the network post overhead when the ring
// crosses nodes) and across them; a broadcast pays one hop.
double ring_latency_us(const TableContext& c, Protocol p, double intra_lat, double inter_lat) {
  const NcclTuningConstants& k = kNccl228;
  const NcclCommShape& s = c.s;
  const auto ar = static_cast<size_t>(NcclAlgo::ring), pr = static_cast<size_t>(p);
  if (c.type == ir::CollectiveType::broadcast)
    return k.hw_latency_us[static_cast<size_t>(c.hw)][ar][pr];  // sameChannels
  double net_overhead = 0;
  if (s.nodes > 1)
    net_overhead =
        k.net_overhead_intel_us * (p == Protocol::simple ? k.net_overhead_simple_factor : 1.0);
  intra_lat = std::max(intra_lat, net_overhead);
  const int inter_steps = s.nodes == 1                               ? 0
                          : c.type == ir::CollectiveType::all_reduce ? 2 * (s.nodes - 1)
                                                                     : s.nodes - 1;
  return (c.nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
}

// The entry's latency: NCCL's base latency plus its hardware latencies per step.
double table_latency_us(const TableContext& c, NcclAlgo a, Protocol p) {
  const NcclTuningConstants& k = kNccl228;
  const NcclCommShape& s = c.s;
  const auto ar = static_cast<size_t>(a), pr = static_cast<size_t>(p);
  const double base = k.base_latency_us[ar][pr];
  const double intra_lat = k.hw_latency_us[static_cast<size_t>(s.intra_hop)][ar][pr];
  const double inter_lat = c.ppn == 1 ? k.hw_latency_us[2][static_cast<size_t>(NcclAlgo::tree)][pr]
                                      : k.hw_latency_us[2][ar][pr];
  switch (a) {
    case NcclAlgo::ring:
      return base + ring_latency_us(c, p, intra_lat, inter_lat);
    case NcclAlgo::tree:
      if (c.type != ir::CollectiveType::all_reduce) return base;
      return base + 2 * ((s.ranks / s.nodes - 1) * intra_lat + log2i(s.nodes) * inter_lat);
    case NcclAlgo::nvls:
      return intra_lat + (s.nodes > 1 ? inter_lat : 0);
    case NcclAlgo::nvls_tree:
      return base + (intra_lat + 2 * log2i(s.nodes) * inter_lat);  // NCCL's sum order
    case NcclAlgo::pat:
      return base + (log2i(s.nodes) * (inter_lat / k.pat_log_latency_divisor) +
                     s.ranks * k.pat_per_rank_latency_us);
    default:
      return base;
  }
}

}  // namespace

std::vector<NcclTableEntry> nccl_tuning_table(const NcclCommShape& s) {
  std::vector<NcclTableEntry> out;
  for (auto type : {ir::CollectiveType::broadcast, ir::CollectiveType::all_gather,
                    ir::CollectiveType::reduce_scatter, ir::CollectiveType::all_reduce}) {
    const bool ag_rs =
        type == ir::CollectiveType::all_gather || type == ir::CollectiveType::reduce_scatter;
    const int nsteps = type == ir::CollectiveType::all_reduce ? 2 * (s.ranks - 1)
                       : ag_rs                                ? s.ranks - 1
                                                              : s.ranks;
    const TableContext c{s,
                         type,
                         static_cast<size_t>(s.arch),
                         node_index(s.nodes),
                         static_cast<double>(s.ranks) / s.nodes,
                         ll_max_bus_bandwidth(s.arch, s.nodes),
                         s.nodes == 1 ? s.intra_hop : HopKind::network,
                         ag_rs,
                         nsteps};
    for (int ai = 0; ai < kNcclAlgoCount; ++ai) {
      for (int pi = 0; pi < kProtocolCount; ++pi) {
        const auto a = static_cast<NcclAlgo>(ai);
        const auto p = static_cast<Protocol>(pi);
        if (!in_table(type, a, p)) continue;
        NcclTableEntry e{type, a, p};
        e.bandwidth = table_bandwidth(c, a, p);
        e.latency_us = table_latency_us(c, a, p);
        out.push_back(e);
      }
    }
  }
  return out;
}

double nccl_model_time_us(const NcclTableEntry& e, const NcclCommShape& shape, Bytes bytes) {
  double bw = e.bandwidth, lat = e.latency_us;
  if (bw <= 0) return -1;
  const int64_t units = bytes.count >> 6;
  const int log_size =
      units > 0 ? log2i(static_cast<int>(std::min<int64_t>(units, INT32_MAX))) : -1;
  if (e.algo == NcclAlgo::tree && e.type == ir::CollectiveType::all_reduce && log_size >= 0 &&
      log_size < 23) {
    bw *= kTreeCorrection[static_cast<size_t>(e.proto)][log_size];
  }
  if (e.algo == NcclAlgo::ring && e.proto == Protocol::simple && shape.nodes > 1 &&
      e.type == ir::CollectiveType::all_reduce &&
      bytes.count / (static_cast<int64_t>(shape.channels) * shape.ranks) >= 64) {
    lat *= kNccl228.ring_simple_plateau_factor;
  }
  return lat + static_cast<double>(bytes.count) / (1000.0 * bw);
}

}  // namespace cs::cost
