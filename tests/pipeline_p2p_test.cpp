// Pipeline exchanges that block (strategy::pipeline_p2p_blocks): Megatron-LM's 1F1B batches a
// stage's sends and receives and waits for all of them, so the stage's next compute waits for its
// send; torch.distributed.pipelining posts them ahead. Against hand derivations.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/engine.h"
#include "strategies/layout.h"
#include "strategies/training_step.h"
#include "tiny_models.h"

namespace cs {
namespace {

// Every GEMM takes 1 us and every pipeline transfer 10 us; everything else is free.
class GemmAndTransferCostModel final : public cost::CostModel {
 public:
  SimTime compute(const ir::ComputeOp& op) const override {
    return op.op == ir::OpClass::gemm ? SimTime::from_us(1) : SimTime{};
  }
  cost::CommCost collective(const ir::CollectiveCall&,
                            const std::vector<ir::RankId>&) const override {
    return {};
  }
  cost::CommCost transfer(const ir::Transfer&) const override { return {SimTime::from_us(10)}; }
};

// An 8-layer MLP, one GEMM a layer forward: on 2 stages each stage's forward is 4 us.
using test::mlp8;

strategy::Layout two_stages(strategy::PipelineSchedule s) {
  strategy::Layout l;
  l.pp = 2;
  l.schedule = s;
  if (s == strategy::PipelineSchedule::interleaved) l.virtual_stages = 2;
  return l;
}

// When stage 0 starts its second micro-batch's forward (its first GEMM of micro-batch 1).
double second_forward_start_us(model::Stack stack) {
  const strategy::Layout l = two_stages(strategy::PipelineSchedule::one_f_one_b);
  strategy::TrainingSpec t;
  t.stack = stack;
  t.global_batch = 2;
  t.seq_len = 1;
  strategy::validate(l, t, mlp8(), 2);
  const auto step = strategy::build_training_step(mlp8(), l, t);
  const auto tl = sim::Engine(step.graph, GemmAndTransferCostModel()).run();
  double start = 1e18;
  for (ir::TaskId task = 0; task < step.graph.size(); ++task) {
    const ir::Task& x = step.graph.task(task);
    if (x.rank == 0 && x.micro_batch == 1 && x.phase == ir::Phase::forward &&
        x.kind == ir::TaskKind::compute && step.graph.compute(x).op == ir::OpClass::gemm)
      start = std::min(start, tl.tasks[task].start.us());
  }
  return start;
}

TEST(PipelineP2p, MegatronsOneFOneBWaitsForTheSendWhereTorchPipeliningDoesNot) {
  // 1F1B on 2 stages warms stage 0 up with one forward, then runs micro-batch 1's forward. Stage
  // 0's forward of micro-batch 0 ends at 4 us; its activation's transfer runs 4..14 us (stage 1's
  // receive is posted at once: it has computed nothing yet). Megatron's stage 0 starts the next
  // forward once the send completes, at 14 us; TorchTitan's at once, at 4 us.
  EXPECT_DOUBLE_EQ(second_forward_start_us(model::Stack::megatron_core), 14.0);
  EXPECT_DOUBLE_EQ(second_forward_start_us(model::Stack::torch_compile), 4.0);
}

TEST(PipelineP2p, OnlyOneFOneBUnderMegatronOrDeepSpeedBlocks) {
  using strategy::PipelineSchedule;
  strategy::TrainingSpec t;
  t.stack = model::Stack::megatron_core;
  EXPECT_TRUE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::one_f_one_b), t));
  // Megatron's interleaved default is --overlap-p2p-communication; GPipe and ZB-H1 are not
  // Megatron's schedules.
  EXPECT_FALSE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::interleaved), t));
  EXPECT_FALSE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::gpipe), t));
  EXPECT_FALSE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::zb_h1), t));
  t.stack = model::Stack::deepspeed;
  EXPECT_TRUE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::one_f_one_b), t));
  t.stack = model::Stack::torch_compile;
  EXPECT_FALSE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::one_f_one_b), t));
}

}  // namespace
}  // namespace cs
