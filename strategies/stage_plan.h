// How a layout's pipeline stages divide the model: which blocks each stage runs (per model
// chunk, in forward order), which parameters it holds, the order it runs its passes in, and the
// gradient-sync units its data-parallel policy groups those parameters into.
//
// Blocks of a transformer: 0 is the embedding, 1..L the decoder layers, L+1 the head; the
// embedding joins the first model chunk and the head the last. Chunk g of p*v runs on stage
// g mod p (Megatron's interleaved assignment; v = 1 is plain pipelining).
#pragma once

#include <vector>

#include "models/model_work.h"
#include "strategies/ddp_buckets.h"
#include "strategies/layout.h"
#include "strategies/pipeline_schedule.h"

namespace cs::strategy {

// Gradient-sync units of one stage: DDP/ZeRO buckets, one unit per tensor (flat DDP), or FSDP's
// per-block units.
struct SyncUnits {
  std::vector<Bucket> units;
  std::vector<int> unit_of_param;  // global parameter id -> unit, -1 when not on this stage
  std::vector<int> unit_of_block;  // block -> unit for block-wise units, -1 otherwise
  int root_unit = -1;              // FSDP root (embedding + head): never resharded after forward
};

struct Stage {
  std::vector<std::vector<int>> chunk_blocks;  // local chunk -> block indices in forward order
  std::vector<int> params;                     // global parameter ids held here
  std::vector<bool> holds_block;               // block index -> whether a chunk here runs it
  int64_t numel = 0;         // parameters per TP rank (routed experts: this rank's)
  int64_t expert_numel = 0;  // of which trainable routed experts' (sharded by EP)
  int64_t frozen_numel = 0;  // of which frozen (LoRA's base model: ParameterTensor::trainable)
  int64_t trained_numel() const { return numel - frozen_numel; }
  std::vector<Slot> schedule;
  SyncUnits sync;
};

// `params` is the model's parameter list plus, at index `tied_copy` (-1: none), the last stage's
// copy of a tied word embedding. Under expert parallelism a rank holds experts / ep of each MoE
// layer's routed experts; every EP rank's share has the same shapes, so the stage lists experts
// 0 .. experts / ep - 1 for all of them.
std::vector<Stage> partition_stages(const model::ModelSpec& m, const model::ModelWork& work,
                                    const std::vector<model::ParameterTensor>& params,
                                    int tied_copy, const Layout& l, int64_t micro_batches);

}  // namespace cs::strategy
