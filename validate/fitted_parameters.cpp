#include "validate/fitted_parameters.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cost_models/collective_algorithms.h"
#include "driver/simulation.h"
#include "models/software_stack.h"
#include "scenarios/profile_io.h"

namespace cs::validate {

std::vector<FittedParameter> fitted_parameters() {
  const cost::CollectiveParams defaults;
  const std::string nccl = "nccl_tests_8xh100_awsome (31 all_reduce sizes)";
  const std::string vtrain = "vTrain's A100 all-reduce curves (7,168 rows)";
  return {
      {"collective launch overhead", defaults.launch_overhead.us(), "us", nccl,
       "cost::kH100LaunchOverheadUs"},
      {"LL channel rate", defaults.ll_channel_rate.gb_per_s(), "GB/s", nccl,
       "cost::kH100LlChannelGBps"},
      {"NVLS pipeline latency", defaults.nvls_pipeline_latency.us(), "us", nccl,
       "cost::kH100NvlsPipelineUs"},
      {"NVLS bandwidth share of NVLink", defaults.nvls_efficiency, "of link bandwidth", nccl,
       "cost::kH100NvlsEfficiency"},
      {"buffer pass efficiency", defaults.pass_efficiency, "of HBM bandwidth", vtrain,
       "cost::CollectiveParams::pass_efficiency"},
      {"NVLink efficiency", defaults.nvlink_efficiency, "of link bandwidth", vtrain,
       "cost::CollectiveParams::nvlink_efficiency"},
      {"eager host time per kernel",
       model::stack_traits(model::Stack::pytorch_eager).host_per_kernel.us(), "us",
       "h100_torch_steps_202611 + h200_gpu_database_20261128_calibration (mean MAPE minimised)",
       "models/software_stack.cpp kEagerHostUs"},
      {"compiled host time per kernel",
       model::stack_traits(model::Stack::torch_compile).host_per_kernel.us(), "us",
       "h100_torch_steps_202611 + h200_gpu_database_20261128_calibration (mean MAPE minimised)",
       "models/software_stack.cpp kCompiledHostUs"},
  };
}

std::vector<FittedParameter> profile_fitted_parameters() {
  std::vector<FittedParameter> out;
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(driver::profiles_dir(), ec)) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const cost::Profile p = scenario::load_profile(f.string());
    if (p.tensor_clock_fitted_on.empty()) continue;  // not fitted (1, or derived elsewhere)
    out.push_back({p.name + " tensor clock", p.tensor_clock_ratio, "of the profile's curves",
                   p.tensor_clock_fitted_on, f.filename().string() + " tensor_clock_ratio",
                   p.name});
  }
  return out;
}

void print_fitted_parameters(std::ostream& out) {
  char line[256];
  auto print = [&](const std::vector<FittedParameter>& params) {
    for (const FittedParameter& p : params) {
      std::snprintf(line, sizeof line, "  %-32s %8.4g %-18s fitted on %s\n", p.name.c_str(),
                    p.value, p.unit.c_str(), p.fitted_on.c_str());
      out << line;
    }
  };
  const auto params = fitted_parameters();
  out << "\nfitted parameters (" << params.size()
      << ", global: every profile and stack uses the same)\n";
  print(params);
  const auto own = profile_fitted_parameters();
  if (own.empty()) return;
  out << "fitted for one profile (" << own.size() << "; each profile's total stays within 10)\n";
  print(own);
}

}  // namespace cs::validate
