// A small Llama for the context-parallel tests: 2 layers, hidden 1024, 8 heads of 128, 2 KV
// heads, SwiGLU inner 2816, vocabulary 32000 (dimensions their hand derivations use).
#pragma once

#include "models/model_spec.h"

namespace cs::test {

inline model::ModelSpec small_llama() {
  model::ModelSpec m;
  m.name = "llama-small";
  m.family = model::Family::llama;
  m.layers = 2;
  m.hidden = 1024;
  m.heads = 8;
  m.kv_heads = 2;
  m.ffn_hidden = 2816;
  m.vocab = 32000;
  m.max_seq = 8192;
  return m;
}

}  // namespace cs::test
