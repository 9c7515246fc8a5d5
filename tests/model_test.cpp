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
  // Hugging Face model cards (safetensors totals): GQA, SwiGLU, RMSNorm, untied embeddings.
  EXPECT_EQ(model::parameter_count(model::find_model_preset("llama2-13b")), 13015864320);
  EXPECT_EQ(model::parameter_count(model::find_model_preset("llama2-70b")), 68976648192);
  EXPECT_EQ(model::parameter_count(model::find_model_preset("llama3-8b")), 8030261248);
  EXPECT_EQ(model::parameter_count(model::find_model_preset("llama3-70b")), 70553706496);
  EXPECT_EQ(model::parameter_count(model::find_model_preset("llama3-405b")), 405853388800);
  // GPT-3 "175B" (Brown et al. 2020): 96 x 12 h^2 plus embeddings = 174.6B.
  EXPECT_EQ(model::parameter_count(model::find_model_preset("gpt3-175b")), 174604259328);
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

TEST(Models, ActivationMemoryTensorSequenceParallelAndRecomputeForms) {
  // Korthikanti et al. 2022, Table 2, per layer with t-way tensor parallelism:
  //   TP:                  s*b*h*(10 + 24/t + 5*a*s/(h*t))
  //   TP + SP:             s*b*h/t * (34 + 5*a*s/h)
  //   TP + SP + selective: s*b*h/t * 34
  //   full recompute:      2*s*b*h (the layer input; / t with SP)
  // GPT-3 175B dims (h 12288, a 96), s 2048, b 1, t 8, fp16, eager attention.
  const auto& m = model::find_model_preset("gpt3-175b");
  model::WorkShape w;
  w.micro_batch = 1;
  w.seq = 2048;
  w.tp = 8;
  w.precision = model::Precision::mixed_fp16;
  w.attention = model::AttentionImpl::eager;
  const int64_t s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const int64_t sbh = s * b * h;
  EXPECT_EQ(model::activation_bytes_per_layer(m, w).count, sbh * 10 + sbh * 24 / t + 5 * a * s * s * b / t);
  w.sequence_parallel = true;
  EXPECT_EQ(model::activation_bytes_per_layer(m, w).count, sbh * 34 / t + 5 * a * s * s * b / t);
  w.recompute = model::Recompute::selective;
  EXPECT_EQ(model::activation_bytes_per_layer(m, w).count, sbh * 34 / t);
  w.recompute = model::Recompute::full;
  EXPECT_EQ(model::activation_bytes_per_layer(m, w).count, 2 * sbh / t);
  w.sequence_parallel = false;
  EXPECT_EQ(model::activation_bytes_per_layer(m, w).count, 2 * sbh);
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
