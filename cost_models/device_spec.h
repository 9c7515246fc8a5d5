// Accelerator figures the cost models need: dense peak rate per datatype, HBM bandwidth and
// capacity. Peaks are vendor datasheet figures (dense, no sparsity); capacities are what
// nvidia-smi reports as total memory. See device_spec.cpp for every figure's source.
// A rate of zero means the device has no such datatype (A100: no FP8, Hopper: no FP4); peak()
// then throws a UserError naming the device and the dtype. fp16 zero means "as bf16" (profiles
// written by `calibrate` carry no separate fp16 rate). A GPU can also be declared in a scenario's
// YAML (scenarios/scenario.cpp, `cluster.gpu` as a mapping), range-checked against DeviceBounds.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/units.h"
#include "taskgraph/task_graph.h"

namespace cs::cost {

// The GPU's architecture (its compute capability's major version): NCCL's tuning tables have one
// row per architecture (nccl_tables.h, in this order), and block-scaled tensor cores (MXFP8,
// NVFP4) are Blackwell's.
enum class GpuArch : uint8_t { volta, ampere, hopper, blackwell };
std::string_view to_string(GpuArch a);

struct DeviceSpec {
  std::string name;
  std::string description;
  FlopsPerSecond fp32, tf32, bf16, fp8;  // zero: not supported
  BytesPerSecond hbm_bandwidth;
  Bytes memory_capacity;
  FlopsPerSecond fp16;  // zero: as bf16
  FlopsPerSecond fp4;   // dense FP4 (NVFP4) tensor rate; zero: not supported
  // A GPU declared by its figures alone (scenario YAML, a profile not named after a preset) is
  // taken for Ampere: NCCL's lowest ring LL caps, and no block-scaled formats.
  GpuArch arch = GpuArch::ampere;
  // The largest matmul rate measured on the part (a published maximum-achievable-matmul figure:
  // torch.matmul at its best shape, device_spec.cpp names the source); zero: none published.
  // Priced GEMMs on a GPU without a profile saturate at this share of the peak instead of the
  // H100-derived default (cost::datasheet_efficiency).
  FlopsPerSecond measured_matmul_bf16{0}, measured_matmul_fp8{0};

  // MXFP8 and NVFP4 GEMMs: the block scales are applied inside the tensor cores (SM 10.0 on).
  bool has_block_scaled_tensor_cores() const { return arch >= GpuArch::blackwell; }

  // Throws UserError when the device has no rate for `d`.
  FlopsPerSecond peak(ir::DType d) const;
  bool supports(ir::DType d) const;
};

const std::vector<DeviceSpec>& device_specs();
// Throws UserError listing the valid names.
const DeviceSpec& find_device(const std::string& name);
// The architecture of the device preset of that name; a declared GPU's (DeviceSpec::arch's
// default) when no preset has it.
GpuArch arch_of_device(const std::string& name);

// Physically sensible bounds for a declared device, per GPU: a dense rate from 1 GFLOP/s (a
// CPU core) to 100 PFLOP/s (20x a Blackwell's FP8, 6.7x a GB300's FP4), HBM from 1 GiB to 4 TiB and
// from 10 GB/s to 100 TB/s (12x a B200's 8 TB/s). Figures outside them are typing mistakes (a unit
// off by 1000).
struct DeviceBounds {
  static constexpr FlopsPerSecond min_rate{1e9}, max_rate{100e15};
  static constexpr Bytes min_capacity{1LL << 30}, max_capacity{4LL << 40};
  static constexpr BytesPerSecond min_bandwidth{10e9}, max_bandwidth{100e12};
};

}  // namespace cs::cost
