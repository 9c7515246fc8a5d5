#include "cli/simulation.h"

#include "sim/engine.h"

namespace cs::cli {
namespace {

sim::Report run(const scenario::Scenario& s, strategy::StepGraph& step, sim::Timeline& tl) {
  const topo::Topology topology = scenario::build_topology(s);
  const cost::DeviceSpec& device = cost::find_device(s.gpu);
  const cost::AnalyticCostModel costs{cost::ComputeModel(device), cost::CollectiveModel(topology)};
  step = strategy::build_training_step(s.model, s.layout, s.training);
  tl = sim::Engine(step.graph, costs).run();
  sim::WorkloadFacts facts;
  facts.tokens_per_step = step.tokens_per_step;
  facts.samples_per_step = step.samples_per_step;
  facts.model_flops_per_step = step.model_flops_per_step;
  facts.peak_flops_per_gpu = device.peak(model::precision_info(s.training.precision).compute);
  facts.memory_capacity = device.memory_capacity;
  return sim::make_report(step.graph, tl, facts);
}

}  // namespace

scenario::Scenario single_device_twin(const scenario::Scenario& s) {
  scenario::Scenario twin = s;
  twin.name = s.name + " (1 GPU)";
  twin.cluster_name = "single_h100";
  twin.devices.clear();
  twin.links.clear();
  twin.nodes = 1;
  twin.gpus = 1;
  twin.layout.tp = twin.layout.pp = twin.layout.dp = 1;
  // The twin only needs one GPU; its kind stays s.gpu, so any single-node preset will do as the
  // (collective-free) topology.
  return twin;
}

SimulationResult simulate(const scenario::Scenario& s, bool with_baseline) {
  SimulationResult r;
  r.scenario = s;
  r.report = run(s, r.step, r.timeline);
  if (with_baseline && s.gpus > 1) {
    strategy::StepGraph step;
    sim::Timeline tl;
    r.baseline = run(single_device_twin(s), step, tl);
    r.speedup = r.baseline->step_time.seconds() / r.report.step_time.seconds();
  }
  return r;
}

}  // namespace cs::cli
