#include "strategies/data_parallel/flavour.h"

#include <algorithm>

#include "common/units.h"

namespace cs::strategy {

double StageCommunication::exposed(double comm, double under, double last) const {
  return std::max(0.0, comm - under) + comm * last + std::min(comm, under) * slowdown;
}

ModelState DataParallelFlavour::model_state(int64_t params, const model::PrecisionInfo& p,
                                            int ranks) const {
  return shard_state({params * p.weight_bytes, params * p.grad_bytes, params * p.optimizer_bytes},
                     ranks);
}

std::string DataParallelFlavour::megatron_bucket_arg(const Layout& l) {
  // Megatron counts the bucket in fp32 elements.
  return "--ddp-bucket-size " + std::to_string(l.bucket_size.count / 4);
}

std::string DataParallelFlavour::buckets_description(const Layout& l, size_t units) {
  return " (bucket " + format_bytes(l.bucket_size) + ", " + std::to_string(units) + " buckets)";
}

// Which frameworks run which flavour, as their launch arguments can ask for it:
//   megatron_core  DDP; the distributed optimizer (ZeRO-1, --use-distributed-optimizer); torch
//                  FSDP2 (--use-torch-fsdp2, FULL_SHARD), which "is not currently working with
//                  Pipeline Parallel" (Megatron-Bridge's DistributedInitConfig.use_torch_fsdp2).
//                  Megatron-FSDP's optim_grads (ZeRO-2) has no flag the emitted script carries.
//   pytorch_eager  DDP, torch.distributed.optim.ZeroRedundancyOptimizer (ZeRO-1), FSDP's
//                  SHARD_GRAD_OP and FULL_SHARD.
//   torch_compile  TorchTitan: DDP (data_parallel_replicate_degree) and FSDP2 (fully_shard,
//                  reshard_after_forward False for SHARD_GRAD_OP).
//   deepspeed      ZeRO stages 0 (DDP), 1, 2 and 3 (FULL_SHARD's units, gradients reduced as
//                  DeepSpeed does: fsdp.cpp); its pipeline engine takes
//                  ZeRO-0 and ZeRO-1 only ("ZeRO-2 and ZeRO-3 are incompatible with pipeline
//                  parallelism", deepspeed/runtime/pipe/engine.py).
// The unbucketed DDP is clustersim's reference, run by no framework.
bool DataParallelFlavour::run_by(model::Stack stack, int pp) const {
  using model::Stack;
  switch (stack) {
    case Stack::ideal:
      return true;
    case Stack::megatron_core:
      return id == DataParallel::ddp || id == DataParallel::zero1 ||
             (id == DataParallel::fsdp_full_shard && pp == 1);
    case Stack::pytorch_eager:
      return id != DataParallel::ddp_flat && id != DataParallel::zero2;
    case Stack::torch_compile:
      return id == DataParallel::ddp || fsdp();
    case Stack::deepspeed:
      return id == DataParallel::ddp || id == DataParallel::zero1 ||
             ((id == DataParallel::zero2 || id == DataParallel::fsdp_full_shard) && pp == 1);
  }
  return false;
}

int DataParallelFlavour::fsdp_version_run_by(model::Stack stack) const {
  // Megatron-Core's FSDP options are torch's fully_shard (--use-torch-fsdp2) and Megatron-FSDP,
  // which shards the main_grad buffer itself (its optim_grads_params mode): neither holds
  // unsharded gradients across micro-batches. TorchTitan applies fully_shard. PyTorch eager
  // runs (Hugging Face Accelerate's default) and the ideal bound keep FSDP1.
  if (!fsdp()) return 1;
  return stack == model::Stack::megatron_core || stack == model::Stack::torch_compile ? 2 : 1;
}

int64_t DataParallelFlavour::reduced_gradient_bytes(const model::PrecisionInfo& p, int fsdp_version,
                                                    bool reduce_in_bf16) const {
  if (!fsdp() || fsdp_version != 2 || reduce_in_bf16) return p.grad_bytes;
  return std::max<int64_t>(p.grad_bytes, 4);
}

const DataParallelFlavour& data_parallel_flavour(DataParallel d) {
  switch (d) {
    case DataParallel::ddp:
      return ddp_flavour(true);
    case DataParallel::ddp_flat:
      return ddp_flavour(false);
    case DataParallel::zero1:
      return zero_flavour(1);
    case DataParallel::zero2:
      return zero_flavour(2);
    case DataParallel::fsdp_shard_grad_op:
      return fsdp_flavour(false);
    case DataParallel::fsdp_full_shard:
      return fsdp_flavour(true);
  }
  return ddp_flavour(true);
}

const DataParallelFlavour& data_parallel_flavour(DataParallel d, int ranks) {
  return data_parallel_flavour(ranks > 1 ? d : DataParallel::ddp);
}

const std::vector<const DataParallelFlavour*>& data_parallel_flavours() {
  static const std::vector<const DataParallelFlavour*> all = [] {
    std::vector<const DataParallelFlavour*> v;
    for (DataParallel d :
         {DataParallel::ddp, DataParallel::ddp_flat, DataParallel::zero1, DataParallel::zero2,
          DataParallel::fsdp_shard_grad_op, DataParallel::fsdp_full_shard})
      v.push_back(&data_parallel_flavour(d));
    return v;
  }();
  return all;
}

std::vector<std::pair<std::string, DataParallel>> data_parallel_names() {
  std::vector<std::pair<std::string, DataParallel>> out;
  for (const DataParallelFlavour* f : data_parallel_flavours()) {
    out.emplace_back(std::string(f->name), f->id);
    for (std::string_view alias : f->aliases()) out.emplace_back(std::string(alias), f->id);
  }
  return out;
}

}  // namespace cs::strategy
