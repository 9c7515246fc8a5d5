// LoRA fine-tuning (models/layers/lora.h): the adapters' parameters and GEMMs, the frozen base's
// missing weight gradients, the model state and the adapters' activations of a LoRA step, and the
// scenario key, all derived by hand for a small Llama-family model.
#include "models/layers/lora.h"

#include <gtest/gtest.h>

#include <set>

#include "common/error.h"
#include "driver/simulation.h"
#include "scenarios/scenario.h"
#include "scenarios/scenario_writers.h"
#include "strategies/training_step.h"
#include "test_paths.h"

namespace cs {
namespace {

// A small Llama: 2 layers, hidden 256, 4 heads of 64 (no GQA), SwiGLU inner 512, vocabulary 1024,
// untied embeddings. Its parameters per layer: ln_1 256, qkv 256 x 768 = 196,608, proj 256 x 256
// = 65,536, ln_2 256, fc1 256 x 1024 = 262,144, fc2 512 x 256 = 131,072: 655,872; with the
// embedding and the head (1024 x 256 = 262,144 each) and the final norm (256):
// P = 262,144 + 2 x 655,872 + 256 + 262,144 = 1,836,288.
constexpr int64_t kBaseParams = 1836288;
// Rank 8 on all four targets, A [in x 8] and B [8 x out] per layer:
//   qkv  256 x 8 + 8 x 768  = 2,048 + 6,144 = 8,192
//   proj 256 x 8 + 8 x 256  = 2,048 + 2,048 = 4,096
//   fc1  256 x 8 + 8 x 1024 = 2,048 + 8,192 = 10,240
//   fc2  512 x 8 + 8 x 256  = 4,096 + 2,048 = 6,144
// 28,672 per layer, A = 57,344 for the two.
constexpr int64_t kAdapterParams = 57344;

model::ModelSpec tiny_llama() {
  model::ModelSpec m;
  m.name = "tiny-llama";
  m.family = model::Family::llama;
  m.layers = 2;
  m.hidden = 256;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 512;
  m.vocab = 1024;
  m.max_seq = 512;
  return m;
}

model::WorkShape lora_shape(int tp = 1, bool sp = false) {
  model::WorkShape w;
  w.seq = 512;  // T = 512 tokens per micro-batch
  w.tp = tp;
  w.sequence_parallel = sp;
  w.lora.rank = 8;
  return w;
}

std::string tiny_scenario(const std::string& cluster, int dp, const std::string& data_parallel,
                          const std::string& peft) {
  return "name: lora-tiny\nstack: megatron_core\nmodel:\n  family: llama\n  layers: 2\n"
         "  hidden: 256\n  heads: 4\n  kv_heads: 4\n  ffn_hidden: 512\n  vocab: 1024\n"
         "  max_seq: 512\ncluster:\n  preset: " +
         cluster + "\nlayout:\n  dp: " + std::to_string(dp) +
         "\n  data_parallel: " + data_parallel +
         "\ntraining:\n  global_batch: " + std::to_string(dp) +
         "\n  micro_batch: 1\n  seq_len: 512\n  precision: mixed_bf16\n  peft:\n" + peft;
}
const std::string kRank8 = "    method: lora\n    rank: 8\n";

TEST(LoraParameters, AdaptersBesideAFrozenBase) {
  const model::ModelWork work = model::build_model_work(tiny_llama(), lora_shape());
  int64_t base = 0, adapters = 0;
  for (const auto& p : work.params) (p.trainable() ? adapters : base) += p.numel;
  EXPECT_EQ(base, kBaseParams);
  EXPECT_EQ(adapters, kAdapterParams);
  EXPECT_EQ(model::parameter_count(tiny_llama()), kBaseParams);  // the model card's figure
  // Every trainable tensor is an adapter, in its layer's block (layer l: block l + 1).
  for (const auto& p : work.params) {
    if (!p.trainable()) continue;
    EXPECT_EQ(p.role, model::ParamRole::lora_adapter) << p.name;
    EXPECT_EQ(p.block, p.layer + 1) << p.name;
  }
}

// Sums the FLOPs of a block's GEMMs whose names contain `part`, forward and backward.
double gemm_flops(const model::Block& b, const std::string& part) {
  double sum = 0;
  for (const auto* list : {&b.forward, &b.backward}) {
    for (const auto& op : *list) {
      if (op.op.op == ir::OpClass::gemm && op.name.find(part) != std::string::npos)
        sum += op.op.flops.value;
    }
  }
  return sum;
}

TEST(LoraOps, AdapterGemmFlopsAndTheFrozenBaseBackward) {
  const model::ModelSpec m = tiny_llama();
  model::WorkShape full = lora_shape();
  full.lora = {};
  const model::ModelWork trained = model::build_model_work(m, full);
  const model::ModelWork lora = model::build_model_work(m, lora_shape());
  const model::Block& layer = lora.blocks[1];
  // An adapter beside a linear [in -> out] runs A [T, in] x [in, r] and B [T, r] x [r, out]
  // forward, and each one's dgrad and wgrad at the same FLOPs: 3 x 2 T r (in + out). Summed over
  // the four targets, in + out = (256 + 768) + (256 + 256) + (256 + 1024) + (512 + 256) = 3,584:
  // 6 x 512 x 8 x 3,584 = 88,080,384 FLOPs per layer.
  EXPECT_DOUBLE_EQ(gemm_flops(layer, ".lora_"), 88080384.0);
  // The frozen base computes its input gradients but no weight gradient.
  std::set<std::string> backward;
  for (const auto& op : layer.backward) backward.insert(op.name);
  for (const std::string linear : {"attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2"}) {
    EXPECT_EQ(backward.count(linear + ".dgrad"), 1u) << linear;
    EXPECT_EQ(backward.count(linear + ".wgrad"), 0u) << linear;
  }
  // Model FLOPs lose every base wgrad, 2 T x (the layer's 655,360 weights) per layer and
  // 2 T x 262,144 for the LM head: 2 x 512 x (2 x 655,360 + 262,144) = 1,610,612,736, and gain
  // the two layers' adapters, 2 x 88,080,384 = 176,160,768: 1,434,451,968 fewer.
  EXPECT_DOUBLE_EQ(trained.model_flops.value - lora.model_flops.value, 1434451968.0);
  // The embedding's gradient is not scattered: its block has no backward.
  EXPECT_TRUE(lora.blocks[0].backward.empty());
}

TEST(LoraOps, AFrozenRowParallelLinearStillGathersItsOutputGradient) {
  // y[1024, 256] = x[1024, 128] W[128, 256] on one of 2 TP ranks with SP, W frozen: backward is
  // dgrad alone, and the all-gather of the sequence-sharded output gradient that wgrad would have
  // waited for now precedes dgrad ([1024, 256] x 2 B = 524,288 B).
  const model::OpFactory bf16{ir::DType::bf16, 2};
  const model::layers::TpContext tp{2, true, Bytes{1024 * 256 * 2}};
  model::layers::BlockOps ops;
  model::layers::linear(bf16, ops, "x", 1024, 256, 128, {3}, model::layers::Split::row, tp, false,
                        false);
  const std::vector<model::Op> bwd = std::move(ops).backward_in_execution_order();
  ASSERT_EQ(bwd.size(), 1u);
  EXPECT_EQ(bwd[0].name, "x.dgrad");
  EXPECT_TRUE(bwd[0].grads_ready.empty());
  EXPECT_EQ(bwd[0].tp_before.type, ir::CollectiveType::all_gather);
  EXPECT_EQ(bwd[0].tp_before.bytes.count, 524288);
}

TEST(LoraOps, TensorParallelSplitAsMegatronBridge) {
  // TP 2 with sequence parallelism, T = 512 tokens, 2-byte activations.
  const model::ModelWork work = model::build_model_work(tiny_llama(), lora_shape(2, true));
  const model::Block& layer = work.blocks[1];
  auto fwd = [&](const std::string& name) -> const model::Op& {
    for (const auto& op : layer.forward)
      if (op.name == name) return op;
    ADD_FAILURE() << name;
    return layer.forward.front();
  };
  // Beside the column-parallel qkv: A's output split over the rank (8 / 2 = 4 columns), after
  // the adapter's own all-gather of the sequence-sharded input, [512, 256] x 2 B = 262,144 B;
  // its output all-gathered to [512, 8] x 2 B = 8,192 B. B [8 x 768 / 2].
  const model::Op& qkv_a = fwd("attn.qkv.lora_a");
  EXPECT_EQ(qkv_a.op.n, 4);
  EXPECT_EQ(qkv_a.op.k, 256);
  EXPECT_EQ(qkv_a.tp_before.type, ir::CollectiveType::all_gather);
  EXPECT_EQ(qkv_a.tp_before.bytes.count, 262144);
  EXPECT_EQ(qkv_a.tp_after.type, ir::CollectiveType::all_gather);
  EXPECT_EQ(qkv_a.tp_after.bytes.count, 8192);
  EXPECT_EQ(fwd("attn.qkv.lora_b").op.n, 384);
  // Beside the row-parallel proj: A reads the rank's 128 input columns and all-reduces [512, 8];
  // B's output is all-gathered whole, [512, 256] x 2 B = 262,144 B.
  const model::Op& proj_a = fwd("attn.proj.lora_a");
  EXPECT_EQ(proj_a.op.k, 128);
  EXPECT_EQ(proj_a.tp_after.type, ir::CollectiveType::all_reduce);
  EXPECT_EQ(proj_a.tp_after.bytes.count, 8192);
  EXPECT_EQ(fwd("attn.proj.lora_b").tp_after.type, ir::CollectiveType::all_gather);
  EXPECT_EQ(fwd("attn.proj.lora_b").tp_after.bytes.count, 262144);
  // Each rank holds half of every adapter: 57,344 / 2.
  int64_t per_rank = 0;
  for (const auto& p : work.params) per_rank += p.trainable() ? p.numel_per_tp_rank(2) : 0;
  EXPECT_EQ(per_rank, kAdapterParams / 2);
}

TEST(LoraStep, AdapterActivations) {
  const model::ModelSpec m = tiny_llama();
  auto extra = [&](model::WorkShape w) {
    model::WorkShape base = w;
    base.lora = {};
    return model::activation_bytes_of_layer(m, w, 0).count -
           model::activation_bytes_of_layer(m, base, 0).count;
  };
  // One rank, bf16 (2 B): each adapter keeps B's input [T, 8], 16 B per token; A's input is the
  // tensor its linear already saved. Four adapters x 16 B x 512 tokens = 32,768 B per layer.
  EXPECT_EQ(extra(lora_shape()), 32768);
  // TP 2 with SP: the qkv and fc1 adapters also keep their own gathered input [T, 256], 512 B
  // per token each: (2 x 512 + 4 x 16) x 512 = 557,056 B per layer on each rank.
  EXPECT_EQ(extra(lora_shape(2, true)), 557056);
  // Dropout 0.1 on one rank: each A keeps dropout's output (2 B) and mask (1 B) per input
  // element: qkv, proj, fc1 read 256 wide (768 B), fc2 512 (1,536 B); with B's inputs,
  // (3 x 768 + 1,536 + 4 x 16) x 512 = 3,904 x 512 = 1,998,848 B.
  model::WorkShape dropout = lora_shape();
  dropout.lora.dropout = 0.1;
  EXPECT_EQ(extra(dropout), 1998848);
  // Full recomputation keeps the layer's input only, the adapters' included.
  model::WorkShape full = lora_shape();
  full.recompute = model::Recompute::full;
  EXPECT_EQ(extra(full), 0);
}

TEST(LoraStep, MemoryIsTheHandDerivedSum) {
  const auto r = driver::simulate(
      scenario::parse_scenario(tiny_scenario("single_h100", 1, "ddp", kRank8), "lora.yaml"));
  // Megatron-Core, bf16 mixed precision: every weight in bf16, 2 B x (P + A) =
  // 2 x 1,893,632 = 3,787,264 B; gradients (Megatron's fp32 main_grad buffer) and the optimizer's
  // fp32 master weights and Adam moments only for the adapters: 4 x 57,344 = 229,376 B and
  // 12 x 57,344 = 688,128 B. Full fine-tuning would hold 16 B per parameter: 29,380,608 B.
  const auto& at = r.report.ranks[0].memory.at_peak;
  EXPECT_EQ(at[static_cast<size_t>(ir::MemoryCategory::parameters)], 3787264);
  EXPECT_EQ(at[static_cast<size_t>(ir::MemoryCategory::gradients)], 229376);
  EXPECT_EQ(at[static_cast<size_t>(ir::MemoryCategory::optimizer_state)], 688128);
}

TEST(LoraStep, DataParallelReducesOnlyTheAdapterGradients) {
  const auto s =
      scenario::parse_scenario(tiny_scenario("hgx_h100_2gpu", 2, "ddp", kRank8), "lora.yaml");
  const auto step = strategy::build_training_step(s.model, s.layout, s.training);
  int64_t bytes = 0;
  for (const auto& task : step.graph.tasks()) {
    if (task.kind == ir::TaskKind::collective && task.rank == 0)
      bytes += step.graph.collective(task).bytes.count;
  }
  // The adapters' fp32 gradients, 57,344 x 4 B, all-reduced once; the frozen base sends nothing.
  EXPECT_EQ(bytes, kAdapterParams * 4);
}

TEST(LoraScenario, KeysAndRefusals) {
  const auto s = scenario::parse_scenario(
      tiny_scenario("single_h100", 1, "ddp",
                    "    method: lora\n    rank: 16\n    alpha: 32\n    dropout: 0.05\n"
                    "    targets: [linear_qkv, linear_fc2]\n"),
      "lora.yaml");
  EXPECT_EQ(s.training.lora.rank, 16);
  EXPECT_DOUBLE_EQ(s.training.lora.alpha, 32);
  EXPECT_DOUBLE_EQ(s.training.lora.dropout, 0.05);
  EXPECT_TRUE(s.training.lora.adapts(model::LoraTarget::linear_qkv));
  EXPECT_FALSE(s.training.lora.adapts(model::LoraTarget::linear_proj));
  auto fails = [](const std::string& text) {
    try {
      const auto bad = scenario::parse_scenario(text, "lora.yaml");
      strategy::build_training_step(bad.model, bad.layout, bad.training);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(fails(tiny_scenario("single_h100", 1, "ddp", "    method: dora\n    rank: 8\n"))
                .find("training.peft.method"),
            std::string::npos);
  EXPECT_NE(fails(tiny_scenario("single_h100", 1, "ddp", "    method: lora\n    rank: 0\n"))
                .find("training.peft.rank"),
            std::string::npos);
  EXPECT_NE(fails(tiny_scenario("single_h100", 1, "ddp", kRank8 + "    targets: [q_proj]\n"))
                .find("training.peft.targets[0]"),
            std::string::npos);
  EXPECT_NE(fails(tiny_scenario("hgx_h100_2gpu", 2, "fsdp_full_shard", kRank8))
                .find("LoRA with fsdp_full_shard is not modelled"),
            std::string::npos);
}

TEST(LoraScenario, WrittenBackAsRead) {
  // plan --emit and compare write a scenario back: its peft block survives the round trip.
  const auto s = scenario::load_scenario(cs::test_paths::source_dir() +
                                         "/scenarios/llama3-70b-8xh100-lora.yaml");
  const auto again = scenario::parse_scenario(scenario::scenario_yaml(s, {}), "again.yaml");
  EXPECT_EQ(again.training.lora.rank, 16);
  EXPECT_DOUBLE_EQ(again.training.lora.alpha, 32);
  EXPECT_DOUBLE_EQ(again.training.lora.dropout, 0);
  EXPECT_EQ(again.training.lora.targets,
            std::vector<model::LoraTarget>{model::LoraTarget::linear_qkv});
}

}  // namespace
}  // namespace cs
