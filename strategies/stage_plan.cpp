#include "strategies/stage_plan.h"

namespace cs::strategy {

std::vector<Stage> partition_stages(const model::ModelSpec& m, const model::ModelWork& work,
                                    const std::vector<model::ParameterTensor>& params,
                                    int tied_copy, const Layout& l, int64_t micro_batches) {
  const int p = l.pp, v = l.virtual_stages, chunks = p * v;
  const bool transformer = m.family != model::Family::mlp;
  const int nblocks = static_cast<int>(work.blocks.size());
  const std::vector<int> chunk_layers =
      chunk_layer_counts(l, m.layers);  // decoder layers per model chunk
  std::vector<Stage> stages(static_cast<size_t>(p));
  int next_layer = 0;
  for (int g = 0; g < chunks; ++g) {
    std::vector<int> blocks;
    if (transformer && g == 0) blocks.push_back(0);
    for (int i = 0; i < chunk_layers[static_cast<size_t>(g)]; ++i, ++next_layer)
      blocks.push_back(transformer ? next_layer + 1 : next_layer);
    if (transformer && g == chunks - 1) blocks.push_back(nblocks - 1);
    stages[static_cast<size_t>(g % p)].chunk_blocks.push_back(std::move(blocks));
  }
  for (int s = 0; s < p; ++s) {
    Stage& st = stages[static_cast<size_t>(s)];
    st.holds_block.assign(static_cast<size_t>(nblocks), false);
    for (const auto& c : st.chunk_blocks) {
      for (int b : c) st.holds_block[static_cast<size_t>(b)] = true;
    }
    for (int i = 0; i < static_cast<int>(params.size()); ++i) {
      const auto& prm = params[static_cast<size_t>(i)];
      bool here = i == tied_copy ? s == p - 1 : st.holds_block[static_cast<size_t>(prm.block)];
      const bool routed = prm.role == model::ParamRole::routed_expert;
      if (routed && prm.expert >= m.moe.experts / l.ep) here = false;
      if (here) {
        st.params.push_back(i);
        const int64_t n = numel_per_rank(prm, l);
        st.numel += n;
        if (!prm.trainable()) {
          st.frozen_numel += n;
        } else if (routed) {
          st.expert_numel += n;
        }
      }
    }
    st.schedule = pipeline_schedule(l.schedule, p, v, s, static_cast<int>(micro_batches));
  }
  return stages;
}

}  // namespace cs::strategy
