// Separate q/k/v and gate/up projections (Hugging Face's and TorchTitan's Llama) read one input,
// so autograd adds their input gradients (models/layers/op_builder.h, input_gradient_sum);
// Megatron-Core fuses each group into one linear and adds nothing (WorkShape::fused_projections).
// Derived by hand for tests/small_llama.h's Llama (h 1024), seq 512, micro-batch 1 (T = 512
// tokens), bf16.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "layer_ops.h"
#include "models/model_work.h"
#include "models/software_stack.h"
#include "small_llama.h"

namespace cs {
namespace {

model::ModelWork work_under(model::Stack stack, model::Precision precision) {
  model::WorkShape w;
  w.seq = 512;
  w.precision = precision;
  model::set_stack_flags(w, stack, model::CompileScope::model);
  model::ModelWork work = model::build_model_work(test::small_llama(), w);
  model::apply_stack(work, model::stack_traits(stack), model::CompileScope::model);
  return work;
}

bool has_op(const model::Block& b, const std::string& name) {
  const auto names = model::test::names_of(b.backward);
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(ProjectionGradSum, SeparateProjectionsSumTheirInputGradients) {
  // torch.compile over bf16 parameters (mixed_bf16: no autocast copies): one kernel reads the
  // three q/k/v dgrads and writes their sum, T x h x (3 + 1) x 2 B = 512 x 1024 x 8 = 4,194,304 B;
  // gate/up: two read, one written, 512 x 1024 x 6 = 3,145,728 B.
  const model::ModelWork compiled =
      work_under(model::Stack::torch_compile, model::Precision::mixed_bf16);
  const model::Block& layer = compiled.blocks[1];
  const model::Op& qkv = model::test::op_named(layer.backward, "attn.qkv.input_grad_sum");
  EXPECT_EQ(qkv.op.bytes.count, 4'194'304);
  EXPECT_EQ(qkv.op.kernels, 1);
  EXPECT_EQ(model::test::op_named(layer.backward, "mlp.fc1.input_grad_sum").op.bytes.count,
            3'145'728);

  // The sum follows the dgrads it adds: after attn.qkv.dgrad in execution order.
  size_t dgrad_at = 0, sum_at = 0;
  for (size_t i = 0; i < layer.backward.size(); ++i) {
    if (layer.backward[i].name == "attn.qkv.dgrad") dgrad_at = i;
    if (layer.backward[i].name == "attn.qkv.input_grad_sum") sum_at = i;
  }
  EXPECT_GT(sum_at, dgrad_at);

  // Eager PyTorch adds two at a time: q + k, then + v, each reading two and writing one,
  // 2 x 3 x 512 x 1024 x 2 B = 6,291,456 B in 2 kernels.
  const model::ModelWork eager =
      work_under(model::Stack::pytorch_eager, model::Precision::mixed_bf16);
  const model::Op& eager_qkv =
      model::test::op_named(eager.blocks[1].backward, "attn.qkv.input_grad_sum");
  EXPECT_EQ(eager_qkv.op.bytes.count, 6'291'456);
  EXPECT_EQ(eager_qkv.op.kernels, 2);
  // and runs the three dgrads as three GEMMs.
  EXPECT_EQ(model::test::op_named(eager.blocks[1].backward, "attn.qkv.dgrad").op.kernels, 3);
}

TEST(ProjectionGradSum, MegatronCoreFusesTheProjectionsAndSumsNothing) {
  // Megatron-Core's linear_qkv and linear_fc1: one GEMM each, no gradients to add; the Llama
  // checkpoint's separate layout does not change what Megatron-Core runs.
  const model::ModelWork megatron =
      work_under(model::Stack::megatron_core, model::Precision::mixed_bf16);
  EXPECT_FALSE(has_op(megatron.blocks[1], "attn.qkv.input_grad_sum"));
  EXPECT_FALSE(has_op(megatron.blocks[1], "mlp.fc1.input_grad_sum"));
  // The same model under torch.compile has both (the test above): the check can fail.
  EXPECT_TRUE(
      has_op(work_under(model::Stack::torch_compile, model::Precision::mixed_bf16).blocks[1],
             "attn.qkv.input_grad_sum"));
}

}  // namespace
}  // namespace cs
