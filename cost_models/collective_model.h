// Analytic NCCL-style collective model ("nccl_ring_analytic").
//
// NCCL's tuning model (src/graph/tuning.cc) prices a collective as latency x steps + bytes /
// bandwidth. For a ring over n ranks with a buffer of S bytes (nccl-tests "size"):
//   all_reduce:      2(n-1) steps, each rank sends 2(n-1)/n * S
//   all_gather:       (n-1) steps, each rank sends  (n-1)/n * S
//   reduce_scatter:   (n-1) steps, each rank sends  (n-1)/n * S
//   broadcast:        (n-1) steps (pipelined chain), each rank sends S
//   all_to_all:       (n-1) steps (direct), each rank sends (n-1)/n * S
// time = base_latency + steps * (step_latency + hop latency) + sent_bytes / ring_bandwidth
// where ring_bandwidth is the slowest hop of the ring (rank i -> rank i+1 along its topology
// route), each link derated to what NCCL achieves on it (link_efficiency below).
// Across nodes NCCL runs one ring per NIC (channels), so a cross-node hop carries 1/k of the
// traffic on each of k NICs: its bandwidth is k x the derated NIC bandwidth.
// Limits: one protocol (Simple), no tree/NVLS, no contention between concurrent collectives.
#pragma once

#include <vector>

#include "cost_models/cost_model.h"
#include "topology/topology.h"

namespace cs::cost {

struct CollectiveParams {
  // Fixed cost of a collective launch (kernel launch, proxy set-up). Uncalibrated default: the
  // order of NCCL's own base latencies (several us). The vTrain 2x A100 rows show 44 us at 1 MiB,
  // which this single-protocol model does not yet reproduce; fitting it is the network issue's job.
  SimTime base_latency = SimTime::from_us(10.0);
  // Per ring step synchronisation (flag write + poll across the link). Uncalibrated default.
  SimTime step_latency = SimTime::from_us(1.0);
  // Achievable fraction of a link's per-direction bandwidth. NCCL models NVLink4 at 20.6 GB/s per
  // 25 GB/s link (0.824) and NVLink3 at 20 of 25 (0.80) (tuning.cc SM90/SM80 per-channel figures);
  // PCIe Gen4/Gen5 at 24/31.5 and 48/63 GB/s (0.76); NDR InfiniBand busbw 46-49 of 50 GB/s (0.94).
  double nvlink_efficiency = 0.824;
  double pcie_efficiency = 0.76;
  double network_efficiency = 0.94;
};

class CollectiveModel {
 public:
  CollectiveModel(const topo::Topology& topology, CollectiveParams params = {})
      : topology_(topology), params_(params) {}

  SimTime time(ir::CollectiveType type, Bytes size, const std::vector<ir::RankId>& ranks) const;
  SimTime p2p_time(ir::RankId src, ir::RankId dst, Bytes size) const;
  // Per-rank ring bandwidth: the slowest derated hop in group order, a cross-node hop multiplied
  // by the number of parallel rings (one per NIC, see network_channels).
  BytesPerSecond ring_bandwidth(const std::vector<ir::RankId>& ranks) const;
  // nccl-tests' bus bandwidth factor: busbw = algbw * factor.
  int network_channels(const std::vector<ir::RankId>& ranks) const;
  static double bus_factor(ir::CollectiveType type, size_t n);
  const CollectiveParams& params() const { return params_; }

 private:
  BytesPerSecond effective_bandwidth(const topo::Route& r) const;
  const topo::Topology& topology_;
  CollectiveParams params_;
};

}  // namespace cs::cost
