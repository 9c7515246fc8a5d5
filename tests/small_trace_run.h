// A two-rank step small enough to derive its trace by hand, with a cost model that puts its
// collectives and transfers on two links (for the link utilisation counters). Shared by the Chrome
// and Perfetto trace tests and (the cost model) the bottleneck tests.
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "fixed_cost_model.h"
#include "sim/chrome_trace.h"
#include "sim/engine.h"

namespace cs::test {

// Two links: 0 is NVLink, 1 InfiniBand, at the given bytes/s (2 MB/s and 1 MB/s unless told).
// Every collective loads link 0 with one byte per byte, every transfer link 1; durations stay
// FixedCostModel's (bytes read as us).
class TwoLinkCostModel final : public cost::CostModel {
 public:
  explicit TwoLinkCostModel(double nvlink_bytes_per_s = 2e6, double infiniband_bytes_per_s = 1e6)
      : capacity_{nvlink_bytes_per_s, infiniband_bytes_per_s} {
    coll_.phases.push_back({1.0, {{0, 1.0, 1.0}}, 0.0});
    xfer_.phases.push_back({1.0, {{1, 1.0, 1.0}}, 0.0});
  }
  SimTime compute(const ir::ComputeOp& op) const override { return fixed_.compute(op); }
  cost::CommCost collective(const ir::CollectiveCall& c,
                            const std::vector<ir::RankId>& r) const override {
    return {fixed_.collective(c, r).time, &coll_};
  }
  cost::CommCost transfer(const ir::Transfer& t) const override {
    return {fixed_.transfer(t).time, &xfer_};
  }
  size_t link_count() const override { return 2; }
  double link_capacity(uint32_t link) const override { return capacity_[link == 0 ? 0 : 1]; }

 private:
  FixedCostModel fixed_;
  cost::LinkPlan coll_, xfer_;
  double capacity_[2];
};

// Rank r: +1 GiB activations, compute 10 us, then an all-reduce of "100 us" on dp.grad; rank 0
// sends "30 us" to rank 1 on pp.send after its compute (rank 1 posts the receive at once).
// Times: compute [0, 10] on both; all-reduce [10, 110]; transfer [10, 40] (the send is ready at
// 10).
struct SmallRun {
  ir::TaskGraph g{2};
  TwoLinkCostModel costs;
  std::vector<sim::LinkInfo> links{{"nvlink"}, {"infiniband"}};
  sim::Timeline tl;
  SmallRun() {
    const auto compute = g.add_stream("compute");
    const auto grad = g.add_stream("dp.grad");
    const auto send = g.add_stream("pp.send");
    const auto recv = g.add_stream("pp.recv");
    const auto call = g.new_collective(ir::CollectiveType::all_reduce, Bytes{100}, g.group({0, 1}));
    const auto x = g.new_transfer(0, 1, Bytes{30});
    for (ir::RankId r = 0; r < 2; ++r) {
      g.add_memory(r, compute, int64_t{1} << 30, ir::MemoryCategory::activations,
                   g.label("act", ir::Phase::forward));
      const auto c = g.add_compute(r, compute, op_us(10), g.label("fwd", ir::Phase::forward, 0, 0));
      g.add_dependency(c, g.add_collective(r, grad, call, g.label("ar", ir::Phase::backward)));
      if (r == 0)
        g.add_dependency(c, g.add_send(0, send, x, g.label("send", ir::Phase::forward)));
      else
        g.add_recv(1, recv, x, g.label("recv", ir::Phase::forward));
    }
    g.finalize();
    tl = sim::Engine(g, costs).run();
  }
  sim::TraceOptions options() const {
    sim::TraceOptions o;
    o.costs = &costs;
    o.links = &links;
    return o;
  }
  nlohmann::json trace(const sim::TraceOptions& o) const {
    std::ostringstream out;
    sim::write_chrome_trace(out, g, tl, o);
    return nlohmann::json::parse(out.str());
  }
};

}  // namespace cs::test
