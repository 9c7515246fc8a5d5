#include "cost_models/device_spec.h"

#include "common/error.h"

namespace cs::cost {

FlopsPerSecond DeviceSpec::peak(ir::DType d) const {
  switch (d) {
    case ir::DType::fp32: return fp32;
    case ir::DType::tf32: return tf32;
    case ir::DType::bf16:
    case ir::DType::fp16: return bf16;
    case ir::DType::fp8: return fp8;
  }
  return fp32;
}

const std::vector<DeviceSpec>& device_specs() {
  // Sources: NVIDIA H100 datasheet (SXM5: 67 FP32, 494.7 TF32, 989.4 BF16/FP16, 1978.9 FP8 dense
  // TFLOP/s; 80 GB HBM3 at 3.35 TB/s), H200 datasheet (same compute; 141 GB HBM3e at 4.8 TB/s),
  // A100 datasheet (SXM 80GB: 19.5 FP32, 156 TF32, 312 BF16/FP16 dense TFLOP/s; 2.039 TB/s).
  // H100 PCIe datasheet: 51 FP32, 378 TF32, 756 BF16/FP16, 1513 FP8 dense TFLOP/s; 80 GB HBM2e at
  // 2.0 TB/s.
  // Capacities: nvidia-smi totals (H100 81559 MiB, H200 143771 MiB, A100 80GB 81920 MiB).
  static const std::vector<DeviceSpec> kSpecs = {
      {"h100_sxm", "NVIDIA H100 SXM5 80GB HBM3", {67e12}, {494.7e12}, {989.4e12}, {1978.9e12},
       {3.35e12}, {81559LL << 20}},
      {"h200", "NVIDIA H200 SXM 141GB HBM3e", {67e12}, {494.7e12}, {989.4e12}, {1978.9e12},
       {4.8e12}, {143771LL << 20}},
      {"h100_pcie", "NVIDIA H100 PCIe 80GB HBM2e", {51e12}, {378e12}, {756e12}, {1513e12},
       {2.0e12}, {81559LL << 20}},
      {"a100_sxm_80gb", "NVIDIA A100 SXM4 80GB", {19.5e12}, {156e12}, {312e12}, {312e12},
       {2.039e12}, {81920LL << 20}},
  };
  return kSpecs;
}

const DeviceSpec& find_device(const std::string& name) {
  for (const auto& d : device_specs()) {
    if (d.name == name) return d;
  }
  std::string list;
  for (const auto& d : device_specs()) list += (list.empty() ? "" : ", ") + d.name;
  throw UserError("unknown device '" + name + "'; valid devices: " + list);
}

}  // namespace cs::cost
