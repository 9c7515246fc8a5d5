#include "models/layers/op_builder.h"

#include <algorithm>

namespace cs::model::layers {

ParamIds::ParamIds(const std::vector<ParameterTensor>& params) {
  for (int i = 0; i < static_cast<int>(params.size()); ++i) {
    id_[params[i].name] = i;
    trainable_.push_back(params[i].trainable());
  }
}

bool ParamIds::trainable(const std::vector<int>& ids) const {
  return std::all_of(ids.begin(), ids.end(),
                     [&](int id) { return trainable_[static_cast<size_t>(id)]; });
}

std::vector<int> ParamIds::operator()(std::initializer_list<std::string> names) const {
  std::vector<int> out;
  for (const auto& n : names) {
    if (auto it = id_.find(n); it != id_.end()) out.push_back(it->second);
  }
  return out;
}

std::vector<int> ParamIds::numbered(const std::string& prefix, const std::string& suffix,
                                    int count) const {
  std::vector<int> out;
  for (int x = 0; x < count; ++x) {
    if (auto it = id_.find(prefix + std::to_string(x) + suffix); it != id_.end())
      out.push_back(it->second);
  }
  return out;
}

namespace {

OpFactory op_factory(const PrecisionInfo& p, const WorkShape& w) {
  return {p.compute,
          p.activation_bytes,
          p.gemm != p.compute ? std::optional<ir::DType>(p.gemm) : std::nullopt,
          w.attention_kernel,
          p.scaling,
          w.unfused_chains};
}

// TorchTitan's Float8 tensor parallelism (torchao float8_tensor_parallel.py, applied when Float8 is
// tensorwise: parallelize_llama.py's enable_float8_tensorwise_tp): a column-parallel layer's input
// is cast to FP8 before its sequence-parallel all-gather (Float8ColwiseParallel,
// PrepareFloat8ModuleInput), 1 B an element. The reduce-scatters carry the 16-bit outputs and
// input gradients, and the row-parallel layers' output-gradient gathers stay 16-bit here (where
// torchao casts those before gathering differs between its versions). Any PyTorch-autograd stack
// with tensorwise Float8 counts (eager, compiled, and DeepSpeed, whose FP8 is not torchao's: an
// approximation there).
bool tp_gathers_in_fp8(const WorkShape& w) {
  return w.pytorch_autograd && precision_info(w.precision).scaling == Scaling::per_tensor;
}

}  // namespace

// The mlp family has no sequence: its context-parallel size is never checked, and its token
// counts here are unused (its layers count micro-batch rows).
LayerContext::LayerContext(const ModelSpec& model, const WorkShape& shape,
                           const std::vector<ParameterTensor>& params)
    : m(model),
      w(shape),
      p(precision_info(shape.precision)),
      f(op_factory(p, shape)),
      ab(p.activation_bytes),
      t(shape.tp),
      s(shape.seq / std::max(shape.cp, 1)),
      T(s * shape.micro_batch),
      T_sp(shape.sequence_parallel ? T / std::max(t, 1) : T),
      h(model.hidden),
      tp{t,
         shape.sequence_parallel && t > 1,
         Bytes{T * h * ab},
         Bytes{tp_gathers_in_fp8(shape) ? T * h : T * h * ab},
         shape.tp_overlap,
         shape.precision == Precision::fp8_rowwise},
      ids(params) {}

void BlockOps::add_chain(Op fwd, Op bwd, ChainKernels kernels, bool in_fp32) {
  fwd.unfused_kernels = kernels.forward;
  fwd.unfused_in_fp32 = in_fp32;
  bwd.unfused_kernels = kernels.backward;
  bwd.unfused_in_fp32 = in_fp32;
  add(std::move(fwd), std::move(bwd));
}

void BlockOps::add_backward_in_order(std::vector<Op> run) {
  for (auto it = run.rbegin(); it != run.rend(); ++it) reversed_backward.push_back(std::move(*it));
}

std::vector<Op> BlockOps::backward_in_execution_order() && {
  return {std::make_move_iterator(reversed_backward.rbegin()),
          std::make_move_iterator(reversed_backward.rend())};
}

void linear(const OpFactory& f, BlockOps& ops, const std::string& name, int64_t tokens, int64_t n,
            int64_t k, std::vector<int> params, Split split, const TpContext& tp, bool bias,
            bool trainable, uint16_t gemms) {
  ops.linear_tensors += gemms * (bias ? 2 : 1);
  // Low-precision GEMMs cast their operands first: the forward its input [T, k] and the weight
  // [k, n], the backward the output gradient [T, n] (and, per recipe, more: linear_quantization).
  // A factory whose GEMMs run in the compute dtype (the output head's) casts nothing.
  const LinearQuantization q =
      linear_quantization(f.gemm_dt ? f.scaling : Scaling::none, tokens, n, k);
  const std::string cast = name + "." + std::string(q.op_suffix);
  if (q.forward_elements > 0) {
    ops.forward.push_back(
        named(cast, f.memory_bound(ir::OpClass::elementwise, q.cast_bytes(q.forward_elements),
                                   double(q.forward_elements))));
  }
  Op fwd = named(name, f.gemm(tokens, n, k));
  Op dgrad = named(name + ".dgrad", f.gemm(tokens, k, n));
  Op wgrad = named(name + ".wgrad", f.gemm(k, n, tokens), std::move(params));
  for (Op* gemm : {&fwd, &dgrad, &wgrad}) gemm->unfused_kernels = gemms;
  Op& first_backward = trainable ? wgrad : dgrad;
  if (split == Split::column) {
    fwd.tp_before = tp.gather_if_sp();
    wgrad.tp_before = tp.gather_if_sp();
    dgrad.tp_after = tp.reduce();
  } else if (split == Split::row) {
    fwd.tp_after = tp.reduce();
    // The output gradient's gather, before whichever of wgrad and dgrad runs first.
    first_backward.tp_before = tp.gradient_gather_if_sp();
  }
  // PyTorch's async TP pipelines only what its pass matches (model_work.h, TpOverlap): the
  // forward gather into the GEMM (not when casts read it: pytorch/pytorch#149990), the row-parallel
  // output's reduce-scatter, the output gradient's gather into the dgrad; not wgrad's gather (the
  // GEMM reads it transposed) nor the dgrad's reduce-scatter where several projections' dgrads
  // are summed before it (separate q/k/v or gate/up).
  if (tp.overlap == TpOverlap::micro_pipeline) {
    const bool casts_read_gathers = tp.gather_feeds_casts && q.forward_elements > 0;
    if (split == Split::column) {
      fwd.tp_pipelinable = !casts_read_gathers;
      wgrad.tp_pipelinable = false;
      dgrad.tp_pipelinable = gemms == 1;
      dgrad.tp_sums_partials = true;
    } else if (split == Split::row) {
      fwd.tp_sums_partials = true;
      first_backward.tp_pipelinable = !casts_read_gathers;
    }
  }
  ops.forward.push_back(std::move(fwd));
  // Backward in forward order: wgrad then dgrad in execution order.
  ops.reversed_backward.push_back(std::move(dgrad));
  if (trainable) ops.reversed_backward.push_back(std::move(wgrad));
  // A bias's gradient PyTorch sums from the output gradient [T, n] in a kernel of its own
  // (addmm's backward: grad.sum(0)): it reads those elements. On the GPT-2 Large batch-8 trace
  // the 4 biased linears of 36 layers (and the head's none) take 3.9 ms of such sums.
  if (f.bias_grad_kernels && bias && trainable) {
    Op sum = named(name + ".bias_grad",
                   f.memory_bound(ir::OpClass::elementwise, tokens * n * f.ab, double(tokens * n)));
    sum.unfused_kernels = gemms;  // one per layer, together the output gradient's elements
    sum.unfused_traffic = 1;
    ops.reversed_backward.push_back(std::move(sum));
  }
  if (q.rescales_backward_outputs) {
    // Each of `gemms` separate projections writes and rescales its own [T, k] input gradient.
    const int64_t outputs = gemms * tokens * k + (trainable ? k * n : 0);
    Op rescale =
        named(name + ".fp8_rescale.bwd",
              f.memory_bound(ir::OpClass::elementwise, 2 * outputs * f.ab, double(outputs)));
    rescale.op.kernels = trainable ? 2 : 1;  // one per backward GEMM, eager or compiled
    ops.reversed_backward.push_back(std::move(rescale));
  }
  if (q.backward_elements > 0) {
    ops.reversed_backward.push_back(named(
        cast + ".bwd", f.memory_bound(ir::OpClass::elementwise, q.cast_bytes(q.backward_elements),
                                      double(q.backward_elements))));
  }
}

void autocast_input_casts(const LayerContext& c, BlockOps& ops, const std::string& name,
                          int64_t elements, int readers) {
  if (!c.p.autocast_copies || !c.w.unfused_chains || readers < 1) return;
  const int64_t cast = elements * (4 + c.ab);  // read fp32, write 16 bits (and back)
  const int64_t sum = elements * 12;           // an fp32 add: two reads and a write
  Op fwd = named(name, c.f.memory_bound(ir::OpClass::elementwise, readers * cast));
  Op bwd = named(name + ".bwd",
                 c.f.memory_bound(ir::OpClass::elementwise, readers * cast + (readers - 1) * sum));
  fwd.unfused_traffic = bwd.unfused_traffic = 1;  // the bytes above are counted op by op
  const auto n = static_cast<uint16_t>(readers);
  ops.add_chain(std::move(fwd), std::move(bwd), {n, static_cast<uint16_t>(2 * n - 1)});
}

void input_gradient_sum(const LayerContext& c, BlockOps& ops, const std::string& name,
                        int64_t elements, int readers) {
  if (readers < 2 || (c.p.autocast_copies && c.w.unfused_chains)) return;
  const int64_t out = c.p.autocast_copies ? 4 : c.ab;
  Op sum = named(name, c.f.memory_bound(ir::OpClass::elementwise, elements * (readers * c.ab + out),
                                        double(elements)));
  sum.unfused_kernels = static_cast<uint16_t>(readers - 1);  // eager: an add of two each
  sum.unfused_traffic = 3.0 * (readers - 1) / (readers + 1);
  ops.reversed_backward.push_back(std::move(sum));
}

void split_backward(const LayerContext& c, BlockOps& ops, const std::string& name, int64_t tokens,
                    int64_t width, int slices) {
  if (!c.w.unfused_chains) return;
  const int64_t accesses = slices > 0 ? slices + 2 + 3 * (slices - 1) : 2;
  const auto kernels = static_cast<uint16_t>(slices > 0 ? 3 * slices - 1 : 1);
  Op join =
      named(name, c.f.memory_bound(ir::OpClass::elementwise, tokens * width * c.ab * accesses));
  join.unfused_kernels = kernels;
  join.unfused_traffic = 1;
  ops.reversed_backward.push_back(std::move(join));
}

}  // namespace cs::model::layers
