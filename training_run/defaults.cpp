#include "training_run/defaults.h"

#include <vector>

namespace cs::training_run {
namespace {

struct GpuDefaults {
  const char* gpu;  // device preset name
  Default usd_per_gpu_hour;
  Default watts;
};

// Price: AWS EC2 on-demand list prices of 8-GPU instances, US East, divided by 8 (launch prices;
// AWS has lowered them since, so these are the upper end of what a cloud charges):
//   p5.48xlarge, 8 x H100 SXM: $98.32/h (July 2023) -> $12.29 per GPU-hour;
//   p4de.24xlarge, 8 x A100 80GB: $40.97/h (2022) -> $5.12 per GPU-hour.
// GPUs without a price at hand take the H100's, and the report says so.
// Power at the wall per GPU: the system's maximum power over its 8 GPUs, which counts each GPU's
// board power and its share of the node (CPUs, memory, NICs, switches, fans):
//   DGX H100 and DGX H200: 10.2 kW max -> 1,275 W (700 W board + 575 W node share);
//   DGX A100: 6.5 kW max -> 812.5 W (400 W board);
//   DGX B200: 14.3 kW max -> 1,787.5 W (1,000 W board).
// Without a system figure at hand: the board power (the device spec's description) plus the DGX
// H100's 575 W node share per GPU.
constexpr double kH100NodeShare = 10200.0 / 8 - 700;
const std::vector<GpuDefaults>& gpu_defaults() {
  const Default h100_price{98.32 / 8, "AWS p5.48xlarge on-demand list price, Jul 2023, / 8"};
  const Default h100_power{10200.0 / 8, "DGX H100 system max 10.2 kW / 8 GPUs"};
  auto board_plus_share = [](double board, const std::string& gpu) {
    return Default{board + kH100NodeShare, gpu + " board " +
                                               std::to_string(static_cast<int>(board)) +
                                               " W + DGX H100's 575 W node share"};
  };
  auto h100s_price = [&](const std::string& gpu) {
    return Default{h100_price.value,
                   "H100's, no list price at hand for " + gpu + ": " + h100_price.source};
  };
  static const std::vector<GpuDefaults> kTable = {
      {"h100_sxm", h100_price, h100_power},
      {"h800", h100s_price("h800"), h100_power},
      {"h100_sxm_96gb_500w", h100s_price("h100_sxm_96gb_500w"),
       board_plus_share(500, "h100_sxm_96gb_500w")},
      {"h100_pcie", h100s_price("h100_pcie"), board_plus_share(350, "h100_pcie")},
      {"h200", h100s_price("h200"), {10200.0 / 8, "DGX H200 system max 10.2 kW / 8 GPUs"}},
      {"a100_sxm_80gb",
       {40.97 / 8, "AWS p4de.24xlarge on-demand list price, 2022, / 8"},
       {6500.0 / 8, "DGX A100 system max 6.5 kW / 8 GPUs"}},
      {"b200", h100s_price("b200"), {14300.0 / 8, "DGX B200 system max 14.3 kW / 8 GPUs"}},
      {"gb200", h100s_price("gb200"), board_plus_share(1200, "gb200")},
      {"b300", h100s_price("b300"), board_plus_share(1100, "b300")},
      {"gb300", h100s_price("gb300"), board_plus_share(1400, "gb300")},
  };
  return kTable;
}

const GpuDefaults* find(const std::string& gpu) {
  for (const auto& d : gpu_defaults()) {
    if (gpu == d.gpu) return &d;
  }
  return nullptr;
}

}  // namespace

Default default_usd_per_gpu_hour(const std::string& gpu) {
  if (const GpuDefaults* d = find(gpu)) return d->usd_per_gpu_hour;
  const Default h100 = find("h100_sxm")->usd_per_gpu_hour;
  return {h100.value, "H100's, no list price for a declared GPU: " + h100.source};
}

Default default_watts_per_gpu(const std::string& gpu) {
  if (const GpuDefaults* d = find(gpu)) return d->watts;
  const Default h100 = find("h100_sxm")->watts;
  return {h100.value, "H100's, no power figure for a declared GPU: " + h100.source};
}

// Google's fleet-wide trailing twelve-month PUE has been about 1.1 since 2020 (Google data
// centre efficiency reports); the global average is about 1.6 (Uptime Institute surveys).
Default default_pue() { return {1.1, "a hyperscaler's fleet average, Google's about 1.1"}; }

// Hoffmann et al. 2022 ("Training Compute-Optimal Large Language Models"): about 20 tokens per
// parameter for a compute-optimal model.
Default default_tokens_per_parameter() {
  return {20, "20 per parameter, compute-optimal: Chinchilla, Hoffmann et al. 2022"};
}

// Dubey et al. 2024 ("The Llama 3 Herd of Models"), section 3.3.4: 419 unexpected interruptions
// during a 54-day snapshot of pre-training on 16,384 H100 GPUs, that is
// 419 / (16,384 x 54 x 24 GPU-hours = 21,233,664) = 1.973e-5 per GPU-hour (one failure every
// 3.09 h on the whole job; one per 50,677 h, 5.8 years, per GPU).
Default default_failures_per_gpu_hour() {
  return {419.0 / (16384.0 * 54 * 24),
          "Llama 3's 419 interruptions in 54 days on 16,384 H100, Dubey et al. 2024 sec. 3.3.4"};
}

// Dubey et al. 2024, section 3.3.1: Llama 3's checkpoints go to Tectonic, Meta's distributed
// file system, which sustains 2 TB/s (peaks at 7 TB/s). A smaller cluster's storage is usually
// slower: give its figure.
Default default_checkpoint_bandwidth() {
  return {2e12, "Llama 3's Tectonic storage, sustained, Dubey et al. 2024 sec. 3.3.1"};
}

// No published figure covers rescheduling, process start-up, NCCL initialisation and data
// loader warm-up together; ten minutes is an assumption, stated as one.
Default default_restart_seconds() { return {600, "an assumption, not a published figure"}; }

// What a mixed-precision checkpoint holds per parameter (Megatron-LM's distributed optimizer
// checkpoint): bf16 weights 2 B + fp32 master weights 4 B + AdamW's first and second moments in
// fp32 4 + 4 B = 14 B. Gradients are not saved.
Default default_checkpoint_bytes_per_parameter() {
  return {14, "14 B per parameter: bf16 weights, fp32 master weights, AdamW moments"};
}

}  // namespace cs::training_run
