// Parameter counts against published figures, and activation memory against Korthikanti et al.
#include <gtest/gtest.h>

#include "models/model_spec.h"
#include "models/model_work.h"

namespace cs {
namespace {

TEST(Models, ParameterCountsMatchPublishedFigures) {
  // GPT-2 small: 124,439,808 (seed 002 and HF). Large: 774,030,080 (HF gpt2-large).
  EXPECT_EQ(model::parameter_count(model::find_model_preset("gpt2-small")), 124439808);
  EXPECT_EQ(model::parameter_count(model::find_model_preset("gpt2-large")), 774030080);
  // Llama 2 7B: 6,738,415,616 (HF meta-llama/Llama-2-7b-hf).
  EXPECT_EQ(model::parameter_count(model::find_model_preset("llama2-7b")), 6738415616);
}

TEST(Models, ActivationMemoryFollowsKorthikanti) {
  // GPT-2 dims, 16-bit activations, dropout, eager attention, no parallelism:
  // s*b*h*(34 + 5*a*s/h) bytes per layer.
  const auto& m = model::find_model_preset("gpt2-large");
  model::WorkShape w;
  w.micro_batch = 8;
  w.seq = 1024;
  w.precision = model::Precision::mixed_fp16;
  w.attention = model::AttentionImpl::eager;
  const int64_t s = 1024, b = 8, h = 1280, a = 20;
  EXPECT_EQ(model::activation_bytes_per_layer(m, w).count, s * b * h * 34 + 5 * a * s * s * b);
}

TEST(Models, BackwardGemmFlopsAreTwiceForward) {
  const auto work = model::build_model_work(model::find_model_preset("gpt2-small"), {8, 1024, 1, false});
  double fwd = 0, bwd = 0;
  for (const auto& b : work.blocks) {
    for (const auto& op : b.forward) fwd += op.op.op == ir::OpClass::gemm ? op.op.flops.value : 0;
    for (const auto& op : b.backward) bwd += op.op.op == ir::OpClass::gemm ? op.op.flops.value : 0;
  }
  EXPECT_DOUBLE_EQ(bwd, 2.0 * fwd);
}

TEST(Models, UnknownPresetListsValidOnes) {
  try {
    model::find_model_preset("gpt5");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("valid presets: gpt2-small, gpt2-medium"), std::string::npos);
  }
}

}  // namespace
}  // namespace cs
