// Predicting published measurements: each row of a table is a training configuration and its
// measured iteration time. Every row is simulated once with the default cost models; the step's
// critical path splits its time into GEMM, attention, memory-bound kernel, communication and
// idle parts plus a kernel count. A few global, physically meaningful factors are then fitted
// (least squares on relative error), with the GEMM efficiency curve's half-rate point chosen
// from a few candidates (fit_with_gemm_curve), so that
//
//   time = a_gemm * GEMM + a_attn * attention + a_mem * memory-bound + t_kernel * kernels
//        + a_comm * communication + t_call * collectives and transfers
//        + t_hop * collectives x (TP - 1) + idle + t_step
//
// a_* scale the default models' times (1 / efficiency relative to the defaults); t_kernel is a
// per-kernel overhead beyond the model's 3 us launch gap (host launch, framework dispatch),
// t_call the same per collective or transfer, t_hop a cost per collective and per extra
// tensor-parallel peer (ring and tree steps, and the synchronisation of every peer, grow with
// the group), and t_step a fixed per-iteration cost. Never one parameter per row.
//
// Table format: vTrain's ground truth (`validate/data/vtrain_a100_single_node.csv`): GPUs, global
// batch, micro batch, hidden, heads, layers, sequence, TP, DP, PP, iteration time (ms), for
// Megatron-DeepSpeed GPT on one DGX A100 (1F1B, full activation recompute, gradient all-reduce
// after the backward pass, vocab 50257, fp16).
#pragma once

#include <array>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "cost_models/compute_model.h"

namespace cs::validate {

struct TableRow {
  int line = 0;  // in the file
  int gpus = 0, tp = 1, dp = 1, pp = 1;
  int64_t global_batch = 0, micro_batch = 0, hidden = 0, heads = 0, layers = 0, seq = 0;
  double measured_s = 0;
};

// Throws UserError naming the file, line and column on a malformed row.
std::vector<TableRow> read_vtrain_table(const std::string& path);

// The simulated parts of one row's iteration (seconds; kernels as a count).
struct RowParts {
  double gemm = 0, attention = 0, memory = 0, kernels = 0, communication = 0, comm_calls = 0,
         idle = 0;
  double tp_hops = 0;      // collectives on the path x (TP - 1): the extra ranks each must sync
  double simulated_s = 0;  // the default model's prediction (sum of the parts)
  std::string error;       // why the row could not be simulated
};
// Simulates every row (in parallel on `threads`, 0 = every core) with the default cost models,
// or with another GEMM efficiency curve (its half-rate point, ComputeEfficiency::gemm_half_flops).
std::vector<RowParts> simulate_rows(
    const std::vector<TableRow>& rows, unsigned threads = 0,
    double gemm_half_flops = cost::ComputeEfficiency{}.gemm_half_flops);

inline constexpr int kFactorCount = 8;
struct Factors {
  // a_gemm, a_attn, a_mem, t_kernel (s), a_comm, t_call (s), t_step (s), t_hop (s)
  std::array<double, kFactorCount> v{1, 1, 1, 0, 1, 0, 0, 0};
  double predict(const RowParts& p) const;
  static const char* name(int i);
  static const char* unit(int i);
};
// Least squares on relative error over the rows whose index is in `use`.
Factors fit(const std::vector<TableRow>& rows, const std::vector<RowParts>& parts,
            const std::vector<size_t>& use);

// The GEMM efficiency curve is the ninth parameter: it is not linear in the parts, so each
// candidate half-rate point (a factor of 2 apart) is simulated and the one whose fitted factors
// give the lowest error on the `use` rows (the fitting half; never the held-out one) wins.
inline constexpr double kGemmHalfCandidates[] = {0.5e9, 1e9, 2e9, 4e9, 8e9, 16e9};
struct TableFit {
  double gemm_half_flops = 0;  // FLOPs at which a GEMM reaches half its best efficiency
  Factors factors;
  std::vector<RowParts> parts;  // every row, simulated with that curve
};
TableFit fit_with_gemm_curve(const std::vector<TableRow>& rows, const std::vector<size_t>& use,
                             unsigned threads = 0);

struct ErrorSummary {
  size_t rows = 0;
  double mape = 0, median = 0, worst = 0;
};
ErrorSummary errors(const std::vector<TableRow>& rows, const std::vector<RowParts>& parts,
                    const Factors& f, const std::vector<size_t>& use);
// "data", "tensor", "pipeline", "tensor+data", ... by which dimensions exceed 1.
std::string parallelism_type(const TableRow& r);
// errors() over the `use` rows of each parallelism type, by type name (types without a row absent).
std::map<std::string, ErrorSummary> errors_by_parallelism(const std::vector<TableRow>& rows,
                                                          const std::vector<RowParts>& parts,
                                                          const Factors& f,
                                                          const std::vector<size_t>& use);

// A random half of the simulatable rows (fixed seed), and the other half.
void split_half(const std::vector<RowParts>& parts, unsigned seed, std::vector<size_t>& train,
                std::vector<size_t>& test);

void write_rows_csv(std::ostream& out, const std::vector<TableRow>& rows,
                    const std::vector<RowParts>& parts, const Factors& f,
                    const std::vector<size_t>& test);

}  // namespace cs::validate
