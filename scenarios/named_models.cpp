#include "scenarios/named_models.h"

namespace cs::scenario {

const std::vector<NamedModel<cost::NetworkFidelity>>& network_models() {
  static const std::vector<NamedModel<cost::NetworkFidelity>> models = {
      {"analytic", cost::NetworkFidelity::analytic,
       "each collective alone on its links: NCCL's latency + size / bus bandwidth per algorithm "
       "and protocol, with static sharing of links used by concurrent collectives",
       "NCCL 2.28 src/graph/tuning.cc (per-step hardware latencies, protocol bandwidth factors); "
       "cost_models/collective_algorithms.h; checked on nccl-tests 8x H100 "
       "(validate/suites/nccl_tests_8xh100.yaml)"},
      {"flow", cost::NetworkFidelity::flow,
       "flows share links max-min fairly, re-timed whenever one starts or ends (contention "
       "between collectives, oversubscribed fabrics)",
       "progressive filling (Bertsekas and Gallager, Data Networks, 2nd ed., 6.5.2); "
       "sim/flow_network.h; tests/network_test.cpp"},
  };
  return models;
}

const std::vector<NamedModel<std::optional<cost::Algorithm>>>& collective_algorithms() {
  using cost::Algorithm;
  static const std::vector<NamedModel<std::optional<Algorithm>>> models = {
      {"auto", std::nullopt, "NCCL's own choice: the fastest algorithm and protocol it offers",
       "NCCL 2.28 src/graph/tuning.cc (ncclTopoTuneModel) and src/enqueue.cc (topoGetAlgoInfo)"},
      {"ring", Algorithm::ring, "NCCL's rings, one per channel; 2(n-1)/n of the buffer per rank",
       "NCCL src/device/all_reduce.h (runRing); Patarasuk and Yuan, JPDC 2009"},
      {"tree", Algorithm::tree, "NCCL's double binary tree between nodes, a chain inside each node",
       "NCCL 2.4 (Sanders, Speck and Traeff, Parallel Computing 2009: two-tree broadcast)"},
      {"nvls", Algorithm::nvls, "NVLink SHARP: reduction in the NVSwitch, one node",
       "NCCL 2.17+ NVLS on H100 NVSwitch (third-generation NVSwitch multicast and reduction)"},
      {"pat", Algorithm::pat,
       "Parallel Aggregated Trees for all_gather / reduce_scatter, one GPU per node",
       "NCCL 2.23 release notes; tuning.cc PAT bandwidth factor 0.75"},
      {"hierarchical", Algorithm::hierarchical,
       "intra-node reduce-scatter, inter-node all-reduce per rail, intra-node all-gather",
       "not an NCCL algorithm: frameworks build it from sub-groups (Horovod's hierarchical "
       "all-reduce; Jia et al., arXiv 1807.11205)"},
      {"direct", Algorithm::direct, "every rank sends to every other at once (all-to-all)",
       "NCCL's all-to-all as grouped send/recv (ncclGroupStart, one pair per peer)"},
  };
  return models;
}

const std::vector<NamedModel<std::optional<cost::Protocol>>>& collective_protocols() {
  using cost::Protocol;
  static const std::vector<NamedModel<std::optional<Protocol>>> models = {
      {"auto", std::nullopt, "NCCL's own choice by size and algorithm",
       "NCCL 2.28 src/graph/tuning.cc"},
      {"ll", Protocol::ll, "low latency: 8-byte stores with a flag, half the line rate",
       "NCCL src/device/prims_ll.h; tuning.cc llMaxBw caps"},
      {"ll128", Protocol::ll128, "128-byte lines with a flag word: 0.92 of the line rate",
       "NCCL src/device/prims_ll128.h; tuning.cc LL128 factor"},
      {"simple", Protocol::simple, "bulk copies with fences: the line rate, the highest latency",
       "NCCL src/device/prims_simple.h; tuning.cc per-step latencies"},
  };
  return models;
}

namespace {

// Where each stack's figures come from (its host cost per kernel is set and explained in
// models/software_stack.cpp).
std::string_view stack_source(model::Stack s) {
  switch (s) {
    case model::Stack::ideal:
      return "clustersim's executor: every chain fused, no host time";
    case model::Stack::pytorch_eager:
      return "host time per kernel 20 us, fitted on seed 002 Table 2's batch-1 row (GPT-2 Large, "
             "one H100); torch.optim.AdamW's foreach ops";
    case model::Stack::torch_compile:
      return "host time per kernel 5 us (Inductor's flat wrapper, not fitted); fused AdamW";
    case model::Stack::megatron_core:
      return "NVIDIA Megatron-Core / NeMo performance configurations (overlap flags on); "
             "Transformer Engine fusions";
    case model::Stack::deepspeed:
      return "DeepSpeed FusedAdam over an eager model";
  }
  return "";
}

}  // namespace

const std::vector<NamedModel<model::Stack>>& software_stacks() {
  static const std::vector<NamedModel<model::Stack>> models = [] {
    std::vector<NamedModel<model::Stack>> out;
    for (const auto& [name, stack] : model::stack_names()) {
      out.push_back({model::to_string(stack), stack, model::stack_traits(stack).describes,
                     stack_source(stack)});
    }
    return out;
  }();
  return models;
}

const std::vector<NamedModel<ir::AttentionKernel>>& attention_kernels() {
  static const std::vector<NamedModel<ir::AttentionKernel>> models = {
      {"cudnn", ir::AttentionKernel::cudnn,
       "the profile's default fused attention (PyTorch SDPA's choice on H100: cuDNN)",
       "the profile's attention_by_head_dim sweep (scripts/torch-attention-sweep.py)"},
      {"flash2", ir::AttentionKernel::flash2,
       "FlashAttention-2 (SDPA's flash backend), where a profile measured it",
       "the profile's flash2_attention_by_head_dim (the same sweep's flash rows); Dao, arXiv "
       "2307.08691"},
  };
  return models;
}

namespace {

template <class E>
void describe(std::string& out, std::string_view heading, const std::vector<NamedModel<E>>& ms) {
  out += std::string(heading) + ":\n";
  for (const auto& m : ms) {
    out += "  " + std::string(m.name) + ": " + std::string(m.summary) + "\n";
    out += "      source: " + std::string(m.source) + "\n";
  }
}

}  // namespace

std::string describe_named_models() {
  std::string out;
  describe(out, "network models (network.fidelity, --fidelity)", network_models());
  describe(out, "collective algorithms (network.algorithm, --algo)", collective_algorithms());
  describe(out, "collective protocols (network.protocol, --proto)", collective_protocols());
  describe(out, "software stacks (stack, --stack)", software_stacks());
  describe(out, "attention kernels (training.attention_backend)", attention_kernels());
  return out;
}

}  // namespace cs::scenario
