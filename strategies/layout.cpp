#include "strategies/layout.h"

#include "common/error.h"

namespace cs::strategy {

std::string_view to_string(DataParallel d) {
  switch (d) {
    case DataParallel::ddp: return "ddp";
    case DataParallel::ddp_flat: return "ddp_flat";
  }
  return "?";
}

void validate(const Layout& l, const TrainingSpec& t, const model::ModelSpec& m, int gpus) {
  auto s = [](int64_t v) { return std::to_string(v); };
  if (l.tp < 1 || l.pp < 1 || l.dp < 1) throw UserError("tp, pp and dp must each be at least 1");
  if (l.gpus() != gpus) {
    throw UserError("tp x pp x dp = " + s(l.tp) + " x " + s(l.pp) + " x " + s(l.dp) + " = " + s(l.gpus()) +
                    " does not match the cluster's " + s(gpus) + " GPUs; choose tp, pp, dp whose product is " + s(gpus));
  }
  if (l.tp > 1 || l.pp > 1) {
    throw UserError("tensor and pipeline parallelism (tp, pp > 1) are not implemented yet; valid: tp: 1, pp: 1");
  }
  if (t.micro_batch < 1 || t.global_batch < 1 || t.seq_len < 1) throw UserError("global_batch, micro_batch and seq_len must be positive");
  if (t.global_batch % (t.micro_batch * l.dp) != 0) {
    throw UserError("global_batch " + s(t.global_batch) + " is not a multiple of micro_batch x dp = " +
                    s(t.micro_batch) + " x " + s(l.dp));
  }
  if (m.family != model::Family::mlp && t.seq_len > m.max_seq) {
    throw UserError("seq_len " + s(t.seq_len) + " exceeds " + m.name + "'s context of " + s(m.max_seq));
  }
  if (l.bucket_size.count <= 0) throw UserError("bucket_size must be positive");
}

}  // namespace cs::strategy
