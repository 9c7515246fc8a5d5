// FSDP2 (layout.fsdp_version 2, torch.distributed.fsdp.fully_shard): the copies per-parameter
// sharding adds around each gather and reduction (strategies/data_parallel/fsdp.cpp). Every
// expected count and byte figure is derived by hand in the comment above it.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "scenarios/scenario.h"
#include "strategies/training_step.h"

namespace cs {
namespace {

// 100 layers of 1000 x 1000 weights plus biases: 1,001,000 parameters per layer, one FSDP unit
// each (an MLP has no embedding/head root unit).
model::ModelSpec mlp_100m() {
  model::ModelSpec m;
  m.name = "mlp-100m";
  m.family = model::Family::mlp;
  m.layers = 100;
  m.hidden = m.ffn_hidden = 1000;
  return m;
}

struct CopyTasks {
  std::map<std::string, int> count;       // by suffix: copy_in, copy_out, chunk_cat, all_gather
  std::map<std::string, int64_t> bytes;   // bytes of one such compute task
};

CopyTasks copies_on_rank0(int dp, int fsdp_version) {
  strategy::TrainingSpec t;
  t.global_batch = dp;
  t.micro_batch = 1;
  t.precision = model::Precision::mixed_bf16;
  strategy::Layout l;
  l.dp = dp;
  l.data_parallel = strategy::DataParallel::fsdp_full_shard;
  l.fsdp_version = fsdp_version;
  const auto step = strategy::build_training_step(mlp_100m(), l, t);
  CopyTasks out;
  for (const auto& task : step.graph.tasks()) {
    if (task.rank != 0) continue;
    const std::string& name = step.graph.name(task.name);
    for (const char* suffix : {".copy_in", ".copy_out", ".chunk_cat", ".all_gather", ".flat_grad"}) {
      const std::string s = suffix;
      if (name.size() < s.size() || name.compare(name.size() - s.size(), s.size(), s) != 0) continue;
      ++out.count[s.substr(1)];
      if (task.kind == ir::TaskKind::compute) out.bytes[s.substr(1)] = step.graph.compute(task).bytes.count;
    }
  }
  return out;
}

TEST(Fsdp2, CopiesEachShardInAndEachGatheredUnitOutAndConcatenatesGradients) {
  // dp 2, FULL_SHARD, one micro-batch: each of the 100 units is gathered before its forward and
  // again before its backward = 200 gathers, each with a copy-in and a copy-out; each unit's
  // gradients are concatenated once for the reduce-scatter = 100 chunk_cats.
  //   copy-in   the rank's shard, 1,001,000 / 2 = 500,500 elements, fp32 master read (4 B) and
  //             bf16 written (2 B): 3,003,000 B
  //   copy-out  the gathered unit, 1,001,000 bf16 elements read and written: 4,004,000 B
  //   chunk_cat 1,001,000 bf16 gradients read (2 B) and written as fp32 (4 B): 6,006,000 B
  const CopyTasks two = copies_on_rank0(2, 2);
  EXPECT_EQ(two.count.at("copy_in"), 200);
  EXPECT_EQ(two.count.at("copy_out"), 200);
  EXPECT_EQ(two.count.at("all_gather"), 200);
  EXPECT_EQ(two.count.at("chunk_cat"), 100);
  EXPECT_EQ(two.bytes.at("copy_in"), 3'003'000);
  EXPECT_EQ(two.bytes.at("copy_out"), 4'004'000);
  EXPECT_EQ(two.bytes.at("chunk_cat"), 6'006'000);
  EXPECT_EQ(two.count.count("flat_grad"), 0u);  // FSDP1's flat-gradient pass is gone
}

TEST(Fsdp2, AtWorldSizeOneTheCastAndTheConcatenationStillRun) {
  // dp 1: no all-gather and nothing to split, but fully_shard still casts every unit (the whole
  // of it is the shard: 1,001,000 x 6 B = 6,006,000 B) before forward and backward, and still
  // concatenates gradients (as measured on one H100, validate/measurements/torch_h100_202611/).
  const CopyTasks one = copies_on_rank0(1, 2);
  EXPECT_EQ(one.count.at("copy_in"), 200);
  EXPECT_EQ(one.count.count("copy_out"), 0u);
  EXPECT_EQ(one.count.count("all_gather"), 0u);
  EXPECT_EQ(one.count.at("chunk_cat"), 100);
  EXPECT_EQ(one.bytes.at("copy_in"), 6'006'000);
  // FSDP1 at dp 1 gathers nothing and copies nothing in.
  const CopyTasks v1 = copies_on_rank0(1, 1);
  EXPECT_EQ(v1.count.count("copy_in"), 0u);
  EXPECT_EQ(v1.count.count("chunk_cat"), 0u);
}

TEST(Fsdp2, TheVersionKeyNeedsAnFsdpFlavour) {
  const std::string base = "name: s\nmodel: {preset: gpt2-small}\ncluster: {preset: dgx_h100}\ntraining: {global_batch: 8, micro_batch: 1, seq_len: 1024}\n";
  const auto ok = scenario::parse_scenario(base + "layout: {dp: 8, data_parallel: fsdp_full_shard, fsdp_version: 2}\n", "a.yaml");
  EXPECT_EQ(ok.layout.fsdp_version, 2);
  try {
    scenario::parse_scenario(base + "layout: {dp: 8, data_parallel: zero1, fsdp_version: 2}\n", "b.yaml");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("layout.fsdp_version"), std::string::npos) << e.what();
  }
  try {
    scenario::parse_scenario(base + "layout: {dp: 8, data_parallel: fsdp_full_shard, fsdp_version: 3}\n", "c.yaml");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("1, 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cs
