// The software stack a run trains with (`stack:` in a scenario): what a framework adds to, or
// takes from, the kernels the model describes. The model (model_work.h) describes every
// elementwise chain as one fused kernel and AdamW as one fused pass, as clustersim's own executor
// runs them; a stack says
//   - whether elementwise chains stay fused (Megatron's bias-GeLU / bias-dropout-add fusions and
//     Transformer Engine's norms; torch.compile's Inductor) or run as one kernel per tensor op
//     (PyTorch eager: each op reads and writes its tensor again),
//   - the host (CPU) time to issue one kernel: Python, the dispatcher, autocast and the launch;
//     the GPU cannot run ahead of its host, so a step of small kernels becomes host-bound,
//   - the AdamW implementation (a fused kernel, or PyTorch's default multi-tensor `foreach`
//     path that makes eight passes over the state),
//   - the overlap defaults of its data- and tensor-parallel communication.
// Every constant is named with its source in software_stack.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/units.h"
#include "models/model_work.h"

namespace cs::model {

enum class Stack : uint8_t { ideal, pytorch_eager, torch_compile, megatron_core, deepspeed };
enum class OptimizerImpl : uint8_t { fused, foreach };
// What a torch_compile run compiled (`training.compile_scope`): the whole model with its loss
// (torch.compile(model) on a model that computes its loss, as Hugging Face's do); each transformer
// block only (TorchTitan until 2025: the embedding, final norm, output head and loss run eager);
// or the blocks and the loss function (TorchTitan since 2025: build_cross_entropy_loss compiles
// it). The eager parts run as PyTorch eager would.
enum class CompileScope : uint8_t { model, blocks, blocks_and_loss };

struct StackTraits {
  Stack stack = Stack::ideal;
  bool fuses_elementwise = true;  // false: each op of a chain is its own kernel
  SimTime host_per_kernel;        // CPU time to issue one kernel (zero: never host-bound)
  OptimizerImpl optimizer = OptimizerImpl::fused;
  // Defaults for training.tp_comm_overlap and training.overlap_param_gather when the scenario
  // does not set them.
  bool tp_comm_overlap = false;
  bool overlap_param_gather = false;
  std::string_view describes;  // one line for the report and --help
};

const StackTraits& stack_traits(Stack s);
std::string_view to_string(Stack s);
std::string_view to_string(OptimizerImpl o);
std::string_view to_string(CompileScope c);
// Every compile scope with its name (the scenario reader's choice).
const std::vector<std::pair<std::string, CompileScope>>& compile_scope_names();
// Every stack with its name, for parsers and help texts.
const std::vector<std::pair<std::string, Stack>>& stack_names();
// "pytorch_eager (unfused elementwise chains, 30 us host per kernel, foreach AdamW)".
std::string stack_summary(Stack s);

// Rewrites a model's work for a stack: under an unfusing stack every op carries its eager kernel
// count (Op::unfused_kernels) and an elementwise op's HBM traffic grows with it (each kernel of
// the chain reads and writes the tensor the fused op reads and writes once). Under torch_compile
// the parts `scope` leaves uncompiled are rewritten so too.
void apply_stack(ModelWork& work, const StackTraits& stack,
                 CompileScope scope = CompileScope::model);
// Sets what a stack decides of a model's work before it is built (WorkShape::unfused_chains,
// eager_loss, pytorch_autograd); apply_stack then rewrites the built ops.
void set_stack_flags(WorkShape& shape, Stack s, CompileScope scope);

// Bytes of one gradient element as the stack keeps, accumulates and data-parallel-reduces it: the
// precision's own (precision_info) except where the framework keeps gradients wider.
//   megatron_core with bf16 parameters (mixed_bf16 and the FP8/FP4 recipes, which run on --bf16):
//     Megatron-LM's validate_args sets accumulate_allreduce_grads_in_fp32 under --bf16 unless
//     --grad-reduce-in-bf16 is given ("bfloat16 requires gradient accumulation and all-reduce to
//     be done in fp32"); DistributedDataParallel then allocates its grad buffer (param.main_grad,
//     param_and_grad_buffer.py) with grad_dtype = torch.float, and the buckets reduce it in fp32:
//     4 bytes. `grad_reduce_in_bf16` (training.grad_reduce_in_bf16) keeps them 16-bit. Under
//     --fp16 (mixed_fp16) the flag defaults off: 2 bytes.
//   deepspeed, torch FSDP (amp_* keep fp32 parameters, so gradients are already fp32) and the
//     others: the precision's own.
int64_t gradient_bytes(Precision p, Stack s, bool grad_reduce_in_bf16);
// precision_info(p) with the stack's gradient bytes and the optimizer's moments (AdamW's m and v in
// bf16 where `bf16_moments`: Megatron-Core's --use-precision-aware-optimizer with --exp-avg-dtype
// and --exp-avg-sq-dtype bf16, 2 + 2 bytes a parameter instead of 4 + 4): what a run's memory,
// gradient collectives, optimizer and planner bounds read.
PrecisionInfo training_precision(Precision p, Stack s, bool grad_reduce_in_bf16, bool bf16_moments);

// AdamW over `params` parameters as the stack's optimizer runs it.
ir::ComputeOp optimizer_op(int64_t params, const PrecisionInfo& p, OptimizerImpl impl);

}  // namespace cs::model
