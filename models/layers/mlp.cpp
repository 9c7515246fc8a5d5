#include "models/layers/mlp.h"

#include "models/layers/lora.h"

namespace cs::model::layers {

namespace {

// Kernels of the activation when a stack does not fuse it (PyTorch eager), forward and backward,
// counted from the eager code of the reference implementations:
//   GPT-2's GELU ("gelu_new", the tanh approximation, written as tensor ops in GPT-2's and Hugging
//     Face's code: pow, mul, add, mul, tanh, add, mul, mul): 8; backward, autograd's derivative
//     ops and the accumulation of x's three gradient contributions: 10.
//   SwiGLU, silu(gate) * up: silu, mul; backward the mul's two products and silu's derivative.
constexpr ChainKernels kTanhGeluKernels{8, 10, true};
constexpr ChainKernels kOneKernelGeluKernels{1, 1};  // gelu_pytorch_tanh, gelu: gelu, gelu_backward
constexpr ChainKernels kSwigluKernels{2, 3};         // GeGLU too: gelu (tanh, one kernel), mul
// gpt-oss's (transformers' GptOssExperts._apply_gate): clamp gate, clamp up, gate * 1.702,
// sigmoid, mul, up + 1, mul: 7; backward the two products' gradients (2 + 2), sigmoid's, the
// scalar product's, the sum of gate's two branches and the two clamps' masks: 9.
constexpr ChainKernels kClampedSwigluKernels{7, 9};
// Squared ReLU (transformers' ReLUSquaredActivation: relu, square): 2; backward square's
// gradient (two products) and relu's threshold_backward: 3.
constexpr ChainKernels kRelu2Kernels{2, 3};
// gelu_new's traffic counted op by op, in element accesses of the [T, ffn] tensor (a unary op
// reads and writes: 2; a binary op: 3), against the fused op's (forward: read x, write y = 2;
// backward, as priced: 4):
//   forward: pow(x, 3), 0.044715 * ., sqrt(2/pi) * ., tanh, 1 + . and 0.5 * x are unary (6 x 2),
//     the sum x + 0.044715 x^3 and the product (0.5 x)(1 + t) binary (2 x 3): 18, 9 times the
//     fused op's 2;
//   backward (autograd): the product's two gradients dy (1 + t) and dy (0.5 x), tanh_backward,
//     pow's dp * (3 x^2), and the two additions that accumulate x's three gradient contributions
//     are binary (6 x 3); the scalar products by sqrt(2/pi), 0.044715, 3 and 0.5 and pow(x, 2)
//     unary (5 x 2): 28 accesses, 7 times the fused op's 4.
// On the GPT-2 Large batch-8 Kineto trace (validate/measurements/torch_h100_202611/) the 11
// backward kernels and their casts between the two GEMMs take 60 ms; 10 kernels at the fused
// op's 4 accesses each priced them at 102 ms, these 28 at 71 ms.
constexpr double kTanhGeluForwardTraffic = 9.0;
constexpr double kTanhGeluBackwardTraffic = 7.0;

ChainKernels kernels_of(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::swiglu:
    case ActivationKind::geglu:
      return kSwigluKernels;
    case ActivationKind::clamped_swiglu:
      return kClampedSwigluKernels;
    case ActivationKind::relu2:
      return kRelu2Kernels;
    case ActivationKind::gelu_tensor_ops:
      return kTanhGeluKernels;
    case ActivationKind::gelu_one_kernel:
      return kOneKernelGeluKernels;
  }
  return kOneKernelGeluKernels;
}

}  // namespace

ActivationKind activation_kind(const ModelSpec& m) {
  if (m.family == Family::llama) {
    switch (m.ffn_activation) {
      case FfnActivation::swiglu:
        return ActivationKind::swiglu;
      case FfnActivation::geglu:
        return ActivationKind::geglu;
      case FfnActivation::clamped_swiglu:
        return ActivationKind::clamped_swiglu;
      case FfnActivation::relu2:
        return ActivationKind::relu2;
    }
  }
  return m.gelu_as_tensor_ops() ? ActivationKind::gelu_tensor_ops : ActivationKind::gelu_one_kernel;
}

bool gated(ActivationKind kind) {
  return kind == ActivationKind::swiglu || kind == ActivationKind::geglu ||
         kind == ActivationKind::clamped_swiglu;
}

void activation(const LayerContext& c, BlockOps& ops, ActivationKind kind, const std::string& name,
                int64_t elements) {
  // Elements moved per element: GELU reads and writes; SwiGLU reads gate and up and writes.
  const int64_t io = gated(kind) ? 3 : 2;
  const ChainKernels kernels = kernels_of(kind);
  Op fwd = named(name, c.f.memory_bound(ir::OpClass::elementwise, elements * c.ab * io,
                                        8.0 * double(elements)));
  Op bwd =
      named(name + ".bwd", c.f.memory_bound(ir::OpClass::elementwise, elements * c.ab * (io + 2),
                                            12.0 * double(elements)));
  if (kind == ActivationKind::gelu_tensor_ops) {
    fwd.unfused_traffic = kTanhGeluForwardTraffic;
    bwd.unfused_traffic = kTanhGeluBackwardTraffic;
  }
  ops.add_chain(std::move(fwd), std::move(bwd), kernels,
                kernels.autocast_fp32 && c.p.autocast_copies);
}

void dense_mlp(const LayerContext& c, BlockOps& ops, const std::string& prefix,
               ActivationKind kind) {
  const int64_t f_local = c.m.ffn_hidden / c.t;
  const int64_t fc1_n = (gated(kind) ? 2 : 1) * f_local;
  const std::string fc1 = prefix + "mlp.fc1.", fc2 = prefix + "mlp.fc2.";
  const std::vector<int> fc1_ids = c.ids({fc1 + "weight", fc1 + "bias"});
  const std::vector<int> fc2_ids = c.ids({fc2 + "weight", fc2 + "bias"});
  // Hugging Face's Llama family runs gate_proj and up_proj; Phi-3's gate_up_proj is chunked.
  const bool two_gemms = gated(kind) && c.projections() == Projections::separate;
  autocast_input_casts(c, ops, "mlp.fc1.input_cast", c.T_sp * c.h, two_gemms ? 2 : 1);
  if (two_gemms) input_gradient_sum(c, ops, "mlp.fc1.input_grad_sum", c.T * c.h, 2);
  linear(c.f, ops, "mlp.fc1", c.T, fc1_n, c.h, fc1_ids, Split::column, c.tp,
         c.ids.has(fc1 + "bias"), c.trains(fc1_ids), two_gemms ? 2 : 1);
  if (gated(kind) && !two_gemms) split_backward(c, ops, "mlp.fc1.split.bwd", c.T, fc1_n, 0);
  lora_adapter(c, ops, LoraTarget::linear_fc1, prefix);
  activation(c, ops, kind, "mlp.act", c.T * f_local);
  // The tanh GELU's chain ends in fp32 under autocast (kTanhGeluKernels): fc2 casts its input.
  if (kernels_of(kind).autocast_fp32)
    autocast_input_casts(c, ops, "mlp.fc2.input_cast", c.T * f_local, 1);
  linear(c.f, ops, "mlp.fc2", c.T, c.h, f_local, fc2_ids, Split::row, c.tp, c.ids.has(fc2 + "bias"),
         c.trains(fc2_ids));
  lora_adapter(c, ops, LoraTarget::linear_fc2, prefix);
}

void relu_layer(const LayerContext& c, BlockOps& ops, int layer) {
  const int64_t rows = c.w.micro_batch, h = c.h, ab = c.ab;
  const std::string n = "fc" + std::to_string(layer);
  linear(c.f, ops, n, rows, h, h, c.ids({n + ".weight", n + ".bias"}), Split::none, TpContext{},
         c.ids.has(n + ".bias"));
  ops.add(named(n + ".relu",
                c.f.memory_bound(ir::OpClass::elementwise, rows * h * ab * 2, double(rows * h))),
          named(n + ".relu.bwd",
                c.f.memory_bound(ir::OpClass::elementwise, rows * h * ab * 3, double(rows * h))));
}

}  // namespace cs::model::layers
