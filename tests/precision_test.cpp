// TF32 and FP8 precisions: which datatype each op runs in, the casts FP8 adds, and the memory
// each keeps, against hand derivations.
#include <gtest/gtest.h>

#include "models/model_work.h"
#include "strategies/training_step.h"

namespace cs {
namespace {

model::ModelSpec gpt_small() { return model::find_model_preset("gpt2-small"); }

const model::Op* find_op(const model::ModelWork& w, const std::string& block,
                         const std::string& name) {
  for (const auto& b : w.blocks) {
    if (b.name != block) continue;
    for (const auto& op : b.forward) {
      if (op.name == name) return &op;
    }
  }
  return nullptr;
}

TEST(Precision, Tf32RunsGemmsOnTensorCoresWithFp32Storage) {
  // tf32 (PyTorch allow_tf32): GEMMs and attention in TF32, activations stored in fp32 (4 B),
  // 16 B of model state per parameter (fp32 weight, gradient, AdamW m and v).
  model::WorkShape w;
  w.micro_batch = 1;
  w.seq = 1024;
  w.precision = model::Precision::tf32;
  const auto work = model::build_model_work(gpt_small(), w);
  const model::Op* qkv = find_op(work, "L0", "attn.qkv");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->op.dtype, ir::DType::tf32);
  // qkv: [1024, 768] x [768, 2304], fp32 operands: (1024 x 768 + 768 x 2304 + 1024 x 2304) x 4 B.
  EXPECT_EQ(qkv->op.bytes.count, (1024 * 768 + 768 * 2304 + 1024 * 2304) * 4);
  const auto p = model::precision_info(model::Precision::tf32);
  EXPECT_EQ(p.weight_bytes + p.grad_bytes + p.optimizer_bytes, 16);
}

TEST(Precision, Fp8CastsEachGemmsInputsAndKeepsAnFp8WeightCopy) {
  model::WorkShape w;
  w.micro_batch = 1;
  w.seq = 1024;
  w.precision = model::Precision::fp8;
  const auto work = model::build_model_work(gpt_small(), w);
  const model::Op* qkv = find_op(work, "L0", "attn.qkv");
  const model::Op* cast = find_op(work, "L0", "attn.qkv.fp8_cast");
  const model::Op* core = find_op(work, "L0", "attn.core");
  ASSERT_NE(qkv, nullptr);
  ASSERT_NE(cast, nullptr);
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(qkv->op.dtype, ir::DType::fp8);
  EXPECT_EQ(core->op.dtype, ir::DType::bf16);  // attention stays bf16 (Transformer Engine)
  // The cast reads the bf16 input [1024, 768] and weight [768, 2304] and writes them in FP8:
  // 3 B per element.
  EXPECT_EQ(cast->op.bytes.count, 3 * (1024 * 768 + 768 * 2304));

  // Memory: mixed_bf16's 16 B/param plus the FP8 copy (1 B/param) of the weights FP8 GEMMs read,
  // as workspace allocated at the step's start: the decoder layers' matrices only (not the
  // embeddings, the 16-bit head, norms or biases). Per GPT-2 small layer: qkv 768 x 2304 =
  // 1,769,472, proj 768 x 768 = 589,824, fc1 and fc2 768 x 3072 = 2,359,296 each: 7,077,888;
  // x 12 layers = 84,934,656 (of its 124,439,808 parameters).
  strategy::Layout l;
  strategy::TrainingSpec t;
  t.seq_len = 1024;
  t.precision = model::Precision::fp8;
  const auto step = strategy::build_training_step(gpt_small(), l, t);
  int64_t fp8_copy = 0;
  for (size_t i = 0; i < step.graph.size(); ++i) {
    const auto& task = step.graph.task(static_cast<ir::TaskId>(i));
    if (task.kind == ir::TaskKind::memory &&
        step.graph.task_name(static_cast<ir::TaskId>(i)) == "alloc.fp8_weights") {
      fp8_copy = step.graph.memory(task).delta;
    }
  }
  EXPECT_EQ(fp8_copy, 84'934'656);
}

TEST(Precision, Fp8LeavesTheOutputHeadIn16Bits) {
  // Megatron-Core's output layer is outside Transformer Engine, TorchTitan's Float8 skips
  // "output", DeepSeek-V3 keeps the head in BF16: the LM head GEMM is bf16 with no cast, its
  // [1024, 768] x [768, 50257] operands at 2 B each, while the layers' GEMMs run in FP8.
  model::WorkShape w;
  w.micro_batch = 1;
  w.seq = 1024;
  w.precision = model::Precision::fp8;
  const auto work = model::build_model_work(gpt_small(), w);
  const model::Op* head = find_op(work, "head", "lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->op.dtype, ir::DType::bf16);
  EXPECT_EQ(head->op.flops.value, 2.0 * 1024 * 50257 * 768);
  EXPECT_EQ(find_op(work, "head", "lm_head.fp8_cast"), nullptr);
  EXPECT_EQ(find_op(work, "L0", "mlp.fc1")->op.dtype, ir::DType::fp8);
}

// The backward's casts, per tensor and rowwise, for GPT-2 small's qkv linear (tokens T = 1024,
// k = 768 in, n = 2304 out), 3 B per element (read 2, write 1):
//   fp8 (per tensor): the output gradient [T, n] once: 1024 x 2304 = 2,359,296 elements.
//   fp8_rowwise: the output gradient twice (per row for dgrad, per column for wgrad), the input
//     [T, k] again per column for wgrad (786,432) and the weight [k, n] again along its other
//     axis for dgrad (1,769,472): 2 x 2,359,296 + 786,432 + 1,769,472 = 7,274,496 elements.
// The forward casts (input and weight once each) are the same in both recipes.
TEST(Precision, Fp8RowwiseCastsTheBackwardsOperandsAgainAlongTheOtherAxis) {
  auto backward_cast = [](model::Precision p) {
    model::WorkShape w;
    w.micro_batch = 1;
    w.seq = 1024;
    w.precision = p;
    const auto work = model::build_model_work(gpt_small(), w);
    for (const auto& b : work.blocks) {
      if (b.name != "L0") continue;
      for (const auto& op : b.backward)
        if (op.name == "attn.qkv.fp8_cast.bwd") return op.op.bytes.count;
    }
    return int64_t{-1};
  };
  EXPECT_EQ(backward_cast(model::Precision::fp8), 3 * 2'359'296);
  EXPECT_EQ(backward_cast(model::Precision::fp8_rowwise), 3 * 7'274'496);
  model::WorkShape w;
  w.micro_batch = 1;
  w.seq = 1024;
  w.precision = model::Precision::fp8_rowwise;
  const auto work = model::build_model_work(gpt_small(), w);
  EXPECT_EQ(find_op(work, "L0", "attn.qkv")->op.dtype, ir::DType::fp8);
  EXPECT_EQ(find_op(work, "L0", "attn.qkv.fp8_cast")->op.bytes.count,
            3 * (1024 * 768 + 768 * 2304));
}

}  // namespace
}  // namespace cs
