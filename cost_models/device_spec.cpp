#include "cost_models/device_spec.h"

#include "common/error.h"

namespace cs::cost {

std::string_view to_string(GpuArch a) {
  switch (a) {
    case GpuArch::volta:
      return "volta";
    case GpuArch::ampere:
      return "ampere";
    case GpuArch::hopper:
      return "hopper";
    case GpuArch::blackwell:
      return "blackwell";
  }
  return "?";
}

bool DeviceSpec::supports(ir::DType d) const {
  switch (d) {
    case ir::DType::fp32:
      return fp32.value > 0;
    case ir::DType::tf32:
      return tf32.value > 0;
    case ir::DType::bf16:
      return bf16.value > 0;
    case ir::DType::fp16:
      return fp16.value > 0 || bf16.value > 0;
    case ir::DType::fp8:
      return fp8.value > 0;
    case ir::DType::fp4:
      return fp4.value > 0;
  }
  return false;
}

FlopsPerSecond DeviceSpec::peak(ir::DType d) const {
  if (!supports(d)) {
    const std::string dtype(ir::to_string(d));
    std::string why = "peak." + dtype + " not declared";
    if (d == ir::DType::fp8) why = "no FP8 tensor cores, or peak.fp8 not declared";
    if (d == ir::DType::fp4) why = "no FP4 tensor cores: Blackwell on";
    throw UserError("device '" + name + "' has no " + dtype + " rate (" + why + ")");
  }
  switch (d) {
    case ir::DType::fp32:
      return fp32;
    case ir::DType::tf32:
      return tf32;
    case ir::DType::bf16:
      return bf16;
    case ir::DType::fp16:
      return fp16.value > 0 ? fp16 : bf16;
    case ir::DType::fp8:
      return fp8;
    case ir::DType::fp4:
      return fp4;
  }
  return fp32;
}

namespace {

constexpr Bytes mib(int64_t n) { return {n << 20}; }

}  // namespace

const std::vector<DeviceSpec>& device_specs() {
  // Columns: fp32, tf32, bf16, fp8 (dense TFLOP/s), HBM bandwidth, nvidia-smi total, fp16 (= bf16
  // on all of these parts), fp4 (Blackwell on; zero before), architecture. Sources:
  //   H100 SXM5 datasheet: 67 FP32, 494.7 TF32, 989.4 BF16/FP16, 1978.9 FP8; 80 GB HBM3 3.35 TB/s.
  //   H200 datasheet: H100 compute; 141 GB HBM3e at 4.8 TB/s.
  //   H800 SXM5: the H100 SXM5 die and board with NVLink cut to 8 links (400 GB/s bidirectional)
  //     and FP64 cut; tensor rates and the 80 GB HBM3 at 3.35 TB/s as H100 SXM5 (DeepSeek-V3
  //     report, arXiv 2412.19437 sec. 3.1-3.3, trained with FP8 on these; "Insights into
  //     DeepSeek-V3", arXiv 2505.09343 sec. 4). nvidia-smi total taken equal to H100's (same HBM).
  //   H100 SXM5 96GB HBM2e at 500 W (Meta's Grand Teton hosts, as TorchTitan's H100 benchmarks
  //     describe them: "H100 96GB HBM2e with 2.4 TB/s, 500 W power limit"): the H100 SXM5 die,
  //     datasheet peaks as H100 (MFU is quoted against them; what the power limit costs is the
  //     shipped profile's tensor_clock_ratio), 2.4 TB/s.
  //   A100 SXM 80GB datasheet: 19.5 FP32, 156 TF32, 312 BF16/FP16, no FP8; 2.039 TB/s.
  //   H100 PCIe datasheet: 51 FP32, 378 TF32, 756 BF16/FP16, 1513 FP8; 80 GB HBM2e at 2.0 TB/s.
  //   HGX B200 datasheet, per-GPU column (sparse figures halved to dense): FP32 75, TF32 2.2 PF
  //     sparse = 1.1 PF, FP16/BF16 4.5 PF sparse = 2.25 PF, FP8 9 PF sparse = 4.5 PF; 180 GB HBM3e
  //     at 7.7 TB/s (the DGX B200 sheet rounds to 64 TB/s / 8 = 8 TB/s; the driver's 7680-bit
  //     bus at 3996 MHz DDR gives 7.67 TB/s, pytorch/ao PR #4002). FP4 18 PF sparse = 9 PF: 2x FP8.
  //   GB200 NVL72 datasheet, per-GPU column: FP32 80, TF32 2.5 PF sparse = 1.25 PF, FP16/BF16
  //     5 PF sparse = 2.5 PF, FP8 10 PF sparse = 5 PF; 186 GB HBM3e at 8 TB/s. FP4: the rack's
  //     1,440 PF sparse / 72 = 20 PF = 10 PF dense, 2x FP8.
  //   B300 (Blackwell Ultra, HGX B300 at 1100 W): NVIDIA's HGX B300 table for 8 GPUs (as reproduced
  //     by fibermall.com/blog/?p=17161 and glennklockwood.com/garden/processors/B300; NVIDIA's own
  //     page was not at hand), / 8 and sparse halved: FP32 600 TF = 75, TF32 18 PF sparse = 1.125
  //     PF, FP16/BF16 36 PF sparse = 2.25 PF, FP8/FP6 72 PF sparse = 4.5 PF, FP4 105 PF dense
  //     = 13.125 PF (2.9x FP8; other tables round it to 13.5-14), 2.3 TB = 288 GB HBM3e per GPU.
  //     HBM bandwidth is not in that table: 7.7 TB/s as B200
  //     (verda.com/blog/gb300-nvl72-architecture lists B300 at 7.7 TB/s; eight HBM3e stacks as
  //     B200, 12-high instead of 8-high).
  //   GB300 (Blackwell Ultra in a GB300 NVL72, 1400 W): NVIDIA's GB300 NVL72 rack figures / 72 (as
  //     reproduced by glennklockwood.com and verda.com above, and vendordeep.com's GTC report): FP4
  //     1,080 PF dense = 15 PF (3x FP8), FP8/FP6 720 PF sparse = 5 PF, FP16/BF16 2.5 PF, TF32 1.25
  //     PF, HBM3e 576 TB/s = 8 TB/s; FP32 80 TF (verda.com's per-GPU table; no rack figure at
  //     hand). 288 GB HBM3e per GPU (8 stacks of 12-high 36 GB; the rack's "20 TB" / 72 = 278).
  // Measured matmul rates (maximum achievable matmul FLOPS: torch.matmul at the best of a search
  // over shapes, mean of 100 runs after 50 warm-up ones; S. Bekman, ml-engineering,
  // compute/accelerator/README.md "Maximum Achievable Matmul FLOPS comparison table", CC BY-SA 4.0,
  // snapshot 2026-08-22), BF16 / FP8 e4m3 TFLOP/s: H100 SXM 794.5 / 1402.6, H200 "the same" as
  // H100 / 1453.4, A100 SXM 271.2 / -, B200 1745.0 / 3432.5, B300 1769.0 / 3353.3, GB200 1822.0 /
  // 3615.6. The superchip parts reach a smaller share of their higher peaks (GB200 72.9% of 2.5
  // PF BF16 against B200's 77.6% of 2.25): their rates differ by 4%, not their peaks' 11%, as
  // Megatron-Bridge's Llama 3 8B rows on 8 GB200 and 8 B200 do (3%). None published for GB300, the
  // H100 PCIe, the H800 or the 500 W H100: they keep the default ceiling (0.80 of the peak).
  // nvidia-smi totals: H100 81559 MiB (the 96 GB part: 97871 MiB, H100's ratio of visible to sold
  // applied; none was at hand to read it), A100 80GB 81920 MiB (modal-labs/modal-client PR #2797),
  // H200 143771 MiB, B200 183359 MiB (NVIDIA/TensorRT-LLM issue #10278). GB200: 189471 MiB, the
  // B200 ratio (180 GB sold : 183359 MiB visible) applied to 186 GB; no GB200 was at hand to read
  // it. B300 and GB300: 293374 MiB, the same ratio applied to 288 GB (none at hand either).
  static const std::vector<DeviceSpec> kSpecs = {
      {"h100_sxm",
       "NVIDIA H100 SXM5 80GB HBM3",
       {67e12},
       {494.7e12},
       {989.4e12},
       {1978.9e12},
       {3.35e12},
       mib(81559),
       {989.4e12},
       {0},
       GpuArch::hopper,
       {794.5e12},
       {1402.6e12}},
      {"h200",
       "NVIDIA H200 SXM 141GB HBM3e",
       {67e12},
       {494.7e12},
       {989.4e12},
       {1978.9e12},
       {4.8e12},
       mib(143771),
       {989.4e12},
       {0},
       GpuArch::hopper,
       {794.5e12},
       {1453.4e12}},
      {"h800",
       "NVIDIA H800 SXM5 80GB HBM3 (H100 compute, NVLink 400 GB/s bidirectional)",
       {67e12},
       {494.7e12},
       {989.4e12},
       {1978.9e12},
       {3.35e12},
       mib(81559),
       {989.4e12},
       {0},
       GpuArch::hopper},
      {"h100_sxm_96gb_500w",
       "NVIDIA H100 SXM5 96GB HBM2e, 500 W power limit (Meta Grand Teton)",
       {67e12},
       {494.7e12},
       {989.4e12},
       {1978.9e12},
       {2.4e12},
       mib(97871),
       {989.4e12},
       {0},
       GpuArch::hopper},
      {"h100_pcie",
       "NVIDIA H100 PCIe 80GB HBM2e",
       {51e12},
       {378e12},
       {756e12},
       {1513e12},
       {2.0e12},
       mib(81559),
       {756e12},
       {0},
       GpuArch::hopper},
      {"a100_sxm_80gb",
       "NVIDIA A100 SXM4 80GB (no FP8)",
       {19.5e12},
       {156e12},
       {312e12},
       {0},
       {2.039e12},
       mib(81920),
       {312e12},
       {0},
       GpuArch::ampere,
       {271.2e12},
       {0}},
      {"b200",
       "NVIDIA B200 (HGX B200, 1000 W) 180GB HBM3e",
       {75e12},
       {1.1e15},
       {2.25e15},
       {4.5e15},
       {7.7e12},
       mib(183359),
       {2.25e15},
       {9e15},
       GpuArch::blackwell,
       {1745.0e12},
       {3432.5e12}},
      {"gb200",
       "NVIDIA Blackwell GPU of a GB200 superchip (1200 W) 186GB HBM3e",
       {80e12},
       {1.25e15},
       {2.5e15},
       {5e15},
       {8e12},
       mib(189471),
       {2.5e15},
       {10e15},
       GpuArch::blackwell,
       {1822.0e12},
       {3615.6e12}},
      {"b300",
       "NVIDIA B300 Blackwell Ultra (HGX B300, 1100 W) 288GB HBM3e",
       {75e12},
       {1.125e15},
       {2.25e15},
       {4.5e15},
       {7.7e12},
       mib(293374),
       {2.25e15},
       {13.125e15},
       GpuArch::blackwell,
       {1769.0e12},
       {3353.3e12}},
      {"gb300",
       "NVIDIA Blackwell Ultra GPU of a GB300 superchip (1400 W) 288GB HBM3e",
       {80e12},
       {1.25e15},
       {2.5e15},
       {5e15},
       {8e12},
       mib(293374),
       {2.5e15},
       {15e15},
       GpuArch::blackwell},
  };
  return kSpecs;
}

namespace {

const DeviceSpec* device_preset(const std::string& name) {
  for (const auto& d : device_specs()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

}  // namespace

GpuArch arch_of_device(const std::string& name) {
  const DeviceSpec* d = device_preset(name);
  return d ? d->arch : DeviceSpec{}.arch;
}

const DeviceSpec& find_device(const std::string& name) {
  if (const DeviceSpec* d = device_preset(name)) return *d;
  std::string list;
  for (const auto& d : device_specs()) list += (list.empty() ? "" : ", ") + d.name;
  throw UserError("unknown device '" + name + "'; valid devices: " + list);
}

}  // namespace cs::cost
