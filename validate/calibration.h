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
// The cuda plan (`calibrate --backend cuda`, one GPU, about two minutes on an H100): the same
// suites at a GPU's scale: GEMMs over a grid of m, n, k in 512..32768 (tokens up to GPT-2 Large
// at batch 32, hidden sizes and their multiples) in bf16, fp16, tf32 and, where the GPU has it,
// fp8; attention at the shipped GPT-2 scenarios' shapes (sequence 1024, head size 64, 12 to
// 640 batch x heads); streaming kernels of 64 KiB-4 GiB; AdamW over 1-128 Mi parameters;
// near-empty kernels (the launch overhead); and cycles of 8192^3 bf16 GEMMs with a 256 MiB
// all-reduce beside one of them (on one GPU NCCL's one-rank all-reduce is a device copy: the
// interference measured is that of a copy, not of a multi-GPU collective). Peaks per dtype are
// the best rate of that dtype's grid; the efficiency table is the first dtype's (bf16, what the
// shipped GPU scenarios compute in), relative to its peak.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "cost_models/device_spec.h"
#include "cost_models/profile.h"
#include "taskgraph/task_graph.h"

namespace cs::validate {

// What the suites measure on one backend: shapes, sizes, dtypes and repeats.
struct CalibrationPlan {
  std::string backend;  // "cpu" or "cuda"
  int repeats = 7;
  std::vector<int64_t> gemm_axis;        // the GEMM grid: every m, n, k combination
  std::vector<ir::DType> gemm_dtypes;    // the first gives the efficiency table
  std::vector<int64_t> attention_items;  // batch x heads per attention benchmark
  std::vector<int64_t> attention_seq;    // sequence lengths (every items x seq pair)
  int64_t attention_head_dim = 64;
  std::vector<int64_t> stream_bytes, optimizer_params, all_reduce_bytes;
  int64_t load_m = 0, load_n = 0, load_k = 0, load_all_reduce_bytes = 0;
  int load_cycles = 16;
  bool optimizer_state =
      false;  // allocate AdamW's moments as graph memory (the cuda backend keeps them there)
  // GPU plans only (empty on the cpu): attention in more dtypes than the first GEMM dtype; norm
  // and softmax kernels by bytes; GEMMs whose k breaks 16-byte alignment beside their aligned
  // twins (k - 1 against k), for the misaligned-GEMM rate.
  std::vector<ir::DType> attention_dtypes;
  std::vector<int64_t> norm_bytes;
  struct Shape {
    int64_t m, n, k;
  };
  std::vector<Shape> misaligned_probes;
  // The executor's attention, norm and softmax are its own kernels, not a framework's: fit them
  // into the profile's executor_kernels (true on the GPU, where a framework's fused attention
  // differs by an order of magnitude), or as the profile's own curves (the cpu backend, whose
  // profile prices nothing but the executor).
  bool kernels_are_executors_own = false;
  // After each heavy benchmark (over 50 us), an idle delay as long as the benchmark's expected
  // time, so that the GPU runs at about half duty: back to back, large GEMMs hold an H100 at its
  // 700 W cap and its SM clock near 1.3 GHz, where a training step's mix of kernels runs at
  // 1.98 GHz (the campaign's gpu-clocks.txt, 2026-11-22).
  bool cool_down = false;
};
CalibrationPlan cpu_plan();
CalibrationPlan cuda_plan(bool fp8);

// The suites' task graphs ("compute", "collectives" or "interference") over `ranks` ranks; each
// task's name says what it measures. The plan defaults to the cpu one.
ir::TaskGraph calibration_graph(const std::string& suite, int ranks = 2);
ir::TaskGraph calibration_graph(const std::string& suite, int ranks, const CalibrationPlan& plan);

// The device preset a GPU's name (as CUDA reports it) is calibrated as: "NVIDIA H100 80GB HBM3"
// -> h100_sxm, "NVIDIA H100 PCIe" -> h100_pcie, "NVIDIA H200" -> h200, "NVIDIA A100-SXM4-80GB" ->
// a100_sxm_80gb, "NVIDIA B200" -> b200. Throws UserError naming the GPUs it knows.
std::string device_preset_for_gpu(const std::string& gpu_name);

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

// `calibrate --raw FILE.csv`: every benchmark's start and end, one row per task other than memory
// tasks ("suite,benchmark,rank,start_s,end_s"), the suites in the order given.
struct NamedDurations {
  const char* suite;
  const TaskDurations* durations;
};
void write_measurements_csv(std::ostream& out, const std::vector<NamedDurations>& suites);
// With a plan: peaks per dtype of the plan's GEMM grids. `base` (a device preset) supplies what
// the suites do not measure (fp32 peak, memory capacity) and names the profile; without it the
// profile is named after the backend and every dtype's peak is the first dtype's.
cost::Profile fit_profile(const Measurements& m, const std::string& measured_on,
                          const CalibrationPlan& plan, const cost::DeviceSpec* base = nullptr);

// The executor's attention is not a framework's fused kernel: a GPU calibration's own attention
// goes to executor_kernels, and a framework's attention keeps the published profile's curves
// (scalar, by FLOPs, per dtype, by head dimension, FlashAttention-2's), with the published
// sources that name them (those starting "Attention" or "Peaks"), appended to `measured`'s.
void keep_published_attention(cost::Profile& measured, const cost::Profile& published);

}  // namespace cs::validate
