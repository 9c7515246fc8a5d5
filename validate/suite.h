// The validation suite (`clustersim validate --suite validate/suites`): each
// `validate/suites/<source>.yaml` is one published table taken whole, every row predicted with the
// default cost models and the GPU's shipped profile, and the error reported per source: rows run,
// MAPE, median, worst, signed bias (mean of predicted / measured - 1), the median signed step-time
// error (- is too fast, whatever the figure), and each row that cannot be expressed with the
// reason. A source fails when its MAPE or its worst row is beyond its bound.
//
// A suite file (keys; the files in validate/suites/ are whole examples):
//   source, citation, licence, measured (prose: what was measured, on what)   - required but
//   role: calibration | validation   (required: calibration when any of its rows was used to fit a
//     global parameter, so its error is in-sample; validation otherwise, the out-of-sample
//     figure; the split and its reasons: validate/suites/SPLIT.md)
//   licence data: the table's file, relative to the repository root (validate/data/...) kind:
//   training | collective   (collective when `predicted` is a bench-collective command) bounds:
//   {mape_percent: N, worst_percent: W}   (every_size_percent = worst_percent)
//   memory_mape_percent: M inside bounds: the peak-memory MAPE's bound (with memory_column)
// training rows (a row is one measured run):
//   format: csv (with `columns: [...]`) | yaml (with `rows: KEY`; a dotted KEY walks nested
//     mappings: `sets.megatron_bridge_perf_summary_26_08.rows`)
//   figure: step_time (with unit: ms | s) | tokens_per_s | tokens_per_s_per_gpu | speedup;
//   measured_column: the column holding it
//   scenario: a scenario (the scenario file's keys) in which `${column}` stands for the row's value
//   select: {column: C, values: {VALUE: scenario keys | "reason"}} (or a list): keys chosen by a
//     column's value (the model of a row, its data-parallel flavour), merged into the scenario;
//     C may be a `${...}` text of several columns ("${model} ${system}": one row's own settings)
//   features_column (default `features`, names separated by spaces or '+') and
//   features_every_row: [names]; features: {name: scenario keys | "reason it cannot be expressed"}
//     a feature with keys is checked alone on the row's scenario, so a refusal names every
//     feature the simulator lacks
//   oom_column: a column that is true where the run did not fit (the row checks the verdict)
//   memory_column: the measured peak memory in MiB (PyTorch's torch.cuda.max_memory_allocated):
//     each row that ran with a value there also compares the simulator's peak memory (the rank
//     that peaks; MiB = 2^20 B), reported beside the figure as rows, MAPE, worst and signed bias;
//     bounds.memory_mape_percent fails the source when that MAPE is beyond it. An empty cell (an
//     out-of-memory row) compares no memory.
//   label: `${...}` text naming a row in the output
// A row is not expressible when a feature it needs has a reason instead of keys, or when its
// scenario is refused (the scenario reader's or the simulator's message is the reason).
// collective rows (nccl-tests output, format detected): `predicted:` the bench-collective command
// (--cluster, --nodes, --gpus, --op, -b/-e, --fidelity, --algo, --proto); each size between -b and
// -e is predicted and compared with the better of its out-of-place and in-place times (the better
// leaves out one-off stalls); sizes outside that range are listed as not run, with the range.
//
// Speed: each training row runs once (in parallel over the rows); a row with more micro-batches
// than driver::short_run_counts gives is extrapolated linearly from two short runs, as the planner
// does, except for speedup, out-of-memory and peak-memory rows, which run whole.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cs::validate {

struct SuiteOptions {
  bool use_profiles =
      true;              // profiles/<gpu>.yaml as `simulate` uses them (false: datasheet figures)
  unsigned threads = 0;  // 0: every core
  // A refit's values in place of the shipped fits (validate/refit.h): the host time per kernel of
  // every stack built on eager PyTorch (rows that set training.host_per_kernel keep theirs), and a
  // profile's tensor clock ratio, by the profile's name.
  std::optional<double> eager_host_us;
  std::optional<double> compiled_host_us;  // torch_compile's, likewise
  std::map<std::string, double> tensor_clock_ratio;
};

struct SuiteRow {
  int index = 0;  // 1-based, in the table
  int line = 0;   // in the data file
  std::string label;
  bool run = false;
  std::string not_expressible;         // why it was not run (empty when it was): the reasons joined
  std::vector<std::string> reasons;    // each reason, as "feature: why" where a feature is named
  double measured = 0, predicted = 0;  // in the source's unit
  double error_percent = 0;            // signed: 100 (predicted / measured - 1)
  // Step-time error (signed %) where the figure is a step time or a throughput; empty otherwise.
  std::optional<double> step_error_percent;
  std::string profile;    // the profile the row was predicted with ("" for datasheet figures)
  std::string stack;      // the software stack it was predicted with
  std::string precision;  // the training precision it was predicted with ("fp8", "mixed_bf16")
  // Out-of-memory rows: whether the simulator agrees the run did not fit.
  bool verdict_row = false, verdict_ok = false;
  // Peak memory (suites with a memory_column), MiB: measured (empty where the cell is empty),
  // predicted and the signed error (where the row ran).
  std::optional<double> memory_measured_mib, memory_predicted_mib, memory_error_percent;
};

// What a source's rows were used for (validate/suites/SPLIT.md).
enum class Role : uint8_t { calibration, validation };
const char* role_name(Role r);  // "calibration", "validation"

struct SourceResult {
  std::string file, source, citation, kind, figure, unit;
  Role role = Role::validation;
  size_t rows_total = 0, rows_run = 0, verdicts = 0, verdicts_ok = 0;
  double mape = 0, median = 0, worst = 0, bias = 0;  // percent, over the rows run
  // The median of the rows' signed step-time errors (percent; -: predicted faster than measured):
  // issue 31's "median signed error", in one sense for every figure. Empty where no row has a
  // step time (speedups) or none ran.
  std::optional<double> median_step_error;
  std::optional<double> bound_mape, bound_worst;
  // Peak memory against memory_column (empty: the suite has none): rows compared, and MAPE,
  // worst, signed bias in percent over them; the bound on its MAPE.
  std::string memory_column;
  size_t memory_rows = 0;
  double memory_mape = 0, memory_worst = 0, memory_bias = 0;
  std::optional<double> bound_memory_mape;
  bool pass = true;
  std::vector<SuiteRow> rows;
  std::vector<std::string> profiles;  // the profiles the rows used
};

// The suite files under `path` (a folder: every *.yaml in name order; or one file).
std::vector<std::string> suite_files(const std::string& path);
// Reads one suite file and predicts every row. Throws UserError (file, line, key) on a malformed
// suite; a row that cannot be expressed is not an error.
SourceResult run_suite_file(const std::string& path, const SuiteOptions& options = {});

// One shipped profile's out-of-sample step-time error: over every training row of a validation
// source (validate/suites/SPLIT.md) predicted with it; with `stack` set, over those of its rows
// predicted with that software stack. Calibration sources are left out: their error is a fit.
struct ProfileError {
  std::string profile;
  std::string stack;
  std::vector<std::string> sources;
  std::vector<std::string> precisions;  // the training precisions those rows ran, sorted
  size_t runs = 0;
  double mape = 0, worst = 0;
};
std::vector<ProfileError> profile_errors(const std::vector<SourceResult>& results);
std::vector<ProfileError> profile_stack_errors(const std::vector<SourceResult>& results);

// The sources of one role together: how many, how many ran rows and how many are within their
// bounds, the rows run, and the mean of their MAPEs (each source that ran rows counts once, so a
// 1,440-row table weighs as much as a 2-row one). Over the validation sources it is the
// out-of-sample figure; over the calibration sources it is in-sample (a fit).
struct RoleSummary {
  size_t sources = 0, sources_run = 0, within_bounds = 0, rows_run = 0;
  double mean_mape = 0;
};
RoleSummary role_summary(const std::vector<SourceResult>& results, Role role);

// Per source: what was measured, rows run, the error figures, the bound and the verdict, and every
// row not expressible with its reason; `rows` adds each row's prediction.
void print_source(std::ostream& out, const SourceResult& r, bool rows);
// The summary: the validation sources' table and the calibration sources', each with its
// RoleSummary line, then peak memory, each profile's error and the fitted parameters.
void print_summary(std::ostream& out, const std::vector<SourceResult>& results);
// The same summary as markdown, for the README's accuracy section: the validation sources'
// table, then the calibration sources' (labelled in-sample), each after a one-line caption and a
// blank line; then the peak-memory and profile tables.
void print_markdown(std::ostream& out, const std::vector<SourceResult>& results);

}  // namespace cs::validate
