// A Profile: what `clustersim calibrate` measured on a device, in the units the cost models use.
// It replaces the datasheet peaks and default efficiencies of the device spec, and, where
// collectives were measured, the topology-based collective model with the fitted
// latency + bytes / bandwidth line. Every Profile says what it was measured on and when.
// Shipped profiles (`profiles/<gpu>.yaml`: H100 and H200 measured by `calibrate --backend cuda`,
// A100 built from public measurements) also name their
// sources and the error they gave on the validation suite (`clustersim validate --suite`), which
// the report header quotes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cost_models/compute_model.h"
#include "cost_models/cost_model.h"
#include "cost_models/device_spec.h"

namespace cs::cost {

struct MeasuredCollectives {
  SimTime latency;               // per call
  BytesPerSecond bus_bandwidth;  // nccl-tests' busbw: bus bytes per second
};

// What a profile gave on the published runs of the validation suite when it was written: the
// step-time error over every training row of its GPU that the simulator could express.
// Out of sample: only validation sources count (validate/suites/SPLIT.md); a source any number
// was fitted on is left out, its error being a fit and not a prediction.
struct ProfileValidation {
  int runs = 0;              // published training runs simulated
  double mape_percent = 0;   // mean absolute percentage error of the step time over them
  double worst_percent = 0;  // the largest one
  std::string suites;        // the suite sources those runs come from
  std::string precisions;    // the training precisions they ran, "fp8, mixed_bf16"
  std::string date;          // ISO date of the suite run
  // The same figures per software stack (models/software_stack.h), by its name: the error a
  // report with that stack quotes.
  struct Stack {
    int runs = 0;
    double mape_percent = 0, worst_percent = 0;
    std::string suites;
    std::string precisions;
  };
  std::map<std::string, Stack> stacks;
};

// The executor's own kernels, which stand in for a framework's: attention as batched cuBLASLt
// products around a plain row softmax (not a fused FlashAttention), plain norm and softmax
// kernels. `calibrate --backend cuda` measures them; they price only the executor's runs
// (`validate --measured`), never a framework's, whose kernels the profile's own curves describe.
struct ExecutorKernels {
  std::map<ir::DType, EfficiencyCurve>
      attention;                  // by the forward task's FLOPs, of that dtype's peak
  EfficiencyCurve norm, softmax;  // by bytes, of the memory bandwidth
  // The head dim `calibrate --backend cuda` measures the attention at (validate/calibration.cpp,
  // every plan: 64). Its curve prices other head dims by their scores
  // (ComputeEfficiency::attention_curve_head_dim): on our H200 (campaign 2's same-graph runs,
  // validate/measurements/h200_20261128/same_graph) head dim 128 ran its attention 2.5x faster
  // per FLOP than the FLOPs-keyed curve said.
  int64_t attention_head_dim = 64;
};

struct Profile {
  std::string name;
  std::string measured_on;    // device and software, as the backend reported them
  std::string date;           // ISO date of the measurement
  DeviceSpec device;          // peaks and memory bandwidth as measured
  ComputeEfficiency compute;  // GEMM curve or table, kernel tables, launch gap as fitted
  std::optional<MeasuredCollectives> collectives;
  Interference interference;  // compute and communication slowing each other when they overlap
  std::vector<std::string> sources;  // where each figure came from (shipped profiles)
  std::optional<ProfileValidation> validation;
  std::optional<ExecutorKernels> executor;  // measured on clustersim's executor (see above)
  std::string file;                         // the file it was read from (empty: built in memory)
  // A variant of a measured part (scenarios/profile_io.cpp, variant_of): the share of the base
  // part's GEMM and attention rate it sustains (already in compute.rate_scale), and the data it
  // was fitted on where it was fitted.
  double tensor_clock_ratio = 1.0;
  std::string tensor_clock_fitted_on;
};

// The profile as it prices clustersim's executor: its own attention, norm and softmax kernels in
// place of the framework's, at the rates it measured (a fitted tensor clock taken out); unchanged
// where the profile measured none.
Profile for_executor(Profile p);

}  // namespace cs::cost
