// Software stacks (models/software_stack.h): the host's dispatch time in the engine, eager's
// unfused elementwise chains, foreach AdamW, and a stack's overlap defaults in a scenario. Every
// expected figure is derived by hand in the comment above it.
#include "models/software_stack.h"

#include <gtest/gtest.h>

#include "cost_models/collective_algorithms.h"
#include "driver/simulation.h"
#include "error_of.h"
#include "fixed_cost_model.h"
#include "reports/bottleneck.h"
#include "scenarios/scenario.h"
#include "sim/critical_path.h"
#include "sim/engine.h"
#include "validate/fitted_parameters.h"

namespace cs {
namespace {

using test::op_us;

// `n` compute ops of `us` microseconds each, `kernels` launches each, in order on one rank.
sim::Timeline run_chain(int n, double us, uint16_t kernels, SimTime host,
                        cost::Interference slow = {}) {
  ir::TaskGraph g(1);
  const auto s = g.add_stream("compute");
  for (int i = 0; i < n; ++i) {
    ir::ComputeOp op = op_us(us);
    op.kernels = kernels;
    g.add_compute(0, s, op, g.label("op" + std::to_string(i), ir::Phase::forward));
  }
  g.finalize();
  test::FixedCostModel costs;
  costs.host_per_kernel = host;
  costs.slowdowns = slow;
  return sim::Engine(g, costs).run();
}

TEST(SoftwareStack, SmallKernelsAreHostBound) {
  // Ten 1 us kernels, 20 us of host each: the host issues op i (1-based) at 20 i us and the GPU,
  // idle by then, runs it at once: the last starts at 200 us and ends at 201 us. Without a host
  // cost the chain takes 10 us.
  EXPECT_EQ(run_chain(10, 1, 1, SimTime::from_us(20)).makespan, SimTime::from_us(201));
  EXPECT_EQ(run_chain(10, 1, 1, SimTime{}).makespan, SimTime::from_us(10));
  // The same with interference configured (the engine's other start path) and no communication
  // to slow anything: still 201 us.
  EXPECT_EQ(run_chain(10, 1, 1, SimTime::from_us(20), {0.5, 0.5}).makespan, SimTime::from_us(201));
}

TEST(SoftwareStack, AHostBoundStepIsBoundByTheHostOnItsCriticalPath) {
  // The ten 1 us kernels at 20 us of host each, above: op i (1-based) is ready when op i-1 ends,
  // at 20 (i - 1) + 1 us, and starts when issued, at 20 i us: 19 us waiting for the host, 20 for
  // the first (ready at 0). Walking back from the last: 10 x 1 us of kernels and 9 x 19 + 20 =
  // 191 us of host wait, together the 201 us step.
  ir::TaskGraph g(1);
  const auto s = g.add_stream("compute");
  for (int i = 0; i < 10; ++i)
    g.add_compute(0, s, op_us(1), g.label("op" + std::to_string(i), ir::Phase::forward));
  g.finalize();
  test::FixedCostModel costs;
  costs.host_per_kernel = SimTime::from_us(20);
  const sim::Timeline tl = sim::Engine(g, costs).run();
  const sim::CriticalPath path = sim::critical_path(g, tl);
  EXPECT_EQ(path.time[static_cast<size_t>(sim::PathClass::host)], SimTime::from_us(191));
  EXPECT_EQ(path.time[static_cast<size_t>(sim::PathClass::memory_bound)], SimTime::from_us(10));
  EXPECT_EQ(path.total(), tl.makespan);
  reports::BottleneckFigures f;
  f.step_time = tl.makespan;
  f.critical_path = path.time;
  const auto lines = reports::explain_bottleneck(f);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("step bound by the host: 95% of the critical path", 0), 0u) << lines[0];
}

TEST(SoftwareStack, TheHostRunsAheadOfLongKernels) {
  // Ten 100 us kernels, 20 us of host each: only the first waits for its host (starts at 20 us);
  // op i is issued at 20 i us, long before op i-1 ends, so the GPU runs back to back:
  // 20 + 10 x 100 = 1020 us.
  EXPECT_EQ(run_chain(10, 100, 1, SimTime::from_us(20)).makespan, SimTime::from_us(1020));
}

TEST(SoftwareStack, AnOpOfSeveralKernelsCostsTheHostEachLaunch) {
  // Three 10 us ops of 8 kernels at 5 us each: issued at 40, 80, 120 us; each starts when issued
  // (the previous ended 30 us earlier): the last ends at 130 us.
  EXPECT_EQ(run_chain(3, 10, 8, SimTime::from_us(5)).makespan, SimTime::from_us(130));
}

const model::Op& find_op(const model::ModelWork& w, const std::string& block,
                         const std::string& name, bool backward) {
  for (const auto& b : w.blocks) {
    if (b.name != block) continue;
    for (const auto& op : backward ? b.backward : b.forward) {
      if (op.name == name) return op;
    }
  }
  throw std::runtime_error("no op " + name + " in " + block);
}

model::ModelWork gpt2_small_work(model::Precision p, model::Stack stack) {
  model::WorkShape shape;
  shape.micro_batch = 1;
  shape.seq = 1024;
  shape.precision = p;
  model::set_stack_flags(shape, stack, model::CompileScope::model);  // as training_step does
  model::ModelWork w = model::build_model_work(model::find_model_preset("gpt2-small"), shape);
  model::apply_stack(w, model::stack_traits(stack));
  return w;
}

TEST(SoftwareStack, EagerRunsGpt2TanhGeluAsEightKernelsWidenedToFp32UnderAutocast) {
  // GPT-2 small, one sequence of 1024 tokens: the MLP's 3072-wide activation. Fused (ideal): the
  // GELU reads and writes 1024 x 3072 16-bit elements: 12,582,912 bytes; its backward reads x
  // and dy and writes dx (the model counts 4 accesses): 25,165,824 bytes. Eager under autocast:
  // 8 kernels forward and 10 backward at 4-byte elements (pow is on autocast's fp32 list), whose
  // accesses counted op by op are 18 forward (9 x the fused op's 2) and 28 backward (7 x its 4;
  // models/layers/mlp.cpp): 12,582,912 x 9 x 2 = 226,492,416 and 25,165,824 x 7 x 2 = 352,321,536
  // bytes.
  const auto ideal = gpt2_small_work(model::Precision::amp_fp16, model::Stack::ideal);
  const auto eager = gpt2_small_work(model::Precision::amp_fp16, model::Stack::pytorch_eager);
  EXPECT_EQ(find_op(ideal, "L1", "mlp.act", false).op.bytes.count, 12582912);
  EXPECT_EQ(find_op(ideal, "L1", "mlp.act", false).op.kernels, 1);
  EXPECT_EQ(find_op(eager, "L1", "mlp.act", false).op.bytes.count, 226492416);
  EXPECT_EQ(find_op(eager, "L1", "mlp.act", false).op.kernels, 8);
  EXPECT_EQ(find_op(ideal, "L1", "mlp.act.bwd", true).op.bytes.count, 25165824);
  EXPECT_EQ(find_op(eager, "L1", "mlp.act.bwd", true).op.bytes.count, 352321536);
  EXPECT_EQ(find_op(eager, "L1", "mlp.act.bwd", true).op.kernels, 10);
  // Dropout + residual add (GPT-2 has dropout): 2 kernels, 16-bit throughout, twice the bytes.
  EXPECT_EQ(find_op(eager, "L1", "attn.dropout_add", false).op.bytes.count,
            2 * find_op(ideal, "L1", "attn.dropout_add", false).op.bytes.count);
  // GEMMs are one kernel under every stack and keep their bytes.
  EXPECT_EQ(find_op(eager, "L1", "mlp.fc1", false).op.bytes.count,
            find_op(ideal, "L1", "mlp.fc1", false).op.bytes.count);
}

model::ModelWork llama_1b_compiled(model::CompileScope scope) {
  const model::StackTraits& compile = model::stack_traits(model::Stack::torch_compile);
  model::WorkShape shape;
  shape.micro_batch = 1;
  shape.seq = 1024;
  shape.precision = model::Precision::mixed_bf16;
  model::set_stack_flags(shape, model::Stack::torch_compile, scope);
  model::ModelWork w = model::build_model_work(model::find_model_preset("llama3.2-1b"), shape);
  model::apply_stack(w, compile, scope);
  return w;
}

TEST(SoftwareStack, TorchCompileRunsWhatItDidNotCompileAsEager) {
  // torch.compile of the whole model: every op is one kernel. Each transformer block compiled
  // (TorchTitan until 2025): the head's final norm and loss run as eager's kernels, the blocks'
  // ops stay fused; the blocks and the loss (TorchTitan since 2025): only the norm runs eager.
  // Llama 3.2 1B, one sequence of 1024 tokens.
  const auto whole = llama_1b_compiled(model::CompileScope::model);
  const auto blocks = llama_1b_compiled(model::CompileScope::blocks);
  const auto with_loss = llama_1b_compiled(model::CompileScope::blocks_and_loss);
  model::WorkShape shape;
  shape.micro_batch = 1;
  shape.seq = 1024;
  shape.precision = model::Precision::mixed_bf16;
  model::ModelWork eager = model::build_model_work(model::find_model_preset("llama3.2-1b"), shape);
  model::apply_stack(eager, model::stack_traits(model::Stack::pytorch_eager));
  for (const char* name : {"loss", "ln_f"}) {
    EXPECT_EQ(find_op(whole, "head", name, false).op.kernels, 1) << name;
    EXPECT_EQ(find_op(blocks, "head", name, false).op.kernels,
              find_op(eager, "head", name, false).op.kernels)
        << name;
    EXPECT_EQ(find_op(blocks, "head", name, false).op.bytes.count,
              find_op(eager, "head", name, false).op.bytes.count)
        << name;
  }
  // The loss as Hugging Face's ForCausalLMLoss runs it eager (logits.float(), the labels' pad and
  // shift, log_softmax, nll_loss: 6 kernels; models/layers/embedding.cpp); RMSNorm eager: 8.
  EXPECT_EQ(find_op(blocks, "head", "loss", false).op.kernels, 6);
  EXPECT_EQ(find_op(blocks, "head", "ln_f", false).op.kernels, 8);
  EXPECT_EQ(find_op(with_loss, "head", "loss", false).op.kernels, 1);
  EXPECT_EQ(find_op(with_loss, "head", "ln_f", false).op.kernels,
            find_op(blocks, "head", "ln_f", false).op.kernels);
  EXPECT_EQ(find_op(blocks, "L1", "mlp.act", false).op.kernels, 1);
  // The eager loss holds eager's fp32 intermediates at the turn from forward to backward, 12 B
  // per logit against the fused loss's 16-bit logits and fp32 log-softmax, 6 B: 1024 x 128,256
  // logits x 6 B = 788,004,864 B more.
  EXPECT_EQ(blocks.blocks.back().logits.count - whole.blocks.back().logits.count, 788'004'864);
  EXPECT_EQ(with_loss.blocks.back().logits.count, whole.blocks.back().logits.count);
}

TEST(SoftwareStack, CompileScopeIsForTorchCompileOnly) {
  const std::string base =
      "name: s\nmodel: {preset: gpt2-small}\ncluster: {preset: single_h100}\nlayout: {dp: 1}\n";
  const auto sc = scenario::parse_scenario(
      base +
          "stack: torch_compile\ntraining: {global_batch: 1, micro_batch: 1, seq_len: 1024, "
          "compile_scope: blocks}\n",
      "a.yaml");
  EXPECT_EQ(sc.training.compile_scope, model::CompileScope::blocks);
  try {
    scenario::parse_scenario(base +
                                 "stack: pytorch_eager\ntraining: {global_batch: 1, "
                                 "micro_batch: 1, seq_len: 1024, compile_scope: blocks}\n",
                             "b.yaml");
    FAIL() << "accepted compile_scope under pytorch_eager";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("training.compile_scope"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("torch_compile only"), std::string::npos) << e.what();
  }
  EXPECT_THROW(scenario::parse_scenario(base + "stack: torch_compile\ntraining: {global_batch: 1, "
                                               "micro_batch: 1, seq_len: 1024, "
                                               "compile_scope: layers}\n",
                                        "c.yaml"),
               UserError);
}

TEST(SoftwareStack, EagerSumsBiasGradientsAndCastsWeightGradientsBack) {
  // GPT-2 small, 1024 tokens, amp_fp16. A biased linear's bias gradient is its own reduction
  // kernel under eager PyTorch, reading the output gradient [T, n] once: fc1 (n = 3072):
  // 1024 x 3072 x 2 B = 6,291,456 B; qkv (n = 2304): 4,718,592 B. Megatron-Core (Transformer
  // Engine) folds it into the wgrad GEMM: no such op. Autocast casts each 16-bit weight gradient
  // back to fp32 (read 2, write 4 B): layer 1's 7,087,872 parameters (qkv 2,362,368, proj
  // 590,592, fc1 2,362,368, fc2 2,360,064, two LayerNorms 3,072) x 6 = 42,527,232 B.
  const auto eager = gpt2_small_work(model::Precision::amp_fp16, model::Stack::pytorch_eager);
  EXPECT_EQ(find_op(eager, "L1", "mlp.fc1.bias_grad", true).op.bytes.count, 6'291'456);
  EXPECT_EQ(find_op(eager, "L1", "attn.qkv.bias_grad", true).op.bytes.count, 4'718'592);
  EXPECT_EQ(find_op(eager, "L1", "weights.cast.bwd", true).op.bytes.count, 42'527'232);
  const auto megatron = gpt2_small_work(model::Precision::mixed_bf16, model::Stack::megatron_core);
  EXPECT_THROW(find_op(megatron, "L1", "mlp.fc1.bias_grad", true), std::runtime_error);
  EXPECT_THROW(find_op(megatron, "L1", "weights.cast.bwd", true), std::runtime_error);
}

model::ModelWork one_mixtral_layer(model::Precision p, model::Stack stack) {
  model::ModelSpec m = model::find_model_preset("mixtral-8x7b");
  m.layers = 1;
  model::WorkShape shape;
  shape.micro_batch = 1;
  shape.seq = 1024;
  shape.precision = p;
  model::set_stack_flags(shape, stack, model::CompileScope::model);
  model::ModelWork w = model::build_model_work(m, shape);
  model::apply_stack(w, model::stack_traits(stack));
  return w;
}

TEST(SoftwareStack, AutocastRunsHuggingFaceExpertsInFp32OneKernelAnExpert) {
  // One Mixtral layer, 1,024 tokens, top-2 of 8 experts: 2,048 routed copies, 256 an expert. Under
  // eager PyTorch with autocast (amp_bf16) the experts' fc1 (w1 and w3 stacked: n = 2 x 14,336,
  // k = 4,096) runs in fp32, one mm an expert: 8 kernels moving 4-byte elements,
  // (256 x 4,096 + 4,096 x 28,672 + 256 x 28,672) x 8 x 4 B = 4,026,531,840 B.
  const auto eager = one_mixtral_layer(model::Precision::amp_bf16, model::Stack::pytorch_eager);
  const ir::ComputeOp& fc1 = find_op(eager, "L0", "mlp.experts.fc1", false).op;
  EXPECT_EQ(fc1.dtype, ir::DType::fp32);
  EXPECT_EQ(fc1.kernels, 8);
  EXPECT_EQ(fc1.m, 256);
  EXPECT_EQ(fc1.bytes.count, 4'026'531'840);
  // Autocast casts only the other weights of the layer to 16 bits (read 4, write 2 B): q and o
  // 4,096 x 4,096, k and v 4,096 x 1,024, the router 4,096 x 8, two RMSNorms of 4,096:
  // 41,984,000 x 6 = 251,904,000 B.
  EXPECT_EQ(find_op(eager, "L0", "weights.cast", false).op.bytes.count, 251'904'000);
  // Megatron-Core's bf16 parameters: one grouped GEMM in bf16.
  const auto megatron =
      one_mixtral_layer(model::Precision::mixed_bf16, model::Stack::megatron_core);
  const ir::ComputeOp& grouped = find_op(megatron, "L0", "mlp.experts.fc1", false).op;
  EXPECT_EQ(grouped.dtype, ir::DType::bf16);
  EXPECT_EQ(grouped.kernels, 1);
}

TEST(SoftwareStack, AOneKernelGeluStaysOneKernelUnderEager) {
  // GPT-2 small with transformers' gelu_pytorch_tanh (PyTorch's tanh GELU, one kernel each way,
  // in 16 bits under autocast): eager keeps the fused op's 12,582,912 bytes and 1 kernel forward,
  // and 25,165,824 bytes and 1 kernel backward, where gelu_new is 8 and 10 fp32 kernels.
  model::ModelSpec m = model::find_model_preset("gpt2-small");
  m.activation = model::Activation::gelu_pytorch_tanh;
  model::WorkShape shape;
  shape.micro_batch = 1;
  shape.seq = 1024;
  shape.precision = model::Precision::amp_fp16;
  model::set_stack_flags(shape, model::Stack::pytorch_eager, model::CompileScope::model);
  model::ModelWork w = model::build_model_work(m, shape);
  model::apply_stack(w, model::stack_traits(model::Stack::pytorch_eager));
  EXPECT_EQ(find_op(w, "L1", "mlp.act", false).op.kernels, 1);
  EXPECT_EQ(find_op(w, "L1", "mlp.act", false).op.bytes.count, 12582912);
  EXPECT_EQ(find_op(w, "L1", "mlp.act.bwd", true).op.kernels, 1);
  EXPECT_EQ(find_op(w, "L1", "mlp.act.bwd", true).op.bytes.count, 25165824);
  // Nor does it keep gelu_new's intermediates: pow's fp32 input, tanh's output and the
  // (1 + tanh) operand, 3 x 4 B x 3072 = 36,864 B per token less (model_work.cpp).
  model::ModelSpec tensor_ops = model::find_model_preset("gpt2-small");
  EXPECT_EQ(model::unfused_chain_saved_bytes_per_token(tensor_ops, shape) -
                model::unfused_chain_saved_bytes_per_token(m, shape),
            36'864);
  // The key is for GELU models: a SwiGLU model refuses it, naming the key.
  const std::string base =
      "name: s\ncluster: {preset: single_h100}\nlayout: {dp: 1}\n"
      "training: {global_batch: 1, micro_batch: 1, seq_len: 1024}\n";
  const std::string e = test::error_of([&] {
    scenario::parse_scenario(base + "model: {preset: llama3.2-1b, activation: gelu}\n", "a.yaml");
  });
  EXPECT_NE(e.find("model.activation"), std::string::npos) << e;
  EXPECT_NE(e.find("SwiGLU"), std::string::npos) << e;
  EXPECT_THROW(
      scenario::parse_scenario(base + "model: {preset: gpt2-small, activation: relu}\n", "b.yaml"),
      UserError);
}

TEST(SoftwareStack, WithoutAutocastTheChainKeepsItsElementSize) {
  // mixed_bf16 (Megatron-style, no autocast): the same 18 accesses at 2 bytes: 12,582,912 x 9.
  const auto eager = gpt2_small_work(model::Precision::mixed_bf16, model::Stack::pytorch_eager);
  EXPECT_EQ(find_op(eager, "L1", "mlp.act", false).op.bytes.count, 12582912LL * 9);
  // LayerNorm keeps its 16-bit bytes without autocast; under it (layer_norm is on autocast's
  // fp32 list) its one forward kernel moves 4-byte elements: twice the fused op's.
  const auto amp = gpt2_small_work(model::Precision::amp_fp16, model::Stack::pytorch_eager);
  const auto amp_ideal = gpt2_small_work(model::Precision::amp_fp16, model::Stack::ideal);
  EXPECT_EQ(find_op(eager, "L1", "ln_1", false).op.bytes.count,
            find_op(gpt2_small_work(model::Precision::mixed_bf16, model::Stack::ideal), "L1",
                    "ln_1", false)
                .op.bytes.count);
  EXPECT_EQ(find_op(amp, "L1", "ln_1", false).op.bytes.count,
            2 * find_op(amp_ideal, "L1", "ln_1", false).op.bytes.count);
  // A fusing stack leaves the model's ops as they are.
  const auto megatron = gpt2_small_work(model::Precision::mixed_bf16, model::Stack::megatron_core);
  EXPECT_EQ(find_op(megatron, "L1", "mlp.act", false).op.bytes.count, 12582912);
}

TEST(SoftwareStack, ForeachAdamWMakesEightPassesOverTheState) {
  // GPT-2 Large's 774,030,080 parameters under amp (fp32 weights and gradients). Fused: read p,
  // g, m, v and write p, m, v: 28 B/param = 21,672,842,240 bytes. torch's foreach path: mul_ p
  // (8), lerp_ m (12), mul_ v (8), addcmul_ v (12), sqrt (8), div_ (8), add_ (8), addcdiv_ p
  // (16): 80 B/param = 61,922,406,400 bytes. multi_tensor_apply launches a kernel every 320
  // chunks of 65,536 elements: ceil(774,030,080 / 20,971,520) = 37 launches of the fused kernel,
  // and of each of foreach's 8 ops: 296.
  const auto amp = model::precision_info(model::Precision::amp_fp16);
  const int64_t params = 774030080;
  EXPECT_EQ(model::optimizer_op(params, amp, model::OptimizerImpl::fused).bytes.count,
            21672842240LL);
  const auto foreach = model::optimizer_op(params, amp, model::OptimizerImpl::foreach);
  EXPECT_EQ(foreach.bytes.count, 61922406400LL);
  EXPECT_EQ(model::optimizer_op(params, amp, model::OptimizerImpl::fused).kernels, 37);
  EXPECT_EQ(foreach.kernels, 296);
}

std::string scenario_text(const std::string& stack, const std::string& layout,
                          const std::string& extra_training = "") {
  return "name: s\n" + (stack.empty() ? "" : "stack: " + stack + "\n") +
         "model: {preset: gpt2-small}\ncluster: {preset: dgx_h100}\nlayout: " + layout +
         "\ntraining: {global_batch: 8, micro_batch: 1, seq_len: 1024" + extra_training + "}\n";
}

TEST(SoftwareStack, MegatronCoreTurnsOnTheOverlapTheLayoutAdmits) {
  using scenario::parse_scenario;
  // TP 2 with sequence parallelism and ZeRO-1: both overlaps on by the stack's default.
  const auto on =
      parse_scenario(scenario_text("megatron_core",
                                   "{tp: 2, dp: 4, sequence_parallel: true, data_parallel: zero1}"),
                     "a.yaml");
  EXPECT_EQ(on.training.stack, model::Stack::megatron_core);
  EXPECT_TRUE(on.training.tp_comm_overlap);
  EXPECT_TRUE(on.training.overlap_param_gather);
  // TP 1 and DDP admit neither: both stay off rather than failing validation.
  const auto off = parse_scenario(scenario_text("megatron_core", "{dp: 8}"), "b.yaml");
  EXPECT_FALSE(off.training.tp_comm_overlap);
  EXPECT_FALSE(off.training.overlap_param_gather);
  // A key in the file wins over the stack's default.
  const auto explicit_off =
      parse_scenario(scenario_text("megatron_core",
                                   "{tp: 2, dp: 4, sequence_parallel: true, data_parallel: zero1}",
                                   ", tp_comm_overlap: false"),
                     "c.yaml");
  EXPECT_FALSE(explicit_off.training.tp_comm_overlap);
  EXPECT_TRUE(explicit_off.training.overlap_param_gather);
  // No stack: ideal, nothing overlapped by default.
  const auto plain = parse_scenario(
      scenario_text("", "{tp: 2, dp: 4, sequence_parallel: true, data_parallel: zero1}"), "d.yaml");
  EXPECT_EQ(plain.training.stack, model::Stack::ideal);
  EXPECT_FALSE(plain.training.tp_comm_overlap);
}

TEST(SoftwareStack, OptimizerImplOverridesTheStacksAdamW) {
  using scenario::parse_scenario;
  // Eager PyTorch's default is torch's foreach AdamW; a recipe passing fused=True (TorchTitan's
  // default, --optimizer.implementation fused) says so with training.optimizer_impl.
  const auto plain = parse_scenario(scenario_text("pytorch_eager", "{dp: 8}"), "f.yaml");
  EXPECT_FALSE(plain.training.optimizer_impl.has_value());
  EXPECT_EQ(plain.training.optimizer(), model::OptimizerImpl::foreach);
  const auto fused = parse_scenario(
      scenario_text("pytorch_eager", "{dp: 8}", ", optimizer_impl: fused"), "g.yaml");
  EXPECT_EQ(fused.training.optimizer(), model::OptimizerImpl::fused);
  // And the other way: torch.compile compiles the model, not torch.optim's default foreach step.
  const auto foreach = parse_scenario(
      scenario_text("torch_compile", "{dp: 8}", ", optimizer_impl: foreach"), "h.yaml");
  EXPECT_EQ(foreach.training.optimizer(), model::OptimizerImpl::foreach);
  try {
    parse_scenario(scenario_text("pytorch_eager", "{dp: 8}", ", optimizer_impl: apex"), "i.yaml");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("training.optimizer_impl"), std::string::npos) << what;
    EXPECT_NE(what.find("fused, foreach"), std::string::npos) << what;
  }
}

TEST(SoftwareStack, HostPerKernelIsTheHostsAndOverridesTheStacks) {
  using scenario::parse_scenario;
  // Unset: the stack's 30 us (eager; fitted on our own Hugging Face steps,
  // models/software_stack.cpp). Set: the host's own figure (seed 002's lean GPT-2 ran at about 20).
  const auto plain = parse_scenario(scenario_text("pytorch_eager", "{dp: 8}"), "j.yaml");
  EXPECT_DOUBLE_EQ(plain.training.host_time_per_kernel().us(), 30.0);
  const auto lean = parse_scenario(
      scenario_text("pytorch_eager", "{dp: 8}", ", host_per_kernel: 20us"), "k.yaml");
  EXPECT_DOUBLE_EQ(lean.training.host_time_per_kernel().us(), 20.0);
  // One GPT-2 small sequence of 128 tokens per micro-batch on one H100 is host-bound at 20 us
  // already (the kernels are shorter than their launches), so doubling the host's time per kernel
  // must make the step longer by more than half of what it was, and by at most double.
  auto one = [&](const std::string& extra) {
    auto s = parse_scenario(
        "name: s\nstack: pytorch_eager\nmodel: {preset: gpt2-small}\ncluster: {preset: "
        "single_h100}\n"
        "layout: {dp: 1}\ntraining: {global_batch: 1, micro_batch: 1, seq_len: 128" +
            extra + "}\n",
        "l.yaml");
    return driver::simulate(s, {.with_baseline = false}).report.step_time.us();
  };
  const double at20 = one(", host_per_kernel: 20us"), at40 = one(", host_per_kernel: 40us");
  EXPECT_GT(at40, 1.5 * at20);
  EXPECT_LT(at40, 2.0 * at20 + 1.0);
  try {
    parse_scenario(scenario_text("pytorch_eager", "{dp: 8}", ", host_per_kernel: 2s"), "m.yaml");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("training.host_per_kernel"), std::string::npos)
        << e.what();
  }
}

TEST(SoftwareStack, AnUnknownStackNamesTheValidOnes) {
  try {
    scenario::parse_scenario(scenario_text("tensorflow", "{dp: 8}"), "e.yaml");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("e.yaml:2"), std::string::npos) << what;
    EXPECT_NE(what.find("ideal, pytorch_eager, torch_compile, megatron_core, deepspeed"),
              std::string::npos)
        << what;
  }
}

TEST(OpSelectiveRecompute, RecomputesEverySecondGemmAndTheNonMatmulOps) {
  // Llama 3 8B (h 4096, 32 heads, 8 KV heads of 128, SwiGLU 14336), one sequence of 8192 tokens,
  // bf16, TP 1. A layer's forward GEMMs in order: qkv, proj, fc1 (gate and up), fc2; TorchTitan's
  // per-op policy recomputes the 2nd and 4th: proj, 2 x 8192 x 4096 x 4096 = 274,877,906,944
  // FLOPs, and fc2, 2 x 8192 x 14336 x 4096 = 962,072,674,304; the attention kernel is kept.
  model::WorkShape shape;
  shape.micro_batch = 1;
  shape.seq = 8192;
  shape.precision = model::Precision::mixed_bf16;
  shape.recompute = model::Recompute::op_selective;
  const auto& llama = model::find_model_preset("llama3-8b");
  const auto w = model::build_model_work(llama, shape);
  const model::Block& layer = w.blocks[1];
  double gemm_flops = 0;
  bool attention = false;
  for (const auto& op : layer.recompute) {
    if (op.op.op == ir::OpClass::gemm) gemm_flops += op.op.flops.value;
    attention = attention || op.op.op == ir::OpClass::attention;
  }
  EXPECT_DOUBLE_EQ(gemm_flops, 274877906944.0 + 962072674304.0);
  EXPECT_FALSE(attention);
  // Kept for backward: the layer input, 8192 x 4096 x 2 = 67,108,864 bytes; Q, K, V, the
  // attention output and fc1's gate and up, 8192 x 2 x (4096 + 2 x 1024 + 4096 + 2 x 14336) =
  // 637,534,208; the fp32 log-sum-exp, 32 x 8192 x 4 = 1,048,576. Total 705,691,648 bytes.
  EXPECT_EQ(model::activation_bytes_of_layer(llama, shape, 0).count, 705691648);
}

TEST(FittedParameters, AtMostTenEachWithAUnitAndItsDataReadFromTheConstantsInUse) {
  // Issue 13: at most 10 fitted parameters, printed with units. The list reads the constants the
  // models use: change one and the list changes with it.
  const auto params = validate::fitted_parameters();
  EXPECT_LE(params.size(), 10u);
  for (const auto& p : params) {
    EXPECT_FALSE(p.unit.empty()) << p.name;
    EXPECT_FALSE(p.fitted_on.empty()) << p.name;
  }
  auto value = [&](const std::string& name) {
    for (const auto& p : params) {
      if (p.name == name) return p.value;
    }
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(value("collective launch overhead"), cost::kH100LaunchOverheadUs);
  EXPECT_DOUBLE_EQ(value("eager host time per kernel"),
                   model::stack_traits(model::Stack::pytorch_eager).host_per_kernel.us());
}

}  // namespace
}  // namespace cs
