// `clustersim calibrate --backend cpu`: microbenchmark suites run through the executor, fitted
// into a Profile.
//   compute (1 rank): GEMMs m = n = k from 64 to 1024 (fp32), streaming kernels of 1-64 MiB, and
//     near-empty kernels (8 bytes) for the per-task overhead;
//   collectives (2 ranks): all-reduces of 64 KiB to 16 MiB.
// Fits (least squares): launch gap = median time of the near-empty kernels; memory bandwidth
// from time = gap + bytes / B; GEMMs from time - gap = (flops + half) / peak (the roofline's
// efficiency curve with max 1: peak is the fitted asymptotic rate, half its half-rate point);
// collectives from time = latency + bus bytes / bus bandwidth.
#pragma once

#include <string>
#include <vector>

#include "cost_models/profile.h"
#include "taskgraph/task_graph.h"

namespace cs::validate {

// The suites' task graphs ("compute" or "collectives"); each task's name says what it measures.
ir::TaskGraph calibration_graph(const std::string& suite);

struct TaskDurations {
  const ir::TaskGraph* graph = nullptr;
  std::vector<double> seconds;  // by task
};
cost::Profile fit_profile(const TaskDurations& compute, const TaskDurations* collectives, const std::string& measured_on);

}  // namespace cs::validate
