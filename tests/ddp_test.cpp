// DDP: bucket assignment, bytes moved per step, no_sync, and seed 002's measurements.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "driver/simulation.h"
#include "models/software_stack.h"
#include "scenarios/scenario.h"
#include "strategies/ddp_buckets.h"
#include "strategies/training_step.h"
#include "test_paths.h"

namespace cs {
namespace {

std::string scenario_path(const std::string& name) {
  return cs::test_paths::source_dir() + "/scenarios/" + name;
}

TEST(DdpBuckets, FillInReverseOrderWithASmallFirstBucket) {
  // Parameters (fp32, 4 B each) of 100 KiB, 2 MiB, 20 MiB, 20 MiB, 30 MiB registered in that
  // order. Reverse order: 30 MiB closes the 1 MiB first bucket alone; 20 + 20 = 40 MiB >= 25
  // closes the second; 2 MiB + 100 KiB stay open and form the last.
  std::vector<model::ParameterTensor> p = {
      {"a", 0, 25600}, {"b", 0, 524288}, {"c", 0, 5242880}, {"d", 0, 5242880}, {"e", 0, 7864320}};
  const auto buckets = strategy::assign_buckets(p, 4, 1_MiB, 25_MiB);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].params, (std::vector<int>{4}));
  EXPECT_EQ(buckets[1].params, (std::vector<int>{3, 2}));
  EXPECT_EQ(buckets[2].params, (std::vector<int>{1, 0}));
  EXPECT_EQ(buckets[2].bytes.count, (524288 + 25600) * 4);
}

// Sums rank 0's all-reduce bytes and records the micro-batch each one ran in.
struct AllReduceTally {
  int64_t bytes = 0;
  int calls = 0;
  std::set<int> micro_batches;
};
AllReduceTally tally(const strategy::StepGraph& step) {
  AllReduceTally t;
  for (const auto& task : step.graph.tasks()) {
    if (task.kind != ir::TaskKind::collective || task.rank != 0) continue;
    t.bytes += step.graph.collective(task).bytes.count;
    ++t.calls;
    t.micro_batches.insert(task.micro_batch);
  }
  return t;
}

TEST(Ddp, MovesExactlyTheGradientBytesOncePerStepUnderNoSync) {
  auto s = scenario::load_scenario(scenario_path("gpt2-large-2xh100-ddp.yaml"));
  s.training.global_batch = 64;  // 4 accumulation micro-batches per replica
  for (auto kind : {strategy::DataParallel::ddp, strategy::DataParallel::ddp_flat}) {
    s.layout.data_parallel = kind;
    const auto step = strategy::build_training_step(s.model, s.layout, s.training);
    ASSERT_EQ(step.micro_batches, 4);
    const auto t = tally(step);
    // amp keeps fp32 gradients: 774,030,080 parameters x 4 bytes, all-reduced once per step.
    EXPECT_EQ(t.bytes, 774030080LL * 4);
    // no_sync: every all-reduce belongs to the last micro-batch.
    EXPECT_EQ(t.micro_batches, (std::set<int>{3}));
    // Flat DDP: one all-reduce per parameter tensor (GPT-2 Large has 2 + 36*12 + 2 = 436).
    if (kind == strategy::DataParallel::ddp_flat) {
      EXPECT_EQ(t.calls, 436);
    }
  }
}

TEST(Ddp, Seed002SpeedupAndAllReduceCount) {
  // Seed 002, Table 3: DDP on 2x H100 is 1.93x faster than one H100 at the same global batch;
  // Table 7: 109 ncclAllReduce calls per step with PyTorch's 25 MiB buckets.
  const auto r =
      driver::simulate(scenario::load_scenario(scenario_path("gpt2-large-2xh100-ddp.yaml")));
  EXPECT_NEAR(r.speedup, 1.93, 0.05);
  // Exact, not +/-15%: the buckets are formed as PyTorch forms them (parameters in reverse order,
  // a bucket closed once it holds 25 MiB, no tensor split), so the count is a property of GPT-2
  // Large's tensor sizes, and seed 002 counted 109 in the profiler trace.
  EXPECT_EQ(r.report.collectives.at("all_reduce").calls, 109);
  EXPECT_TRUE(r.report.fits);
}

TEST(Memory, SingleGpuGpt2SmallPeakIsTheHandComputedSum) {
  auto s = scenario::load_scenario(scenario_path("gpt2-small-1xh100.yaml"));
  s.training.stack =
      model::Stack::ideal;  // fused chains: eager's fp32-widened GELU would add to the sum below
  const auto r = driver::simulate(s);
  // P = 124,439,808. amp: fp32 weights (4P) + fp32 grads (4P) + AdamW m, v (8P) = 16P.
  const int64_t P = 124439808;
  // The peak is reached when the logits are allocated at the end of forward: every layer's
  // activations, the 16-bit autocast weight copies and the logits are all alive.
  // Per layer (s=1024, b=8, h=768, a=12, fused attention, dropout): 34*s*b*h + 4*a*s*b
  //   = 34 * 6,291,456 + 4 * 12 * 8192 = 213,909,504 + 393,216 = 214,302,720.
  const int64_t per_layer = 214302720;
  // Autocast copies: every parameter in 16 bits but the learned positions (1024 x 768), which
  // F.embedding reads in fp32 (the tied token table is cast by the head, which multiplies by it):
  // 2 (P - 786,432). Logits: 8192 tokens x 50257 x (2 + 4).
  const int64_t logits = 8192LL * 50257 * 6;
  const int64_t expected = 16 * P + 12 * per_layer + 2 * (P - 786432) + logits;
  EXPECT_EQ(r.report.peak_memory, expected);  // 7,280,208,384 bytes
  const auto& at = r.report.ranks[0].memory.at_peak;
  EXPECT_EQ(at[static_cast<size_t>(ir::MemoryCategory::parameters)], 4 * P);
  EXPECT_EQ(at[static_cast<size_t>(ir::MemoryCategory::gradients)], 4 * P);
  EXPECT_EQ(at[static_cast<size_t>(ir::MemoryCategory::optimizer_state)], 8 * P);
  EXPECT_EQ(at[static_cast<size_t>(ir::MemoryCategory::activations)], 12 * per_layer);
  EXPECT_EQ(at[static_cast<size_t>(ir::MemoryCategory::logits)], logits);
}

TEST(Simulation, TwoIdenticalRunsGiveIdenticalTimelines) {
  const auto s = scenario::load_scenario(scenario_path("gpt2-large-2xh100-ddp.yaml"));
  const auto a = driver::simulate(s, {.with_baseline = false});
  const auto b = driver::simulate(s, {.with_baseline = false});
  ASSERT_EQ(a.timeline.tasks.size(), b.timeline.tasks.size());
  EXPECT_EQ(0, std::memcmp(a.timeline.tasks.data(), b.timeline.tasks.data(),
                           a.timeline.tasks.size() * sizeof(sim::TaskTiming)));
  EXPECT_EQ(a.timeline.makespan, b.timeline.makespan);
}

}  // namespace
}  // namespace cs
