// Accelerator figures the cost models need: dense peak rate per datatype, HBM bandwidth and
// capacity. Peaks are vendor datasheet figures (dense, no sparsity); capacities are what
// nvidia-smi reports as total memory. See device_spec.cpp for sources.
#pragma once

#include <string>
#include <vector>

#include "common/units.h"
#include "taskgraph/task_graph.h"

namespace cs::cost {

struct DeviceSpec {
  std::string name;
  std::string description;
  FlopsPerSecond fp32, tf32, bf16, fp8;  // fp16 dense rate equals bf16 on these parts
  BytesPerSecond hbm_bandwidth;
  Bytes memory_capacity;

  FlopsPerSecond peak(ir::DType d) const;
};

const std::vector<DeviceSpec>& device_specs();
// Throws UserError listing the valid names.
const DeviceSpec& find_device(const std::string& name);

}  // namespace cs::cost
