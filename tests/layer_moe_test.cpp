// models/layers/moe: the router, token dispatch and its collectives, the grouped experts and the
// shared experts.
#include "layer_ops.h"
#include "models/layers/moe.h"

namespace cs::model::test {
namespace {

// Mixtral 8x7B's dimensions (config.json): Llama-like attention (hidden 4096, 32 heads, 8 KV
// heads), 8 experts of inner size 14336, top-2 routing; one MoE layer.
ModelSpec mixtral_layer() {
  ModelSpec m = llama3_8b_layer();
  m.name = "mixtral-layer";
  m.vocab = 32000;
  m.moe.experts = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn_hidden = 14336;
  return m;
}

TEST(LayerMoe, RouterAndAllToAllDispatchOfMixtral) {
  // 4096 tokens, experts over ep = 8 ranks (one each). The router [4096 -> 8]:
  // 2 x 4096 x 8 x 4096 = 268,435,456 FLOPs. Top-2 sends 4096 x 2 = 8192 token copies, and
  // balanced each rank receives as many: the all-to-all moves 8192 x 4096 x 2 B = 67,108,864 B
  // each way. The one local expert's fc1 [4096 -> 2 x 14336] runs over those 8192 copies:
  // 2 x 8192 x 28672 x 4096 = 1,924,145,348,608 FLOPs.
  const ModelSpec m = mixtral_layer();
  WorkShape w = shape(4096);
  w.ep = 8;
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::moe_mlp(c, ops, "h.0.");
  EXPECT_EQ(names_of(ops.forward),
            (std::vector<std::string>{"mlp.router", "mlp.topk", "mlp.permute", "mlp.experts.fc1",
                                      "mlp.experts.act", "mlp.experts.fc2", "mlp.unpermute"}));
  EXPECT_DOUBLE_EQ(op_named(ops.forward, "mlp.router").op.flops.value, 268435456.0);
  const Op& permute = op_named(ops.forward, "mlp.permute");
  EXPECT_EQ(permute.tp_after.type, ir::CollectiveType::all_to_all);
  EXPECT_EQ(permute.tp_after.group, OpGroup::expert_parallel);
  EXPECT_EQ(permute.tp_after.bytes.count, 67108864);
  EXPECT_EQ(op_named(ops.forward, "mlp.unpermute").tp_before.bytes.count, 67108864);
  const Op& fc1 = op_named(ops.forward, "mlp.experts.fc1");
  EXPECT_EQ(fc1.op.m, 8192);
  EXPECT_DOUBLE_EQ(fc1.op.flops.value, 1924145348608.0);
  // fc1's wgrad completes every routed expert's fc1 weight the rank holds a copy of.
  EXPECT_EQ(op_named(ops.reversed_backward, "mlp.experts.fc1.wgrad").grads_ready.size(), 8u);
}

TEST(LayerMoe, AllGatherDispatcherGathersEveryRanksTokens) {
  // The allgather dispatcher over ep = 4: the group gathers all 4 ranks' 4096 tokens before the
  // permute, 4 x 4096 x 4096 x 2 B = 134,217,728 B, and reduce-scatters as much after the
  // un-permute; no all-to-all.
  const ModelSpec m = mixtral_layer();
  WorkShape w = shape(4096);
  w.ep = 4;
  w.moe_dispatcher = MoeDispatcher::allgather;
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::moe_mlp(c, ops, "h.0.");
  const Op& permute = op_named(ops.forward, "mlp.permute");
  EXPECT_EQ(permute.tp_before.type, ir::CollectiveType::all_gather);
  EXPECT_EQ(permute.tp_before.bytes.count, 134217728);
  EXPECT_EQ(permute.tp_after.count, 0);
  EXPECT_EQ(op_named(ops.forward, "mlp.unpermute").tp_after.type,
            ir::CollectiveType::reduce_scatter);
}

TEST(LayerMoe, SharedExpertsRunAsADenseSwiglu) {
  // One shared expert of inner size 2048 beside the routed ones (DeepSeek-style), 1024 tokens:
  // its fc1 [4096 -> 2 x 2048] is 2 x 1024 x 4096 x 4096 = 34,359,738,368 FLOPs.
  ModelSpec m = mixtral_layer();
  m.moe.shared_experts = 1;
  m.moe.shared_ffn_hidden = 2048;
  const WorkShape w = shape(1024);
  const layers::LayerContext c(m, w, parameter_list(m));
  layers::BlockOps ops;
  layers::moe_mlp(c, ops, "h.0.");
  EXPECT_DOUBLE_EQ(op_named(ops.forward, "mlp.shared.fc1").op.flops.value, 34359738368.0);
  EXPECT_EQ(op_named(ops.forward, "mlp.shared.act").unfused_kernels, 2);
  EXPECT_EQ(ops.forward.back().name, "mlp.shared.fc2");
}

}  // namespace
}  // namespace cs::model::test
