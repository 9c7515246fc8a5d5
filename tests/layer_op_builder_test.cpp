// models/layers/op_builder: the linear layer's GEMMs and Megatron's collectives around them, and
// the order BlockOps hands backward over in.
#include "layer_ops.h"

namespace cs::model::test {
namespace {

using layers::BlockOps;
using layers::Split;
using layers::TpContext;

// OpFactory under mixed_bf16: bf16 everywhere, 2 bytes per element.
const OpFactory kBf16{ir::DType::bf16, 2};

TEST(LayerLinear, ColumnParallelUnderSequenceParallelism) {
  // y[1024, 512] = x[1024, 256] W[256, 512] on one of 4 TP ranks with SP; `full` is the whole
  // [T, h] activation the TP collectives move: 1024 x 256 x 2 B = 524,288 B.
  const TpContext tp{4, true, Bytes{1024 * 256 * 2}};
  BlockOps ops;
  layers::linear(kBf16, ops, "x", 1024, 512, 256, {7}, Split::column, tp);
  ASSERT_EQ(ops.forward.size(), 1u);
  const Op& fwd = ops.forward[0];
  // 2 m n k = 2 x 1024 x 512 x 256 = 268,435,456 FLOPs; it reads x (262,144 elements) and W
  // (131,072) and writes y (524,288): 917,504 elements x 2 B = 1,835,008 B.
  EXPECT_DOUBLE_EQ(fwd.op.flops.value, 268435456.0);
  EXPECT_EQ(fwd.op.bytes.count, 1835008);
  // SP: the sharded input is all-gathered before the forward and again before wgrad; the input
  // gradient is reduce-scattered after dgrad.
  EXPECT_EQ(fwd.tp_before.type, ir::CollectiveType::all_gather);
  EXPECT_EQ(fwd.tp_before.bytes.count, 524288);
  const std::vector<Op> bwd = std::move(ops).backward_in_execution_order();
  ASSERT_EQ(names_of(bwd), (std::vector<std::string>{"x.wgrad", "x.dgrad"}));
  EXPECT_EQ(bwd[0].grads_ready, std::vector<int>{7});
  EXPECT_EQ(bwd[0].tp_before.type, ir::CollectiveType::all_gather);
  EXPECT_EQ(bwd[1].tp_after.type, ir::CollectiveType::reduce_scatter);
  // dgrad dx[1024, 256] = dy[1024, 512] W^T and wgrad dW[256, 512] = x^T dy: the forward's FLOPs.
  EXPECT_DOUBLE_EQ(bwd[0].op.flops.value, 268435456.0);
  EXPECT_DOUBLE_EQ(bwd[1].op.flops.value, 268435456.0);
}

TEST(LayerLinear, Fp8CastsItsOperands) {
  // Transformer Engine's FP8: the forward casts x [1024, 256] and W [256, 512] (393,216 elements,
  // read 2 B and write 1 B each: 1,179,648 B); the backward casts dy [1024, 512] once (524,288
  // elements: 1,572,864 B), running first in backward.
  OpFactory fp8 = kBf16;
  fp8.gemm_dt = ir::DType::fp8;
  fp8.scaling = Scaling::per_tensor;
  BlockOps ops;
  layers::linear(fp8, ops, "x", 1024, 512, 256, {}, Split::none, TpContext{});
  ASSERT_EQ(names_of(ops.forward), (std::vector<std::string>{"x.fp8_cast", "x"}));
  EXPECT_EQ(ops.forward[0].op.bytes.count, 1179648);
  EXPECT_EQ(ops.forward[1].op.dtype, ir::DType::fp8);
  const std::vector<Op> bwd = std::move(ops).backward_in_execution_order();
  ASSERT_EQ(names_of(bwd), (std::vector<std::string>{"x.fp8_cast.bwd", "x.wgrad", "x.dgrad"}));
  EXPECT_EQ(bwd[0].op.bytes.count, 1572864);
}

TEST(LayerLinear, RowParallelReducesItsOutput) {
  // Without SP a row-parallel layer all-reduces its output in forward and needs nothing in
  // backward; at tp = 1 no collective at all.
  const TpContext tp{2, false, Bytes{4096}};
  BlockOps ops;
  layers::linear(kBf16, ops, "proj", 16, 64, 32, {}, Split::row, tp);
  EXPECT_EQ(ops.forward[0].tp_after.type, ir::CollectiveType::all_reduce);
  EXPECT_EQ(ops.forward[0].tp_after.count, 1);
  EXPECT_EQ(ops.forward[0].tp_before.count, 0);
  BlockOps alone;
  layers::linear(kBf16, alone, "proj", 16, 64, 32, {}, Split::row, TpContext{});
  EXPECT_EQ(alone.forward[0].tp_after.count, 0);
}

}  // namespace
}  // namespace cs::model::test
