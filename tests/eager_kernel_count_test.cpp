// Kernel launches of a Hugging Face eager step (models/layers/: each submodule's eager kernel
// counts; models/software_stack.cpp prices each launch at the host's time per kernel) against
// what the H200 campaign measured: the GPU activities of one profiled step, batch 1 at 1,024
// tokens, amp bf16, fused AdamW (validate/measurements/h200_20261128/steps/
// steps_pytorch_eager.csv, column kernels_per_step; the configs the runs trained beside it).
// The counts are mechanisms read off the model code (nothing is fitted on these figures); the
// model counts a subset of the launches, so it stays below the measurement.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "driver/simulation.h"
#include "error_of.h"
#include "scenarios/scenario.h"
#include "test_paths.h"

namespace cs {
namespace {

// Kernel launches of a simulated step, every rank's compute ops.
int64_t launches(const driver::SimulationResult& r) {
  int64_t kernels = 0;
  for (const ir::Task& t : r.step.graph.tasks()) {
    if (t.kind == ir::TaskKind::compute) kernels += r.step.graph.compute(t).kernels;
  }
  return kernels;
}

// `model_keys`: keys added to the model block (", mtp_depth: 0").
int64_t kernels_per_step(const std::string& architecture, const std::string& model_keys = "") {
  const std::string text =
      "name: count\nstack: pytorch_eager\n"
      "cluster: {preset: single_h100, gpu: h200}\n"
      "model: {hf_config: " +
      cs::test_paths::source_dir() + "/validate/measurements/h200_20261128/steps/configs/" +
      architecture + ".json" + model_keys +
      "}\nlayout: {dp: 1}\n"
      "training: {global_batch: 1, micro_batch: 1, seq_len: 1024, "
      "precision: amp_bf16, optimizer_impl: fused}\n";
  driver::SimulateOptions options;
  options.with_baseline = false;
  options.suggest = false;
  return launches(driver::simulate(scenario::parse_scenario(text, "count.yaml"), options));
}

TEST(EagerKernelCount, DenseHuggingFaceStepsLaunchWhatTheH200Counted) {
  // Measured launches (layers as run): GPT-2 1,159 (12), Llama 2 7B 408 (2), Llama 3.2 3B 396
  // (2), Qwen3 8B 553 (2), Gemma 3 1B 1,687 (6), Phi-3 mini 373 (2), Phi-4 438 (2), Mistral 7B
  // 412 (2), Qwen2.5 7B 479 (2), Pythia 70M 756 (6). Before the per-tensor autocast casts, the
  // separate q/k/v and gate/up GEMMs, rotary per tensor, SDPA's launches, the fused projections'
  // split backward, the embedding's backward and multi_tensor_apply's launches were counted, the
  // model counted 31-55% of them (Qwen3 8B 180 of 553: its q/k norms were not ops at all) and the
  // host time per kernel stood in for the rest, so that host-bound steps of different
  // architectures erred by different factors (Pythia +58..+87%). Now each is 79-91% of its
  // measurement: the views, the loss's and the rotary tables' small ops and Gemma's embedding
  // scale and sandwich-norm casts are what remain.
  const std::pair<const char*, int64_t> measured[] = {
      {"gpt2", 1159},       {"llama-2-7b", 408},    {"llama-3.2-3b", 396}, {"qwen3-8b", 553},
      {"gemma-3-1b", 1687}, {"phi-3-mini-4k", 373}, {"phi-4", 438},        {"mistral-7b-v0.1", 412},
      {"qwen2.5-7b", 479},  {"pythia-70m", 756}};
  for (const auto& [architecture, launches] : measured) {
    const double share = double(kernels_per_step(architecture)) / double(launches);
    EXPECT_GE(share, 0.78) << architecture;
    EXPECT_LE(share, 1.0) << architecture;
  }
}

TEST(EagerKernelCount, MixtureOfExpertsRoutingIsNotCountedYet) {
  // The MoE steps' routing (softmax, top-k, the tokens' sort and histogram, index and scatter ops
  // per layer) is not counted op by op: Mixtral 8x7B (1 layer) 312 of 435 measured, DeepSeek-V3
  // (2 layers, MLA and group-limited routing) 596 of 1,024. This test holds the gap where it is,
  // so that a change that widens it shows.
  EXPECT_GE(double(kernels_per_step("mixtral-8x7b")) / 435.0, 0.70);
  // transformers' DeepseekV3ForCausalLM builds no MTP module (the suite's mtp_depth: 0).
  EXPECT_GE(double(kernels_per_step("deepseek-v3", ", mtp_depth: 0")) / 1024.0, 0.55);
}

TEST(EagerKernelCount, SeparateProjectionsLaunchMoreAndTheKeysRefuseBadValues) {
  // GPT-2 small (12 layers) eager under amp, its q/k/v written as three linears instead of c_attn:
  // per layer the GEMMs forward, dgrad and wgrad 3 each instead of 1 (+6), the bias sums 3 (+2),
  // the casts of the fp32 norm output 3 forward (+2) and 3 back with 2 adds (+4), autocast's
  // casts of weights and biases 6 instead of 2 each way (+8), and no split backward (-1): +21 a
  // layer, 252 a step.
  const std::string base =
      "name: g\nstack: pytorch_eager\ncluster: {preset: single_h100}\nlayout: {dp: 1}\n"
      "training: {global_batch: 1, micro_batch: 1, seq_len: 1024, precision: amp_bf16}\n";
  driver::SimulateOptions o;
  o.with_baseline = false;
  o.suggest = false;
  auto run = [&](const std::string& model) {
    return launches(driver::simulate(
        scenario::parse_scenario(base + "model: {preset: gpt2-small" + model + "}\n", "g.yaml"),
        o));
  };
  EXPECT_EQ(run(", projections: separate") - run(""), 252);
  // A bad value names the key, the value and what is valid.
  std::string e = test::error_of([&] {
    scenario::parse_scenario(base + "model: {preset: gpt2-small, projections: sliced}\n", "g.yaml");
  });
  EXPECT_NE(e.find("model.projections"), std::string::npos) << e;
  EXPECT_NE(e.find("fused_sliced"), std::string::npos) << e;
  e = test::error_of([&] {
    scenario::parse_scenario(base + "model: {preset: llama3.2-1b, rotary_fraction: 0}\n", "g.yaml");
  });
  EXPECT_NE(e.find("model.rotary_fraction"), std::string::npos) << e;
  EXPECT_NE(e.find("above 0 and at most 1"), std::string::npos) << e;
  // GPT-2 has learned positions, nothing to rotate.
  EXPECT_THROW(scenario::parse_scenario(
                   base + "model: {preset: gpt2-small, rotary_fraction: 0.5}\n", "g.yaml"),
               UserError);
}

}  // namespace
}  // namespace cs
