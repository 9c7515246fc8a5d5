// `clustersim calibrate --backend cpu`: microbenchmark suites run through the executor, fitted
// into a Profile. Every suite runs on every rank at once (2 by default: one per core of the
// machine CI has), so each rank is measured with its peers busy, as it is in training.
//   compute: GEMMs over a grid of m, n, k in 128..1024 (the shapes transformers produce: tokens x
//     hidden multiples, both ways round for the weight gradients; larger shapes take the edge's
//     efficiency, which has saturated by then on one core), causal attention over sequence
//     lengths 64..1024, streaming kernels of 64 KiB-64 MiB, AdamW over 256 Ki-4 Mi parameters,
//     and near-empty kernels (8 bytes) for the per-task overhead;
//   collectives: all-reduces of 64 KiB to 16 MiB on an otherwise idle machine;
//   interference: cycles of GEMMs on the compute stream with one 1 MiB all-reduce beside a GEMM
//     and one on an idle rank.
// Times are the median of the repeats on each rank, then the slowest rank's (see typical_times).
// Fits: gap = the near-empty kernel; tables of efficiency = model work / ((time - gap) x peak)
// with peak = the best GEMM rate and memory bandwidth = the best streaming rate; collectives
// time = latency + bus bytes / bus bandwidth (least squares); interference = the median slow-down
// of a GEMM while an all-reduce runs, and of an all-reduce while a GEMM runs, each against its
// undisturbed twin of the same cycle.
// Running it: `clustersim calibrate --backend cpu` (a few seconds); `validate --loop` runs
// calibrate, simulate, execute and compare several times over.
#pragma once

#include <string>
#include <vector>

#include "cost_models/profile.h"
#include "taskgraph/task_graph.h"

namespace cs::validate {

// The suites' task graphs ("compute", "collectives" or "interference") over `ranks` ranks; each
// task's name says what it measures.
ir::TaskGraph calibration_graph(const std::string& suite, int ranks = 2);

// What the executor measured for a suite: every task's start and end (seconds, one step).
struct TaskDurations {
  const ir::TaskGraph* graph = nullptr;
  std::vector<double> start, end;  // by task
};

struct Measurements {
  TaskDurations compute;
  const TaskDurations* collectives = nullptr;   // optional: a 1-rank run has none
  const TaskDurations* interference = nullptr;  // optional
};
cost::Profile fit_profile(const Measurements& m, const std::string& measured_on);

}  // namespace cs::validate
