// NCCL's vocabulary and the constants of ONE release's tuning model: NCCL 2.28 (2.28.9, the
// release under /usr/local/cuda), src/graph/tuning.cc (ncclTunerConstantsDefaults,
// ncclTopoTuneModel, ncclTopoGetAlgoTime) and src/enqueue.cc (channel and thread tuning).
// Every figure below is that file's number, named here; nothing is taken from another release.
//
// NCCL's model: latency[coll][algo][proto] = baseLat + steps x hwLat of the hop kind, bandwidth =
// channels x per-channel bandwidth x protocol refinements; time = latency + bytes / bandwidth.
// clustersim keeps NCCL's per-step latencies and refinements but prices the fixed part with a
// measured host launch overhead instead of baseLat (CollectiveParams, collective_algorithms.h),
// and bandwidths with its own link model; `nccl_tuning_table` reproduces NCCL's own table.
// Limits: CollNet (SHARP in the network) and NVLSTree are listed for completeness, not modelled.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.h"
#include "cost_models/device_spec.h"
#include "taskgraph/task_graph.h"

namespace cs::cost {

// ring: NCCL's ring, one per channel. tree: NCCL's double binary tree between nodes with a chain
// inside each node. nvls: NVLink SHARP, reduction inside the NVSwitch (single node). pat: NCCL's
// Parallel Aggregated Trees for all_gather / reduce_scatter (2.23+), one GPU per node only.
// hierarchical: intra-node reduce-scatter, inter-node all-reduce per rail, intra-node all-gather
// (never picked automatically; NCCL has no such algorithm, frameworks build it from sub-groups).
// direct: every rank sends to every other at once (all-to-all). p2p: one send/recv pair.
enum class Algorithm : uint8_t { ring, tree, nvls, pat, hierarchical, direct, p2p };
enum class Protocol : uint8_t { ll, ll128, simple };
inline constexpr int kAlgorithmCount = 7;
inline constexpr int kProtocolCount = 3;

std::string_view to_string(Algorithm a);
std::string_view to_string(Protocol p);

enum class HopKind : uint8_t { nvlink, pcie, network };
// NCCL's compute-capability rows (tuning.cc: Volta, Ampere, Hopper, Blackwell) are indexed by the
// device's GpuArch (device_spec.h), in that order.

// NCCL's algorithm rows in tuning.cc order (only those clustersim names; CollNet left out).
enum class NcclAlgo : uint8_t { tree, ring, nvls, nvls_tree, pat };
inline constexpr int kNcclAlgoCount = 5;

// The constants of NCCL 2.28's tuning model. Units: us for latencies, GB/s for bandwidths.
struct NcclTuningConstants {
  std::string_view release;
  std::string_view source;
  // baseLatencies[algo][LL, LL128, Simple] (tuning.cc, ncclTunerConstantsDefaults).
  std::array<std::array<double, 3>, kNcclAlgoCount> base_latency_us;
  // hwLatencies[NVLINK | PCI | NET][algo][proto]: per step of the algorithm on that hop kind.
  std::array<std::array<std::array<double, 3>, kNcclAlgoCount>, 3> hw_latency_us;
  // llMaxBws[arch][N1 | N2 | N4+ nodes]: cap on ring LL bus bandwidth (multi-node rows are by CPU
  // vendor in NCCL; clustersim uses the Intel row, as on DGX systems).
  std::array<std::array<double, 3>, 4> ll_max_bw;
  std::array<std::array<double, 3>, 4> ll_max_bw_multi_node_intel;
  // perChMaxRingLL128Bws, perChMaxTreeBws, perChMaxTreeLL128Bws [arch][N1 | N2 | N4+].
  std::array<std::array<double, 3>, 4> per_channel_max_ring_ll128_bw;
  std::array<std::array<double, 3>, 4> per_channel_max_tree_bw;
  std::array<std::array<double, 3>, 4> per_channel_max_tree_ll128_bw;
  // nvlsEfficiency[arch]: NVLS bus bandwidth per channel relative to the NVLink channel.
  std::array<double, 4> nvls_efficiency;
  // Model refinements of ncclTopoTuneModel.
  double ring_ll_factor;              // ring LL: busBw x 0.5 (8-byte lines, 4 bytes of data)
  double ring_ll128_factor;           // ring LL128: busBw x 0.92 (empirical; not 120/128 = 0.9375)
  double tree_all_reduce_factor;      // tree all-reduce: busBw x 0.92
  double tree_ll_factor;              // tree LL: busBw / 3.8
  double tree_ll128_factor_one_node;  // tree LL128 on one node: 7/9
  double tree_ll128_factor_nodes;     // tree LL128 across nodes: 120/128
  double pat_factor;                  // PAT: busBw x 0.75
  double pat_log_latency_divisor;     // PAT latency: log2(nodes) x netLat / 3.5 ...
  double pat_per_rank_latency_us;     // ... + nRanks x 2.8 us (the "linear part")
  double net_overhead_intel_us;       // inter-node ring step floor: 1 us (Intel CPU), x3 for Simple
  double net_overhead_simple_factor;
  double ring_simple_plateau_factor;  // multi-node ring Simple all-reduce: latency x 1.4 (sm80+)
  // enqueue.cc channel tuning: a ring/tree collective uses the most channels c (and threads t)
  // with bytes >= c x t x threshold; thresholds per thread in bytes (ring LL: x nRanks).
  int ll_max_threads;           // NCCL_LL_MAX_NTHREADS
  int ll128_max_threads;        // NCCL_LL128_MAX_NTHREADS
  int simple_max_threads;       // NCCL_SIMPLE_MAX_NTHREADS
  int ll_thread_threshold;      // NCCL_LL_THREAD_THRESHOLD
  int ll128_thread_threshold;   // NCCL_LL128_THREAD_THRESHOLD
  int simple_thread_threshold;  // NCCL_SIMPLE_THREAD_THRESHOLD
};

extern const NcclTuningConstants kNccl228;

// kNccl228's figures for clustersim's algorithms (hierarchical, direct and p2p use ring's).
double nccl_base_latency_us(Algorithm a, Protocol p);
double nccl_step_latency_us(HopKind hop, Algorithm a, Protocol p);
SimTime step_latency(HopKind hop, Algorithm a, Protocol p);
// NCCL 2.28's protocol factor on bus bandwidth for ring (LL 0.5, LL128 0.92, Simple 1).
double protocol_bandwidth_factor(Protocol p);
// Ring LL's bus-bandwidth cap (llMaxBws) for an architecture and node count, GB/s.
double ll_max_bus_bandwidth(GpuArch arch, int nodes);
// NCCL 2.28's PAT condition (tuning.cc ncclPatEnable with NCCL_PAT_ENABLE unset): SM 6.0+, one
// GPU per node (nNodes == nRanks), network without device offload.
bool nccl_pat_enabled(int ranks, int nodes);

// Whether NCCL offers this algorithm with this protocol (NVLS, PAT, direct and p2p: Simple only).
bool supports(Algorithm a, Protocol p);

// NCCL 2.28's own latency/bandwidth table (what NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING prints),
// recomputed from kNccl228 for a communicator. `ring_bus_bw` is NCCL's ring graph bandwidth
// (channels x per-channel bwIntra or bwInter, GB/s); `nvls_bus_bw` the NVLS graph's (0: none).
struct NcclCommShape {
  int ranks = 0;
  int nodes = 1;
  GpuArch arch = GpuArch::hopper;
  HopKind intra_hop = HopKind::nvlink;
  int channels = 1;
  double ring_bus_bw = 0;
  double tree_bus_bw = 0;
  int nvls_channels = 0;
  double nvls_bus_bw = 0;
};
struct NcclTableEntry {
  ir::CollectiveType type;
  NcclAlgo algo;
  Protocol proto;
  double latency_us = 0;
  double bandwidth = 0;  // NCCL's "algorithm" bandwidth (GB/s); 0 = not available
};
std::vector<NcclTableEntry> nccl_tuning_table(const NcclCommShape& shape);
// NCCL's predicted time (ncclTopoGetAlgoTime, one operation): latency + bytes / (1000 x bw) us,
// with the tree correction factors and the ring Simple plateau.
double nccl_model_time_us(const NcclTableEntry& e, const NcclCommShape& shape, Bytes bytes);
std::string_view to_string(NcclAlgo a);

}  // namespace cs::cost
