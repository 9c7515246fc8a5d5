#include "models/software_stack.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"

namespace cs::model {
namespace {

// Host time per kernel under PyTorch eager: the Python module calls, the dispatcher (autograd and
// autocast keys), the ops that launch nothing (views, splits, the attention interface's own
// Python) and cudaLaunchKernel, per kernel launched. It is the one constant fitted here, on our
// own Hugging Face eager steps on two cloud hosts (validate/suites/h100_torch_steps_202611.yaml
// and h200_gpu_database_20261128_calibration.yaml: mean MAPE minimised by `validate --suite
// validate/suites --fit`; 29.5-31 us are within 0.05 points). The H200 campaign measures it
// directly too: the host's time to issue a step over the kernels its profiler counts, 25-49 us
// (34 us for GPT-2 at batch 1; validate/measurements/h200_20261128, host_us_per_kernel). Until
// 2026-11-28 the model counted 31-55% of a step's launches and this constant (then 51.5 us)
// stood in for the rest, so host-bound steps erred by their architecture's share (Pythia 70M
// +58..+87%); the eager counts now follow the model code (models/layers/, each submodule's
// eager kernels; tests/eager_kernel_count_test.cpp holds them at 79-91% of the measured
// launches). Seed 002's own GPT-2 (MyGPT2LMHeadModel, not Hugging Face's) ran its batch-1 step
// 1.57x faster on its host than ours did (16.5k against 10.5k tokens/s): a leaner model on
// another CPU, which `training.host_per_kernel` describes. DeepSpeed runs the same eager model.
constexpr double kEagerHostUs = 30;
// Megatron-Core is eager PyTorch too, but its launches are counted per fused op (a TE layer, a
// fused bias-GeLU), not op by op, and no trace of ours counts them: it keeps the time per counted
// kernel the Hugging Face steps gave while their launches were counted the same way (51.5 us,
// fitted on h100_torch_steps_202611 before 2026-11-28). At 30 us, vTrain's small Megatron-DeepSpeed
// rows (validate/suites/vtrain_a100_single_node.yaml) go from -25% to -31%.
constexpr double kMegatronHostUs = 51.5;
// torch.compile (Inductor) calls its generated kernels from a flat wrapper, with no module calls
// and no per-op dispatch, but each Triton kernel goes through its Python launcher, the compiled
// graph through AOTAutograd's runtime wrappers and guards, and the optimizer stays eager: per
// kernel the model counts (one per fused op), 50 us, fitted like the eager constant on the same
// two campaigns' compiled rows (mean MAPE minimised; 45-56 us within 0.05 points, against a prior
// of 5 us, a bare launch). The H200 campaign's compiled GPT-2 at batch 4 issues its step in 21.6
// ms of host for the model's 331 kernels: 65 us each.
constexpr double kCompiledHostUs = 50;

const StackTraits kStacks[] = {
    {Stack::ideal, true, SimTime{}, OptimizerImpl::fused, false, false,
     "every chain fused, no host cost: the kernels clustersim's executor runs"},
    {Stack::pytorch_eager, false, SimTime::from_us(kEagerHostUs), OptimizerImpl::foreach, false,
     false, "PyTorch eager: one kernel per tensor op, foreach AdamW (torch.optim default)"},
    {Stack::torch_compile, true, SimTime::from_us(kCompiledHostUs), OptimizerImpl::fused, false,
     false, "torch.compile (TorchTitan): Inductor fuses elementwise chains and norms, fused AdamW"},
    // NVIDIA's published Megatron-Core / NeMo performance configurations turn on the distributed
    // optimizer's overlap (--overlap-grad-reduce, --overlap-param-gather) and TP communication
    // overlap (--tp-comm-overlap, with sequence parallelism); Megatron-LM's own argument defaults
    // are off. The stack takes the published configurations' defaults.
    {Stack::megatron_core, true, SimTime::from_us(kMegatronHostUs), OptimizerImpl::fused, true,
     true,
     "Megatron-Core with Transformer Engine: fused bias-GeLU / bias-dropout-add and norms, fused "
     "Adam, "
     "TP and distributed-optimizer overlap on (NVIDIA's performance configurations)"},
    // DeepSpeed wraps an eager (typically Hugging Face) model: its chains stay unfused, its
    // FusedAdam replaces torch's foreach AdamW.
    {Stack::deepspeed, false, SimTime::from_us(kEagerHostUs), OptimizerImpl::fused, false, false,
     "DeepSpeed over an eager model: one kernel per tensor op, DeepSpeed FusedAdam"},
};

}  // namespace

const StackTraits& stack_traits(Stack s) {
  for (const StackTraits& t : kStacks) {
    if (t.stack == s) return t;
  }
  throw std::logic_error("unknown software stack");
}

std::string_view to_string(Stack s) {
  switch (s) {
    case Stack::ideal:
      return "ideal";
    case Stack::pytorch_eager:
      return "pytorch_eager";
    case Stack::torch_compile:
      return "torch_compile";
    case Stack::megatron_core:
      return "megatron_core";
    case Stack::deepspeed:
      return "deepspeed";
  }
  return "?";
}

std::string_view to_string(OptimizerImpl o) {
  return o == OptimizerImpl::fused ? "fused" : "foreach";
}

const std::vector<std::pair<std::string, Stack>>& stack_names() {
  static const std::vector<std::pair<std::string, Stack>> names = [] {
    std::vector<std::pair<std::string, Stack>> out;
    for (const StackTraits& t : kStacks) out.emplace_back(std::string(to_string(t.stack)), t.stack);
    return out;
  }();
  return names;
}

const std::vector<std::pair<std::string, CompileScope>>& compile_scope_names() {
  static const std::vector<std::pair<std::string, CompileScope>> names = {
      {"model", CompileScope::model},
      {"blocks", CompileScope::blocks},
      {"blocks_and_loss", CompileScope::blocks_and_loss}};
  return names;
}

std::string_view to_string(CompileScope c) {
  for (const auto& [name, value] : compile_scope_names()) {
    if (value == c) return name;
  }
  return "?";
}

std::string stack_summary(Stack s) {
  const StackTraits& t = stack_traits(s);
  if (s == Stack::ideal)
    return "ideal (every chain fused, no host cost; set `stack:` to the framework the run uses)";
  char host[64];
  std::snprintf(host, sizeof host, "%.4g us host per kernel", t.host_per_kernel.us());
  return std::string(to_string(s)) + " (" +
         (t.fuses_elementwise ? "fused elementwise chains" : "unfused elementwise chains") + ", " +
         host + ", " + std::string(to_string(t.optimizer)) + " AdamW)";
}

void set_stack_flags(WorkShape& shape, Stack s, CompileScope scope) {
  const StackTraits& stack = stack_traits(s);
  // Eager's saved intermediates.
  shape.unfused_chains = !stack.fuses_elementwise;
  // The loss runs eager: under an unfusing stack, or torch.compile of the blocks only.
  shape.eager_loss =
      !stack.fuses_elementwise || (s == Stack::torch_compile && scope == CompileScope::blocks);
  // PyTorch's autograd runs the backward (eager, compiled, or under DeepSpeed), not clustersim's
  // executor (ideal) or Megatron-Core's Transformer Engine modules.
  shape.pytorch_autograd =
      s == Stack::pytorch_eager || s == Stack::torch_compile || s == Stack::deepspeed;
  // Megatron-Core builds its own layers: one linear_qkv, one linear_fc1 (gate and up together).
  shape.fused_projections = s == Stack::megatron_core;
  // Hugging Face transformers (5.x) runs a MoE's routed experts through torch._grouped_mm
  // (integrations/moe.py, grouped_mm_experts_forward). That op is not on autocast's cast list, so
  // under autocast over fp32 parameters (amp_*) it gets the fp32 hidden states and the fp32 expert
  // weights, and ATen takes its fp32 path: one mm per expert, each after a host sync on the
  // group's offset. Our H200 database shows it (validate/measurements/h200_20261128,
  // host_ops_pytorch_eager.csv): Qwen3-30B-A3B's step runs 1,569 aten::mm and 1,536
  // aten::item for 2 layers of 128 experts, and Mixtral's experts run at 46 TFLOP/s, the fp32
  // rate (67 TFLOP/s peak on an H200), not bf16's 700. Under torch.compile the same module takes
  // transformers' own fp32 fallback (a loop of mm over the experts). Frameworks whose parameters
  // are 16-bit (Megatron-Core, DeepSpeed, FSDP2 with bf16 parameters) run them in 16 bits.
  shape.fp32_experts = (s == Stack::pytorch_eager || s == Stack::torch_compile) &&
                       precision_info(shape.precision).autocast_copies;
}

void apply_stack(ModelWork& work, const StackTraits& stack, CompileScope scope) {
  const bool compiled_blocks_only =
      stack.stack == Stack::torch_compile && scope != CompileScope::model;
  for (Block& b : work.blocks) {
    // The embedding and the head (final norm, output layer, loss) are outside the transformer
    // blocks ("L<n>").
    const bool outside_blocks = b.name == "embed" || b.name == "head";
    for (auto* list : {&b.forward, &b.recompute, &b.backward}) {
      for (Op& op : *list) {
        const bool eager =
            !stack.fuses_elementwise ||
            (compiled_blocks_only && outside_blocks &&
             !(scope == CompileScope::blocks_and_loss && op.op.op == ir::OpClass::cross_entropy));
        // Ops left out of torch.compile never meet its async TP pass (TpOverlap::micro_pipeline).
        if (compiled_blocks_only && outside_blocks) op.tp_pipelinable = false;
        if (!eager || (op.unfused_kernels <= 1 && !op.unfused_in_fp32)) continue;
        op.op.kernels = op.unfused_kernels;
        const ir::OpClass c = op.op.op;
        if (c == ir::OpClass::elementwise || c == ir::OpClass::norm ||
            c == ir::OpClass::cross_entropy) {
          // 16-bit elements of the fused op widened to fp32 when autocast promotes the chain.
          const int64_t widen = op.unfused_in_fp32 && op.op.dtype != ir::DType::fp32 ? 2 : 1;
          const double traffic =
              op.unfused_traffic > 0 ? op.unfused_traffic : double(op.unfused_kernels);
          op.op.bytes = {static_cast<int64_t>(double(op.op.bytes.count) * traffic) * widen};
        }
      }
    }
  }
}

int64_t gradient_bytes(Precision p, Stack s, bool grad_reduce_in_bf16) {
  const PrecisionInfo info = precision_info(p);
  const bool bf16_params = info.weight_bytes == 2 && info.compute == ir::DType::bf16;
  if (s == Stack::megatron_core && bf16_params && !grad_reduce_in_bf16) return 4;
  return info.grad_bytes;
}

PrecisionInfo training_precision(Precision p, Stack s, bool grad_reduce_in_bf16,
                                 bool bf16_moments) {
  PrecisionInfo info = precision_info(p);
  info.grad_bytes = gradient_bytes(p, s, grad_reduce_in_bf16);
  if (bf16_moments) {
    info.optimizer_bytes -= 2 * (info.moment_bytes - 2);
    info.moment_bytes = 2;
  }
  return info;
}

ir::ComputeOp optimizer_op(int64_t params, const PrecisionInfo& p, OptimizerImpl impl) {
  ir::ComputeOp op = optimizer_op(params, p);
  // PyTorch's multi_tensor_apply (ATen's MultiTensorApply.cuh, which fused and foreach AdamW and
  // apex's FusedAdam launch through) splits the tensors into chunks of 65,536 elements and
  // launches a kernel every 320 chunks (depth_to_max_blocks): a 7B model's step is 334 launches
  // of each kernel, not one. More where a launch fills its tensor slots first (not counted).
  constexpr int64_t kElementsPerLaunch = int64_t{65536} * 320;
  const int64_t launches = std::clamp<int64_t>(
      (params + kElementsPerLaunch - 1) / kElementsPerLaunch, 1, UINT16_MAX / 8);
  if (impl == OptimizerImpl::foreach) {
    // torch.optim.AdamW's multi-tensor path (torch 2.x, `_multi_tensor_adamw`), bytes per
    // parameter with fp32 state and g-byte gradients: weight decay mul_ on p (8), lerp_ of m
    // towards g (8 + g), mul_ of v (8), addcmul_ of g*g into v (8 + g), sqrt of v into a
    // temporary (8), div_ and add_ eps on it (8 + 8), addcdiv_ into p (16): 72 + 2g, against the
    // fused kernel's 20 + g. Eight foreach ops, each its own launches.
    op.bytes = {params * (72 + 2 * p.grad_bytes + (p.weight_bytes == 2 ? 2 : 0))};
    op.kernels = static_cast<uint16_t>(8 * launches);
  } else {
    op.kernels = static_cast<uint16_t>(launches);
  }
  return op;
}

}  // namespace cs::model
