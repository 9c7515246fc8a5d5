// Separate q/k/v and gate/up projections (Hugging Face's and TorchTitan's Llama) read one input,
// so autograd adds their input gradients (models/layers/op_builder.h, input_gradient_sum);
// Megatron-Core fuses each group into one linear and adds nothing (WorkShape::fused_projections).
// Derived by hand for a 2-layer Llama: h 256, seq 512, micro-batch 1 (T = 512 tokens), bf16.
#include <gtest/gtest.h>

#include <string>

#include "models/model_work.h"
#include "models/software_stack.h"

namespace cs {
namespace {

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

model::ModelWork work_under(model::Stack stack, model::Precision precision) {
  model::WorkShape w;
  w.seq = 512;
  w.precision = precision;
  model::set_stack_flags(w, stack, model::CompileScope::model);
  model::ModelWork work = model::build_model_work(tiny_llama(), w);
  model::apply_stack(work, model::stack_traits(stack), model::CompileScope::model);
  return work;
}

const model::Op* find_op(const model::Block& b, const std::string& name) {
  for (const model::Op& op : b.backward) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

TEST(ProjectionGradSum, SeparateProjectionsSumTheirInputGradients) {
  // torch.compile over bf16 parameters (mixed_bf16: no autocast copies): one kernel reads the
  // three q/k/v dgrads and writes their sum, T x h x (3 + 1) x 2 B = 512 x 256 x 8 = 1,048,576 B;
  // gate/up: two read, one written, 512 x 256 x 6 = 786,432 B.
  const model::ModelWork compiled =
      work_under(model::Stack::torch_compile, model::Precision::mixed_bf16);
  const model::Block& layer = compiled.blocks[1];
  const model::Op* qkv = find_op(layer, "attn.qkv.input_grad_sum");
  const model::Op* gate_up = find_op(layer, "mlp.fc1.input_grad_sum");
  ASSERT_NE(qkv, nullptr);
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(qkv->op.bytes.count, 1'048'576);
  EXPECT_EQ(qkv->op.kernels, 1);
  EXPECT_EQ(gate_up->op.bytes.count, 786'432);

  // The sum follows the dgrads it adds: after attn.qkv.dgrad in execution order.
  size_t dgrad_at = 0, sum_at = 0;
  for (size_t i = 0; i < layer.backward.size(); ++i) {
    if (layer.backward[i].name == "attn.qkv.dgrad") dgrad_at = i;
    if (layer.backward[i].name == "attn.qkv.input_grad_sum") sum_at = i;
  }
  EXPECT_GT(sum_at, dgrad_at);

  // Eager PyTorch adds two at a time: q + k, then + v, each reading two and writing one,
  // 2 x 3 x 512 x 256 x 2 B = 1,572,864 B in 2 kernels.
  const model::ModelWork eager =
      work_under(model::Stack::pytorch_eager, model::Precision::mixed_bf16);
  const model::Op* eager_qkv = find_op(eager.blocks[1], "attn.qkv.input_grad_sum");
  ASSERT_NE(eager_qkv, nullptr);
  EXPECT_EQ(eager_qkv->op.bytes.count, 1'572'864);
  EXPECT_EQ(eager_qkv->op.kernels, 2);
  // and runs the three dgrads as three GEMMs.
  const model::Op* eager_dgrad = find_op(eager.blocks[1], "attn.qkv.dgrad");
  ASSERT_NE(eager_dgrad, nullptr);
  EXPECT_EQ(eager_dgrad->op.kernels, 3);
}

TEST(ProjectionGradSum, MegatronCoreFusesTheProjectionsAndSumsNothing) {
  // Megatron-Core's linear_qkv and linear_fc1: one GEMM each, no gradients to add; the Llama
  // checkpoint's separate layout does not change what Megatron-Core runs.
  const model::ModelWork megatron =
      work_under(model::Stack::megatron_core, model::Precision::mixed_bf16);
  EXPECT_EQ(find_op(megatron.blocks[1], "attn.qkv.input_grad_sum"), nullptr);
  EXPECT_EQ(find_op(megatron.blocks[1], "mlp.fc1.input_grad_sum"), nullptr);
}

}  // namespace
}  // namespace cs
