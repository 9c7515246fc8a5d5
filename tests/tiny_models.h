// Small models whose hand derivations several tests share.
#pragma once

#include "models/model_spec.h"

namespace cs::test {

// A 2-layer GPT: h 256, 4 heads, ffn 1024, vocab 2048, sequence 128 (a layer holds 789,760
// parameters; the embedding, positions and final norm 557,568).
inline model::ModelSpec tiny_gpt() {
  model::ModelSpec m;
  m.name = "gpt-tiny";
  m.family = model::Family::gpt;
  m.layers = 2;
  m.hidden = 256;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 1024;
  m.vocab = 2048;
  m.max_seq = 128;
  return m;
}

// An 8-layer MLP: per layer the forward is one GEMM, the backward two (dgrad + wgrad).
inline model::ModelSpec mlp8() {
  model::ModelSpec m;
  m.name = "mlp8";
  m.family = model::Family::mlp;
  m.layers = 8;
  m.hidden = 64;
  m.ffn_hidden = 64;
  return m;
}

}  // namespace cs::test
