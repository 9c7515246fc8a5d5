#include "strategies/layout.h"

#include "common/error.h"

namespace cs::strategy {

std::string_view to_string(DataParallel d) {
  switch (d) {
    case DataParallel::ddp: return "ddp";
    case DataParallel::ddp_flat: return "ddp_flat";
    case DataParallel::zero1: return "zero1";
    case DataParallel::zero2: return "zero2";
    case DataParallel::fsdp_shard_grad_op: return "fsdp_shard_grad_op";
    case DataParallel::fsdp_full_shard: return "fsdp_full_shard";
  }
  return "?";
}

bool is_fsdp(DataParallel d) { return d == DataParallel::fsdp_shard_grad_op || d == DataParallel::fsdp_full_shard; }

int zero_stage(DataParallel d) {
  switch (d) {
    case DataParallel::ddp:
    case DataParallel::ddp_flat: return 0;
    case DataParallel::zero1: return 1;
    case DataParallel::zero2:
    case DataParallel::fsdp_shard_grad_op: return 2;
    case DataParallel::fsdp_full_shard: return 3;
  }
  return 0;
}

std::string_view to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::gpipe: return "gpipe";
    case PipelineSchedule::one_f_one_b: return "1f1b";
    case PipelineSchedule::interleaved: return "interleaved";
  }
  return "?";
}

namespace {
int size_of(const Layout& l, Dim d) { return d == Dim::tp ? l.tp : d == Dim::dp ? l.dp : l.pp; }
int& index_of(Coord& c, Dim d) { return d == Dim::tp ? c.tp : d == Dim::dp ? c.dp : c.pp; }
}  // namespace

Coord coord_of(const Layout& l, int rank) {
  Coord c;
  for (Dim d : l.order) {
    index_of(c, d) = rank % size_of(l, d);
    rank /= size_of(l, d);
  }
  return c;
}

int rank_of(const Layout& l, Coord c) {
  int rank = 0;
  for (auto it = l.order.rbegin(); it != l.order.rend(); ++it) rank = rank * size_of(l, *it) + index_of(c, *it);
  return rank;
}

std::vector<uint32_t> ranks_along(const Layout& l, Coord at, Dim d) {
  std::vector<uint32_t> ranks;
  for (int i = 0; i < size_of(l, d); ++i) {
    index_of(at, d) = i;
    ranks.push_back(static_cast<uint32_t>(rank_of(l, at)));
  }
  return ranks;
}

std::string order_string(const Layout& l) {
  std::string s;
  for (Dim d : l.order) s += std::string(s.empty() ? "" : "-") + (d == Dim::tp ? "tp" : d == Dim::dp ? "dp" : "pp");
  return s;
}

void validate(const Layout& l, const TrainingSpec& t, const model::ModelSpec& m, int gpus) {
  auto s = [](int64_t v) { return std::to_string(v); };
  if (l.tp < 1 || l.pp < 1 || l.dp < 1) throw UserError("tp, pp and dp must each be at least 1");
  if (l.gpus() != gpus) {
    throw UserError("tp x pp x dp = " + s(l.tp) + " x " + s(l.pp) + " x " + s(l.dp) + " = " + s(l.gpus()) +
                    " does not match the cluster's " + s(gpus) + " GPUs; choose tp, pp, dp whose product is " + s(gpus));
  }
  if (t.micro_batch < 1 || t.global_batch < 1 || t.seq_len < 1) throw UserError("global_batch, micro_batch and seq_len must be positive");
  if (t.global_batch % (t.micro_batch * l.dp) != 0) {
    throw UserError("global_batch " + s(t.global_batch) + " is not a multiple of micro_batch x dp = " +
                    s(t.micro_batch) + " x " + s(l.dp));
  }
  const int64_t micro_batches = t.accumulation(l);
  if (m.family != model::Family::mlp && t.seq_len > m.max_seq) {
    throw UserError("seq_len " + s(t.seq_len) + " exceeds " + m.name + "'s context of " + s(m.max_seq));
  }
  if (l.bucket_size.count <= 0) throw UserError("bucket_size must be positive");
  if (l.tp > 1) {
    if (m.family == model::Family::mlp) throw UserError("tensor parallelism needs a transformer model; " + m.name + " is an MLP (use tp: 1)");
    if (m.heads % l.tp != 0 || m.ffn_hidden % l.tp != 0) {
      throw UserError("tp " + s(l.tp) + " must divide " + m.name + "'s attention heads (" + s(m.heads) + ") and ffn_hidden (" + s(m.ffn_hidden) + ")");
    }
    if (m.kv_heads >= l.tp && m.kv_heads % l.tp != 0) {
      throw UserError("tp " + s(l.tp) + " must divide " + m.name + "'s KV heads (" + s(m.kv_heads) + ")");
    }
  }
  if (l.sequence_parallel) {
    if (l.tp < 2) throw UserError("sequence_parallel needs tp > 1 (it shards what tensor parallelism replicates)");
    if (t.seq_len % l.tp != 0) throw UserError("sequence_parallel needs seq_len (" + s(t.seq_len) + ") divisible by tp (" + s(l.tp) + ")");
  }
  if (l.virtual_stages < 1) throw UserError("virtual_stages must be at least 1");
  if (l.schedule == PipelineSchedule::interleaved) {
    if (l.pp < 2 || l.virtual_stages < 2) throw UserError("the interleaved schedule needs pp > 1 and virtual_stages > 1");
    if (micro_batches % l.pp != 0) {
      throw UserError("the interleaved schedule needs the micro-batch count (" + s(micro_batches) + ") to be a multiple of pp (" + s(l.pp) + ")");
    }
  } else if (l.virtual_stages != 1) {
    throw UserError("virtual_stages > 1 needs schedule: interleaved");
  }
  const int chunks = l.pp * l.virtual_stages;
  if (l.pp > 1 && m.layers % chunks != 0) {
    throw UserError(m.name + "'s " + s(m.layers) + " layers do not split evenly into pp x virtual_stages = " + s(chunks) +
                    " model chunks; choose pp x virtual_stages dividing " + s(m.layers));
  }
  if (l.pp > 1 && l.data_parallel == DataParallel::zero2) {
    throw UserError("zero2 with pp > 1 is not supported: it reduce-scatters every micro-batch (DeepSpeed forbids ZeRO-2 with "
                    "pipeline parallelism); use zero1 (Megatron's distributed optimizer) or ddp");
  }
  if (l.pp > 1 && is_fsdp(l.data_parallel)) {
    throw UserError("fsdp_* with pp > 1 is not supported; with pipeline parallelism use ddp, zero1 or zero2 (as Megatron-LM does)");
  }
}

}  // namespace cs::strategy
