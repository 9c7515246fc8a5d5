#include "strategies/model_state.h"

#include "strategies/data_parallel/flavour.h"

namespace cs::strategy {

ModelState model_state_per_rank(int64_t params, const model::PrecisionInfo& p, DataParallel d,
                                int dp) {
  return data_parallel_flavour(d).model_state(params, p, dp);
}

ModelState frozen_model_state(int64_t frozen, const model::PrecisionInfo& p) {
  return {frozen * p.weight_bytes, 0, 0};
}

}  // namespace cs::strategy
