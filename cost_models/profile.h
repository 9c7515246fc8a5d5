// A Profile: what `clustersim calibrate` measured on a device, in the units the cost models use.
// It replaces the datasheet peaks and default efficiencies of the device spec, and, where
// collectives were measured, the topology-based collective model with the fitted
// latency + bytes / bandwidth line. Every Profile says what it was measured on and when.
#pragma once

#include <optional>
#include <string>

#include "cost_models/compute_model.h"
#include "cost_models/cost_model.h"
#include "cost_models/device_spec.h"

namespace cs::cost {

struct MeasuredCollectives {
  SimTime latency;                 // per call
  BytesPerSecond bus_bandwidth;    // nccl-tests' busbw: bus bytes per second
};

struct Profile {
  std::string name;
  std::string measured_on;   // device and software, as the backend reported them
  std::string date;          // ISO date of the measurement
  DeviceSpec device;         // peaks and memory bandwidth as measured
  ComputeEfficiency compute; // GEMM curve or table, kernel tables, launch gap as fitted
  std::optional<MeasuredCollectives> collectives;
  Interference interference; // compute and communication slowing each other when they overlap
};

}  // namespace cs::cost
