// A user's nccl-tests output log (all_reduce_perf, all_gather_perf, ...) read whole, compared with
// our prediction of the same collective per size (`validate --nccl-tests`), and fitted into a
// profile's collective line, latency + bus bytes / bus bandwidth (`calibrate --nccl-tests`).
//
// The log is nccl-tests' standard text output: '#' header lines (nThread/nGpus, one
// "#  Rank  N Group  G Pid  P on HOST device D [BUS] NAME" line per GPU, the column titles), one
// data row per size (size, count, type, redop, root, then time / algbw / busbw / #wrong out of
// place and in place), "# Out of bounds values" and "# Avg bus bandwidth". Other lines (the
// command line, NCCL INFO lines, mpirun's "[1,0]<stdout>:" tags) are allowed; the collective is
// taken from the binary's name wherever the log prints it (all_reduce_perf, ...).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/units.h"
#include "cost_models/profile.h"
#include "taskgraph/task_graph.h"
#include "topology/cluster_spec.h"

namespace cs::validate {

// One size of the log (times in microseconds, bandwidths in GB/s as nccl-tests prints them).
struct NcclTestsLogRow {
  int line = 0;
  int64_t bytes = 0;  // the size column: the whole buffer (per-rank count x ranks for gathers)
  int64_t count = 0;  // elements, per rank for all_gather / reduce_scatter / alltoall
  std::string type, redop;
  int64_t root = -1;
  double out_of_place_us = 0, out_of_place_algbw = 0, out_of_place_busbw = 0;
  double in_place_us = 0, in_place_algbw = 0, in_place_busbw = 0;
  int64_t wrong = 0;  // #wrong of both placements summed; 0 also when printed N/A (not checked)
  // The better of the two times (a one-off stall in either is not the collective's cost).
  double best_us() const { return out_of_place_us < in_place_us ? out_of_place_us : in_place_us; }
};

struct NcclTestsLog {
  std::string file;
  std::optional<ir::CollectiveType> collective;  // from the binary's name; nullopt: not printed
  std::string collective_from;                   // e.g. "line 3: all_reduce_perf"
  int ranks = 0;                                 // "#  Rank" lines
  std::map<std::string, int> gpus_per_host;      // host -> its Rank lines
  std::string device;                            // the GPU name of the first Rank line
  std::optional<double> avg_bus_bandwidth;       // GB/s, the closing line
  std::vector<NcclTestsLogRow> rows;
  int nodes() const { return static_cast<int>(gpus_per_host.size()); }
};

// nccl-tests binaries and the collective each times (those clustersim models).
std::optional<ir::CollectiveType> collective_of_binary(const std::string& binary);

// Reads a log; throws UserError naming the file, line and what is valid for anything it cannot
// read (a data row with a bad column, a number out of range, two collectives in one log).
NcclTestsLog read_nccl_tests_log(const std::string& path);
NcclTestsLog parse_nccl_tests_log(std::istream& in, const std::string& name);

// Checks the log against the collective (given or inferred) and its group: every row's size must
// be count x type size (x ranks for the per-rank collectives), as nccl-tests prints it. Sets
// log.collective; throws UserError when it is unknown and `given` is empty.
void settle_collective(NcclTestsLog& log, std::optional<ir::CollectiveType> given);

// Measured (the better time) against predicted, per size.
struct NcclTestsComparison {
  struct Row {
    int line = 0;
    int64_t bytes = 0;
    double measured_us = 0, predicted_us = 0,
           error_percent = 0;                        // error = predicted / measured - 1
    double measured_busbw = 0, predicted_busbw = 0;  // GB/s
  };
  std::vector<Row> rows;
  double mape_percent = 0;
  double worst_percent = 0;  // signed, the largest in magnitude
  int64_t worst_bytes = 0;
};
NcclTestsComparison compare_nccl_tests(const NcclTestsLog& log,
                                       const std::function<double(int64_t bytes)>& predicted_us);

// The cluster a log ran on: `preset` with as many nodes as the log has hosts; each host's GPUs
// are its node's first ones. Throws UserError when a host has more GPUs than a node of the preset.
struct NcclTestsGroup {
  topo::ClusterSpec cluster;
  std::vector<ir::RankId> ranks;
};
NcclTestsGroup group_of(const NcclTestsLog& log, topo::ClusterSpec preset);

// The cluster preset whose GPU a Rank line names ("NVIDIA H100 80GB HBM3" -> dgx_h100); "" when
// the name is not recognised.
std::string cluster_for_device(const std::string& device_name);

// Our prediction of every row of `log` over `group`: the NCCL model over the topology, or, when
// `profile` has measured collectives, its latency + bus bytes / bus bandwidth line.
std::vector<double> predict_nccl_tests(const NcclTestsLog& log, const NcclTestsGroup& group,
                                       const cost::Profile* profile,
                                       cost::NetworkFidelity fidelity);

// The profile's collective line fitted on every row of the logs: time = latency + bus bytes /
// bus bandwidth with bus bytes = size x nccl-tests' bus factor of the log's collective and group
// (2 (n-1)/n for all_reduce, (n-1)/n for all_gather / reduce_scatter / alltoall, 1 for
// broadcast). Least squares of the relative error, so that 8 B and 8 GiB rows count alike (plain
// least squares would let the largest sizes set the latency); a negative latency is clamped to 0
// and the bandwidth refitted. Throws UserError when fewer than two sizes or times that do not
// grow with size.
struct CollectiveFit {
  cost::MeasuredCollectives line;
  size_t rows = 0;
  double mape_percent = 0;  // of the fitted line over the rows it was fitted on
  double worst_percent = 0;
};
CollectiveFit fit_collective_line(const std::vector<NcclTestsLog>& logs);

// The writer beside the reader: what `bench-collective --format nccl-tests` prints, nccl-tests'
// exact layout (so that its parsers, and read_nccl_tests_log, read ours): per size, out-of-place
// and in-place time / algbw / busbw / #wrong (N/A: nothing checked), counts per rank for
// all_gather / reduce_scatter / all_to_all, and the closing average line.
struct NcclTestsSweep {
  ir::CollectiveType op = ir::CollectiveType::all_reduce;
  Bytes min, max;
  double factor = 2;
  std::string type = "float";  // nccl-tests' -d
  int type_size = 4;
  std::string redop = "sum";
  std::string cluster, device;  // on the Rank lines
  int gpus_per_node = 1;
};
// `time_us`: the collective's time for a size over `ranks`.
void write_nccl_tests_log(std::ostream& out, const NcclTestsSweep& sweep,
                          const std::vector<ir::RankId>& ranks,
                          const std::function<double(Bytes)>& time_us);

}  // namespace cs::validate
