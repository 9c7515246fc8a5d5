// Pipeline exchanges that block (strategy::pipeline_p2p_blocks): Megatron-LM's 1F1B batches a
// stage's sends and receives and waits for all of them, so the stage's next compute waits for its
// send; torch.distributed.pipelining posts them ahead. Megatron-LM before 2023 blocked in the
// interleaved schedule too, and sent boundary tensors as tensor-parallel slices
// (strategy::pipeline_scatter_gather). Against hand derivations.
#include <gtest/gtest.h>

#include <algorithm>

#include "gemm_cost_model.h"
#include "sim/engine.h"
#include "strategies/layout.h"
#include "strategies/pipeline_schedule.h"
#include "strategies/training_step.h"
#include "tiny_models.h"

namespace cs {
namespace {

// Every GEMM takes 1 us and every pipeline transfer 10 us; everything else is free.
const test::GemmMicrosecondCostModel kGemmAndTransfer(SimTime::from_us(10));

// An 8-layer MLP, one GEMM a layer forward: on 2 stages each stage's forward is 4 us.
using test::mlp8;

strategy::Layout two_stages(strategy::PipelineSchedule s) {
  strategy::Layout l;
  l.pp = 2;
  l.schedule = s;
  if (s == strategy::PipelineSchedule::interleaved) l.virtual_stages = 2;
  return l;
}

// When stage 0 starts the forward of `micro_batch` on its model chunk holding `layer` (its first
// GEMM there).
double forward_start_us(const strategy::Layout& l, const strategy::TrainingSpec& t, int micro_batch,
                        int layer) {
  strategy::validate(l, t, mlp8(), 2);
  const auto step = strategy::build_training_step(mlp8(), l, t);
  const auto tl = sim::Engine(step.graph, kGemmAndTransfer).run();
  double start = 1e18;
  for (ir::TaskId task = 0; task < step.graph.size(); ++task) {
    const ir::Task& x = step.graph.task(task);
    if (x.rank == 0 && x.micro_batch == micro_batch && x.layer == layer &&
        x.phase == ir::Phase::forward && x.kind == ir::TaskKind::compute &&
        step.graph.compute(x).op == ir::OpClass::gemm)
      start = std::min(start, tl.tasks[task].start.us());
  }
  return start;
}

double second_forward_start_us(model::Stack stack) {
  strategy::TrainingSpec t;
  t.stack = stack;
  t.global_batch = 2;
  t.seq_len = 1;
  return forward_start_us(two_stages(strategy::PipelineSchedule::one_f_one_b), t, 1, 0);
}

TEST(PipelineP2p, MegatronsOneFOneBWaitsForTheSendWhereTorchPipeliningDoesNot) {
  // 1F1B on 2 stages warms stage 0 up with one forward, then runs micro-batch 1's forward. Stage
  // 0's forward of micro-batch 0 ends at 4 us; its activation's transfer runs 4..14 us (stage 1's
  // receive is posted at once: it has computed nothing yet). Megatron's stage 0 starts the next
  // forward once the send completes, at 14 us; TorchTitan's at once, at 4 us.
  EXPECT_DOUBLE_EQ(second_forward_start_us(model::Stack::megatron_core), 14.0);
  EXPECT_DOUBLE_EQ(second_forward_start_us(model::Stack::torch_compile), 4.0);
}

TEST(PipelineP2p, MegatronsInterleavedScheduleBlocksWithoutItsOverlap) {
  // Two stages of two chunks (2 layers each: a chunk's forward is 2 us), 4 micro-batches: stage
  // 0 warms up with 4 forwards, chunk 0 on micro-batches 0 and 1 (layers 0-1), then chunk 1 (layers
  // 4-5), whose inputs come from stage 1's chunk 0. When does chunk 1's forward of micro-batch 1
  // start on stage 0?
  // Blocking (--no-overlap-p2p-communication): stage 0 runs micro-batch 0 at 0-2 us and sends it
  // at 2-12 (stage 1's first exchange posted its receive at 0), so micro-batch 1 runs at 12-14.
  // Stage 1 runs micro-batch 0 at 12-14; both stages exchange at 14 (stage 1 sends its output,
  // stage 0 sends micro-batch 1 and receives that output) until 24, then both compute at 24-26
  // (stage 0 chunk 1 of micro-batch 0, stage 1 chunk 0 of micro-batch 1) and exchange again at
  // 26-36: chunk 1's forward of micro-batch 1 starts at 36 us.
  // Overlapped (Megatron's default): stage 1 receives micro-batch 0 at 2-12 and 1 at 12-22 on its
  // receive stream, runs them at 12-14 and 22-24, and each output crosses in 10 us: 34 us.
  strategy::Layout l = two_stages(strategy::PipelineSchedule::interleaved);
  strategy::TrainingSpec t;
  t.stack = model::Stack::megatron_core;
  t.global_batch = 4;
  t.seq_len = 1;
  t.overlap_p2p_comm = false;
  EXPECT_DOUBLE_EQ(forward_start_us(l, t, 1, 4), 36.0);
  t.overlap_p2p_comm = true;
  EXPECT_DOUBLE_EQ(forward_start_us(l, t, 1, 4), 34.0);
}

TEST(PipelineP2p, WhichSchedulesAndStacksBlock) {
  using strategy::PipelineSchedule;
  strategy::TrainingSpec t;
  t.stack = model::Stack::megatron_core;
  EXPECT_TRUE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::one_f_one_b), t));
  // Megatron's interleaved default is --overlap-p2p-communication; GPipe and ZB-H1 are not
  // Megatron's schedules.
  EXPECT_FALSE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::interleaved), t));
  t.overlap_p2p_comm = false;
  EXPECT_TRUE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::interleaved), t));
  EXPECT_FALSE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::gpipe), t));
  EXPECT_FALSE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::zb_h1), t));
  t.stack = model::Stack::deepspeed;
  EXPECT_TRUE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::one_f_one_b), t));
  t.stack = model::Stack::torch_compile;
  EXPECT_FALSE(strategy::pipeline_p2p_blocks(two_stages(PipelineSchedule::one_f_one_b), t));
}

TEST(PipelineP2p, ExchangesAStageWaitsFor) {
  using strategy::PipelineSchedule;
  // 1F1B exchanges after every pass: stage 0 of 2 with 4 micro-batches runs 8 passes.
  EXPECT_EQ(strategy::blocking_exchanges(PipelineSchedule::one_f_one_b, 2, 1, 0, 4), 8);
  // Interleaved, 2 stages of 2 chunks, 4 micro-batches: stage 0 warms up with (2 - 0 - 1) x 2 +
  // (2 - 1) x 2 = 4 forwards, pairs the other 4 with the first 4 backwards, cools down with 4:
  // 4 + 4 + 4 = 12 exchanges for 16 passes.
  EXPECT_EQ(strategy::blocking_exchanges(PipelineSchedule::interleaved, 2, 2, 0, 4), 12);
  // With as many micro-batches as stages every forward runs first: nothing pairs, 8 for 8.
  EXPECT_EQ(strategy::blocking_exchanges(PipelineSchedule::interleaved, 2, 2, 0, 2), 8);
}

// The pipeline transfers' bytes and the all-gathers of received slices ("pp.recv_*") in a step.
struct BoundaryTraffic {
  std::vector<int64_t> transfer_bytes;
  int64_t gathers = 0, gathered_bytes = 0;
};
BoundaryTraffic boundary_traffic(const strategy::Layout& l, const strategy::TrainingSpec& t) {
  strategy::validate(l, t, test::tiny_gpt(), 4);
  const auto step = strategy::build_training_step(test::tiny_gpt(), l, t);
  BoundaryTraffic out;
  for (ir::TaskId task = 0; task < step.graph.size(); ++task) {
    const ir::Task& x = step.graph.task(task);
    if (x.kind == ir::TaskKind::send)
      out.transfer_bytes.push_back(step.graph.transfer(x).bytes.count);
    const std::string& name = step.graph.task_name(task);
    if (x.kind == ir::TaskKind::collective && name.starts_with("pp.")) {
      const ir::CollectiveCall& c =
          step.graph.collective_call(static_cast<ir::CollectiveId>(x.payload));
      if (c.type == ir::CollectiveType::all_gather) {
        ++out.gathers;
        out.gathered_bytes = c.bytes.count;
      }
    }
  }
  return out;
}

TEST(PipelineP2p, MegatronBefore2023SendsTensorParallelSlicesAndGathersThem) {
  // tiny_gpt (h 256, sequence 128) at micro-batch 1 in 16-bit: a boundary tensor is
  // 128 x 256 x 2 = 65,536 B. On TP 2 x PP 2 with 2 micro-batches every rank sends 2 tensors
  // (stage 0 activations, stage 1 gradients): 8 sends. Sliced, each carries 65,536 / 2 =
  // 32,768 B, and each of the 8 receives is all-gathered back to 65,536 B over the TP pair.
  strategy::Layout l;
  l.tp = 2;
  l.pp = 2;
  strategy::TrainingSpec t;
  t.stack = model::Stack::megatron_core;
  t.global_batch = 2;
  t.seq_len = 128;
  const BoundaryTraffic whole = boundary_traffic(l, t);
  EXPECT_EQ(whole.transfer_bytes, std::vector<int64_t>(8, 65536));
  EXPECT_EQ(whole.gathers, 0);
  t.scatter_gather_tensors_in_pipeline = true;
  const BoundaryTraffic sliced = boundary_traffic(l, t);
  EXPECT_EQ(sliced.transfer_bytes, std::vector<int64_t>(8, 32768));
  EXPECT_EQ(sliced.gathers, 8);
  EXPECT_EQ(sliced.gathered_bytes, 65536);
  // Sequence parallelism already sends a sequence shard: Megatron then sends it whole.
  l.sequence_parallel = true;
  EXPECT_EQ(boundary_traffic(l, t).gathers, 0);
  // DeepSpeed's pipeline engine always sends slices under tensor parallelism.
  l.sequence_parallel = false;
  t.scatter_gather_tensors_in_pipeline = false;
  t.stack = model::Stack::deepspeed;
  EXPECT_EQ(boundary_traffic(l, t).gathers, 8);
}

}  // namespace
}  // namespace cs
