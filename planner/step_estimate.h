// The planner's pricing tier: a closed-form step time for a candidate layout, in microseconds of
// CPU, so that every layout that passes the memory bound can be ordered before any is simulated.
//
// What it adds up, from the same cost model the simulator uses:
//   per block and micro-batch  forward, recompute and backward ops (roofline compute) with their
//                              tensor-parallel and expert-parallel collectives on the compute
//                              stream, or the host's time to issue them where longer; TP overlap
//                              (tp_comm_overlap) hides all but one chunk of the smaller side of
//                              what the stack pipelines (model_work.h, TpOverlap);
//                              ring attention's KV pass hides under its step
//   pipeline                   1F1B / GPipe: sum of the stages + (m - 1) x the busiest; the
//                              schedule's fill (strategies/pipeline_schedule.h: interleaved
//                              divides it by v; ZB-H1 fills 2 (p - 1) weight-gradient passes of it,
//                              Qi et al. 2024); each stage boundary adds two transfers
//   data parallelism           the flavour's collectives over dp x cp (routed experts over
//                              dp x cp / ep), minus the backward they overlap with, plus the last
//                              bucket, as the flavour exposes them (strategies/data_parallel/,
//                              exposed_seconds); the optimizer step over the rank's (sharded)
//                              parameters
// Limits: no contention between overlapping collectives, no compute slowdown under overlapping
// communication, stages assumed to start together. It orders layouts; it does not report them:
// the planner simulates the best it prices (tests/planner_test.cpp checks that the order keeps
// the winner of a detailed evaluation of the top 50).
#pragma once

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "driver/simulation.h"
#include "planner/planner.h"

namespace cs::planner {

// A transformer with one decoder layer of each kind the model has (dense or MoE MLP, windowed or
// full attention; a hybrid stack's Mamba, attention, MLP and MoE layers), and for each of
// the model's blocks the block of the reduced model that does the same work: layers of one kind
// build the same ops, and building DeepSeek-V3's 61 layers of 256 experts for every shape the
// planner prices costs seconds. MLPs are kept whole (their layers differ).
struct ReducedModel {
  model::ModelSpec spec;
  std::vector<size_t> block_of;  // model block -> reduced block
};
ReducedModel reduce_layers(const model::ModelSpec& m);

class StepEstimator {
 public:
  // `platform` must outlive the estimator and be built from `base` (see driver::Platform).
  StepEstimator(const scenario::Scenario& base, const driver::Platform& platform);
  // Estimated step time in seconds. Not thread-safe (it caches per shape).
  double step_seconds(const Candidate& c);

 private:
  // Per block, one micro-batch, in seconds.
  struct BlockTimes {
    std::vector<double> forward, backward, weight_grad;  // backward includes recompute
    std::vector<int64_t> dense, routed;  // parameters per TP rank (routed: all experts)
    Bytes boundary;                      // activation crossing a stage boundary
  };
  using ShapeKey = std::tuple<int, int, int, int, int64_t, int,
                              bool>;  // tp, cp, ep, etp, micro-batch, recompute, tp overlap
  const BlockTimes& blocks(const Candidate& c);
  double collective(ir::CollectiveType type, int64_t bytes, const std::vector<ir::RankId>& ranks);
  // A pass over a block's ops (its forward, or its recompute and backward): the device runs them
  // back to back while the host issues them ahead (the engine starts a kernel no earlier than the
  // host's cumulative issue time, sim/engine.h), so the pass takes the longer of the two sums,
  // not each op's longer side. gpt-oss-120b at micro-batch 1 on 64 GB200 (1,485 ops per
  // micro-batch at 20 us of host each, many shorter on the GPU) was priced 6% above its
  // simulation that way, 1% below it this way (tests/step_estimate_test.cpp).
  struct PassTime {
    double device = 0, host = 0;
    PassTime& operator+=(const PassTime& o) {
      device += o.device;
      host += o.host;
      return *this;
    }
    double seconds() const { return std::max(device, host); }
  };
  PassTime op_seconds(const model::Op& op, const strategy::Layout& l, bool tp_overlap);
  double device_seconds(const model::Op& op, const strategy::Layout& l, bool tp_overlap);

  const scenario::Scenario& base_;
  const driver::Platform& platform_;
  ReducedModel reduced_;
  model::PrecisionInfo prec_{};
  std::map<ShapeKey, BlockTimes> shapes_;
  std::map<std::tuple<int, int64_t, std::vector<ir::RankId>>, double> collectives_;
};

}  // namespace cs::planner
