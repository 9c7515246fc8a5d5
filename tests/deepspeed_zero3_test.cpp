// DeepSpeed ZeRO stage 3 (stack deepspeed, data_parallel zero3) reduces gradients as
// deepspeed/runtime/zero/stage3.py does: every micro-batch, through the IPG bucket of
// reduce_bucket_size elements, the partial bucket reduced at the end of each backward and the next
// forward waiting for it (strategies/data_parallel/fsdp.cpp). Against hand derivations.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "sim/engine.h"
#include "strategies/training_step.h"
#include "tiny_models.h"

namespace cs {
namespace {

// GEMMs take 1 us per MFLOP, collectives 1 us per 1,000 bytes; everything else is free.
class LinearCostModel final : public cost::CostModel {
 public:
  SimTime compute(const ir::ComputeOp& op) const override {
    return op.op == ir::OpClass::gemm ? SimTime::from_us(op.flops.value * 1e-6) : SimTime{};
  }
  cost::CommCost collective(const ir::CollectiveCall& c,
                            const std::vector<ir::RankId>&) const override {
    return {SimTime::from_us(static_cast<double>(c.bytes.count) * 1e-3)};
  }
  cost::CommCost transfer(const ir::Transfer&) const override { return {}; }
};

// A 2-layer GPT: h 256, 4 heads, ffn 1024, vocab 2048, sequence 128. Its parameters, in bf16
// gradient bytes (2 B each): a layer is ln1 512, qkv 256 x 768 + 768 = 197,376, proj 65,792,
// ln2 512, fc1 263,168, fc2 262,400: 789,760 parameters, 1,579,520 B; the root unit holds wte
// 2048 x 256 = 524,288 (1,048,576 B), wpe 128 x 256 = 32,768 (65,536 B) and ln_f 512 (1,024 B).
using test::tiny_gpt;

struct Zero3Run {
  strategy::StepGraph step;
  sim::Timeline timeline;
};

// ZeRO-3 over 2 ranks, 2 micro-batches of one sequence each.
Zero3Run run_zero3(model::Stack stack, Bytes bucket) {
  strategy::Layout l;
  l.dp = 2;
  l.data_parallel = strategy::DataParallel::fsdp_full_shard;
  l.bucket_size = bucket;
  strategy::TrainingSpec t;
  t.stack = stack;
  t.global_batch = 4;
  t.seq_len = 128;
  strategy::validate(l, t, tiny_gpt(), l.gpus());
  Zero3Run r{strategy::build_training_step(tiny_gpt(), l, t), {}};
  r.timeline = sim::Engine(r.step.graph, LinearCostModel()).run();
  return r;
}

// Rank 0's reduce-scatters, bytes by micro-batch in issue order.
std::map<int, std::vector<int64_t>> reduce_scatters(const ir::TaskGraph& g) {
  std::map<int, std::vector<int64_t>> out;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const ir::Task& task = g.task(t);
    if (task.rank != 0 || task.kind != ir::TaskKind::collective) continue;
    const ir::CollectiveCall& call = g.collective_call(task.payload);
    if (call.type == ir::CollectiveType::reduce_scatter)
      out[task.micro_batch].push_back(call.bytes.count);
  }
  return out;
}

TEST(DeepSpeedZero3, ReducesEveryMicroBatchThroughOneBucketWhenItHoldsEveryGradient) {
  // DeepSpeed's default bucket (5e8 elements) holds the whole model: each backward copies the
  // three units' gradients in and the epilogue reduce-scatters them once, 2 x 1,579,520 +
  // 1,048,576 + 65,536 + 1,024 = 4,274,176 B, in both micro-batches. FSDP1 under no_sync reduces
  // per unit in the last micro-batch only: 1,579,520, 1,579,520 and 1,115,136 B.
  const Zero3Run ds = run_zero3(model::Stack::deepspeed, Bytes{1'000'000'000});
  EXPECT_EQ(reduce_scatters(ds.step.graph),
            (std::map<int, std::vector<int64_t>>{{0, {4'274'176}}, {1, {4'274'176}}}));
  const Zero3Run fsdp = run_zero3(model::Stack::pytorch_eager, Bytes{1'000'000'000});
  EXPECT_EQ(reduce_scatters(fsdp.step.graph),
            (std::map<int, std::vector<int64_t>>{{1, {1'579'520, 1'579'520, 1'115'136}}}));
}

TEST(DeepSpeedZero3, AGradientThatWouldOverflowTheBucketReducesItFirst) {
  // Bucket 2,000,000 B, filled parameter by parameter in backward order (a layer's: fc2.bias 512,
  // fc2.weight 524,288, fc1.bias 2,048, fc1.weight 524,288, ln_2 512 + 512, proj.bias 512,
  // proj.weight 131,072, qkv.bias 1,536, qkv.weight 393,216, ln_1 512 + 512 B). Layer 1
  // (1,579,520 B) fits; layer 0's fc2.bias too (1,580,032 B), its fc2.weight would overflow:
  // 1,580,032 B reduced. The rest of layer 0 (1,579,008 B) and the root's ln_f (512 + 512) and
  // wpe (65,536) fill 1,645,568 B, wte (1,048,576) would overflow: 1,645,568 B reduced; the
  // epilogue reduces wte's 1,048,576 B. The three add up to the 4,274,176 B above.
  const Zero3Run ds = run_zero3(model::Stack::deepspeed, Bytes{2'000'000});
  const std::vector<int64_t> each{1'580'032, 1'645'568, 1'048'576};
  EXPECT_EQ(reduce_scatters(ds.step.graph),
            (std::map<int, std::vector<int64_t>>{{0, each}, {1, each}}));
}

TEST(DeepSpeedZero3, TheNextForwardWaitsForTheEpiloguesReductions) {
  // The epilogue synchronises the reduction stream: micro-batch 1's first GEMM starts once
  // micro-batch 0's last reduction (4,274,176 B: 4,274.176 us here) has finished.
  const Zero3Run ds = run_zero3(model::Stack::deepspeed, Bytes{1'000'000'000});
  const ir::TaskGraph& g = ds.step.graph;
  SimTime reduced, reduce_time, first_gemm = SimTime::from_us(1e12);
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const ir::Task& task = g.task(t);
    if (task.rank != 0) continue;
    const auto& at = ds.timeline.tasks[t];
    if (task.kind == ir::TaskKind::collective && task.micro_batch == 0 &&
        g.collective_call(task.payload).type == ir::CollectiveType::reduce_scatter) {
      reduced = std::max(reduced, at.end);
      reduce_time = at.end - at.start;
    }
    if (task.kind == ir::TaskKind::compute && task.micro_batch == 1 &&
        task.phase == ir::Phase::forward && g.compute(task).op == ir::OpClass::gemm)
      first_gemm = std::min(first_gemm, at.start);
  }
  EXPECT_NEAR(reduce_time.us(), 4274.176, 1e-6);
  EXPECT_GE(first_gemm.ps, reduced.ps);
}

TEST(DeepSpeedZero3, HoldsItsBucketAndNoUnshardedGradientsAcrossMicroBatches) {
  // The bucket is allocated once (reduce_bucket_size x 2 B); each unit's unsharded gradients are
  // freed in the micro-batch that made them (3 units x 2 micro-batches), where FSDP1 keeps them
  // from the first micro-batch's backward to the last one's reduction.
  const Zero3Run ds = run_zero3(model::Stack::deepspeed, Bytes{2'000'000});
  const ir::TaskGraph& g = ds.step.graph;
  int64_t bucket = 0;
  std::map<int, int> held;  // micro-batch -> unsharded gradients allocated minus freed
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const ir::Task& task = g.task(t);
    if (task.rank != 0 || task.kind != ir::TaskKind::memory) continue;
    const std::string& name = g.task_name(t);
    if (name == "deepspeed.ipg_buffer") bucket += g.memory(task).delta;
    if (name.find(".unsharded_grad") != std::string::npos)
      held[task.micro_batch] += g.memory(task).delta > 0 ? 1 : -1;
  }
  EXPECT_EQ(bucket, 2'000'000);
  EXPECT_EQ(held, (std::map<int, int>{{0, 0}, {1, 0}}));
}

TEST(DeepSpeedZero3, AScenarioWithoutABucketTakesDeepSpeedsReduceBucket) {
  // reduce_bucket_size 5e8 elements (deepspeed/runtime/zero/config.py) of bf16 gradients: 1e9 B;
  // another stack keeps PyTorch DDP's 25 MiB.
  auto scenario = [](const std::string& stack) {
    return "name: t\nstack: " + stack +
           "\nmodel: {preset: gpt2-small}\ncluster: {preset: dgx_h100}\n"
           "layout: {dp: 8, data_parallel: zero3}\n"
           "training: {global_batch: 8, micro_batch: 1, seq_len: 1024, precision: mixed_bf16}\n";
  };
  EXPECT_EQ(scenario::parse_scenario(scenario("deepspeed"), "a.yaml").layout.bucket_size.count,
            1'000'000'000);
  EXPECT_EQ(scenario::parse_scenario(scenario("pytorch_eager"), "b.yaml").layout.bucket_size.count,
            25LL << 20);
}

}  // namespace
}  // namespace cs
