// Two H100s of one DGX node, each a bf16 GEMM of 8192^3 and then an all-reduce of 256 MiB over
// NVLink, simulated through clustersim's public API. Prints the timeline and checks what must
// hold: the all-reduce starts when both GEMMs have ended, on both ranks at once, and the step
// ends with it.
#include <cstdio>

#include "cost_models/analytic_cost_model.h"
#include "cost_models/device_spec.h"
#include "driver/simulation.h"
#include "sim/engine.h"
#include "topology/cluster_spec.h"

int main() {
  using namespace cs;
  const topo::Topology topology = topo::build_preset("hgx_h100_2gpu", 1);
  const cost::DeviceSpec& h100 = cost::find_device("h100_sxm");
  const cost::AnalyticCostModel costs(
      cost::ComputeModel(h100), cost::CollectiveModel(topology, driver::collective_params(h100)));

  ir::TaskGraph g(2);
  const auto compute = g.add_stream("compute");
  const auto comm = g.add_stream("comm");
  const int64_t n = 8192;
  ir::ComputeOp gemm;
  gemm.op = ir::OpClass::gemm;
  gemm.m = gemm.n = gemm.k = n;
  gemm.flops = Flops{2.0 * n * n * n};
  gemm.bytes = Bytes{3 * n * n * 2};
  const auto call =
      g.new_collective(ir::CollectiveType::all_reduce, Bytes{int64_t{256} << 20}, g.group({0, 1}));
  ir::TaskId gemms[2], reduces[2];
  for (ir::RankId r = 0; r < 2; ++r) {
    gemms[r] = g.add_compute(r, compute, gemm, g.label("gemm", ir::Phase::forward));
    reduces[r] = g.add_collective(r, comm, call, g.label("all_reduce", ir::Phase::backward));
    g.add_dependency(gemms[r], reduces[r]);
  }
  g.finalize();

  const sim::Timeline tl = sim::Engine(g, costs).run();
  for (ir::RankId r = 0; r < 2; ++r) {
    std::printf("rank %u: gemm %.3f..%.3f ms, all_reduce %.3f..%.3f ms\n", r,
                tl.tasks[gemms[r]].start.ms(), tl.tasks[gemms[r]].end.ms(),
                tl.tasks[reduces[r]].start.ms(), tl.tasks[reduces[r]].end.ms());
  }
  std::printf("step %.3f ms\n", tl.makespan.ms());
  const bool ok = tl.tasks[reduces[0]].start == tl.tasks[reduces[1]].start &&
                  tl.tasks[reduces[0]].start >= tl.tasks[gemms[0]].end &&
                  tl.tasks[reduces[0]].start >= tl.tasks[gemms[1]].end &&
                  tl.tasks[gemms[0]].end > SimTime{} &&
                  tl.tasks[reduces[0]].end > tl.tasks[reduces[0]].start &&
                  tl.makespan == tl.tasks[reduces[0]].end;
  std::printf("%s\n", ok ? "consistent" : "INCONSISTENT");
  return ok ? 0 : 1;
}
