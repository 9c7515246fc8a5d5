// The per-GPU reserve: device memory a training process holds beside the tensors the step
// allocates (parameters, gradients, optimizer state, activations, buffers), so that a run whose
// tensors fit can still run out of memory. Its own memory category (ir::MemoryCategory::reserve):
//   - the CUDA context and the runtime's state of a PyTorch process,
//   - cuBLAS workspaces (PyTorch's, and Transformer Engine's under Megatron-Core),
//   - NCCL's communication buffers, per communicator the layout uses,
//   - the caching allocator's fragmentation: reserved minus allocated at the peak, a share of it.
// memory_reserve.cpp derives each figure with its source. The `ideal` stack (clustersim's own
// executor, which measures its pool alone) keeps none.
#pragma once

#include <cstdint>
#include <vector>

#include "strategies/layout.h"
#include "timeline/timeline.h"

namespace cs::strategy {

struct MemoryReserve {
  int64_t fixed = 0;           // context, workspaces and NCCL buffers, bytes
  double fragmentation = 0.0;  // the allocator's reserved-but-unallocated share of the peak
  // The reserve beside a peak of `allocated` bytes of tensors.
  int64_t beside(int64_t allocated) const;
};

MemoryReserve memory_reserve(const Layout& l, const TrainingSpec& t);

// Adds the reserve to each rank's memory: its peak, the category breakdown at the peak and now.
void add_memory_reserve(std::vector<sim::RankMemory>& ranks, const MemoryReserve& r);

}  // namespace cs::strategy
