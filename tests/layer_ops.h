// Helpers for the models/layers/ submodule tests: models with hand-checkable dimensions, and
// finding an op by name in what a submodule appended.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/layers/op_builder.h"

namespace cs::model::test {

// The op named `name` (the first), failing the test where there is none.
inline const Op& op_named(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << "no op " << name;
  static const Op none{};
  return none;
}

inline std::vector<std::string> names_of(const std::vector<Op>& ops) {
  std::vector<std::string> out;
  for (const Op& op : ops) out.push_back(op.name);
  return out;
}

// Llama 3 8B's dimensions (Hugging Face config.json): hidden 4096, 32 heads of 128, 8 KV heads,
// SwiGLU inner size 14336, vocabulary 128256; one layer.
inline ModelSpec llama3_8b_layer() {
  ModelSpec m;
  m.name = "llama3-8b-layer";
  m.family = Family::llama;
  m.layers = 1;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.vocab = 128256;
  m.max_seq = 8192;
  return m;
}

// GPT-2 small's: hidden 768, 12 heads, GELU inner size 3072, vocabulary 50257, 1024 positions,
// dropout 0.1, tied embeddings; one layer.
inline ModelSpec gpt2_small_layer() {
  ModelSpec m;
  m.name = "gpt2-small-layer";
  m.family = Family::gpt;
  m.layers = 1;
  m.hidden = 768;
  m.heads = 12;
  m.kv_heads = 12;
  m.ffn_hidden = 3072;
  m.vocab = 50257;
  m.max_seq = 1024;
  m.dropout = 0.1;
  return m;
}

inline WorkShape shape(int64_t seq, int tp = 1, bool sp = false) {
  WorkShape w;
  w.seq = seq;
  w.tp = tp;
  w.sequence_parallel = sp;
  return w;
}

}  // namespace cs::model::test
