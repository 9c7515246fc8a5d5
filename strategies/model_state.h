// The static model state of one rank (weights, gradients, optimizer state) under each
// data-parallel flavour: the ZeRO paper's accounting (Rajbhandari et al. 2020, section 5),
// (weight + gradient + optimizer) bytes per parameter with the sharded parts divided by dp.
// Which parts a flavour shards is its own answer (data_parallel/flavour.h). DDP's bucket buffers
// and FSDP's transient gathers are not model state; the policies add them.
#pragma once

#include <cstdint>

#include "models/model_work.h"
#include "strategies/layout.h"

namespace cs::strategy {

struct ModelState {
  int64_t parameters = 0, gradients = 0, optimizer_state = 0;
  int64_t total() const { return parameters + gradients + optimizer_state; }
};

// `params` parameters per TP rank and stage; ZeRO/FSDP pad each sharded part up to a multiple of
// dp.
ModelState model_state_per_rank(int64_t params, const model::PrecisionInfo& p, DataParallel d,
                                int dp);

// The state of `frozen` parameters (LoRA's base model, ParameterTensor::trainable false): their
// weights only, whole on every data-parallel rank. Megatron-Core's DDP builds its gradient buffers
// from the parameters that require gradients, and its (distributed) optimizer's parameter groups,
// hence the fp32 master weights and Adam moments, skip the others
// (megatron/core/distributed/distributed_data_parallel.py, megatron/core/optimizer/__init__.py's
// _get_param_groups): a frozen bf16 weight keeps its 2 bytes and nothing else, unsharded (the
// distributed optimizer shards only what it steps).
ModelState frozen_model_state(int64_t frozen, const model::PrecisionInfo& p);

}  // namespace cs::strategy
