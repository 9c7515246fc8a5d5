#include "strategies/model_state.h"

namespace cs::strategy {

ModelState model_state_per_rank(int64_t params, const model::PrecisionInfo& p, DataParallel d,
                                int dp) {
  auto shard = [dp](int64_t bytes) { return (bytes + dp - 1) / dp; };
  ModelState s{params * p.weight_bytes, params * p.grad_bytes, params * p.optimizer_bytes};
  switch (d) {
    case DataParallel::ddp:
    case DataParallel::ddp_flat:
      break;
    case DataParallel::zero1:
      s.optimizer_state = shard(s.optimizer_state);
      break;
    case DataParallel::zero2:
      s.gradients = shard(s.gradients);
      s.optimizer_state = shard(s.optimizer_state);
      break;
    // Both FSDP strategies keep parameters sharded at rest; SHARD_GRAD_OP gathers them once per
    // step (a transient the FSDP policy allocates), FULL_SHARD around every use.
    case DataParallel::fsdp_shard_grad_op:
    case DataParallel::fsdp_full_shard:
      s = {shard(s.parameters), shard(s.gradients), shard(s.optimizer_state)};
      break;
  }
  return s;
}

}  // namespace cs::strategy
