#include "models/layers/multi_token_prediction.h"

#include "models/layers/embedding.h"
#include "models/layers/norm.h"
#include "models/layers/transformer_layer.h"

namespace cs::model::layers {

Bytes multi_token_prediction(const LayerContext& c, BlockOps& ops, int k) {
  const ModelSpec& m = c.m;
  const std::string n = "mtp." + std::to_string(k) + ".";
  const int layer = m.layers + k;
  const NormKind kind = norm_kind(m);
  const int64_t hidden_elements = c.T_sp * c.h;
  norm(c, ops, kind, "mtp.enorm", hidden_elements, c.ids({n + "enorm.weight"}));
  norm(c, ops, kind, "mtp.hnorm", hidden_elements, c.ids({n + "hnorm.weight"}));
  linear(c.f, ops, "mtp.eh_proj", c.T, c.h, 2 * c.h, c.ids({n + "eh_proj.weight"}), Split::none,
         c.tp);
  transformer_layer(c, ops, layer_spec(m, layer), n);
  norm(c, ops, kind, "mtp.norm", hidden_elements, c.ids({n + "norm.weight"}));
  lm_head(c, ops, "mtp.lm_head", {});
  cross_entropy(c, ops, "mtp.loss");
  // The layer's activations and eh_proj's input.
  return {activation_bytes_of_layer(m, c.w, layer).count + c.T * 2 * c.h * c.ab};
}

}  // namespace cs::model::layers
