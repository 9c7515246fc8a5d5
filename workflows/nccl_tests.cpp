// `validate --nccl-tests LOG...` and `calibrate --nccl-tests LOG... --out P.yaml`: a user's
// nccl-tests output against our prediction per size, and the profile's collective line fitted
// from it (validate/nccl_tests_log.h does the reading, comparing and fitting).
#include "workflows/nccl_tests.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>

#include "common/error.h"
#include "common/output_file.h"
#include "driver/simulation.h"
#include "reports/schema_version.h"
#include "scenarios/profile_io.h"
#include "topology/cluster_spec.h"
#include "validate/nccl_tests_log.h"

namespace cs::workflows {
namespace {

// Every log read and settled: its collective (--collective or the binary's name), its group (its
// Rank lines, or --gpus/--nodes where it has none) checked against its rows.
std::vector<validate::NcclTestsLog> read_logs(const NcclTestsOptions& o) {
  std::vector<validate::NcclTestsLog> logs;
  for (const std::string& f : o.logs) {
    validate::NcclTestsLog log = validate::read_nccl_tests_log(f);
    if (o.gpus > 0) {
      if (log.ranks > 0 && log.ranks != o.gpus) {
        throw UserError(f + ": the log has " + std::to_string(log.ranks) + " Rank lines; --gpus " +
                        std::to_string(o.gpus) + " disagrees");
      }
      if (log.ranks == 0) {
        const int nodes = std::max(1, o.nodes);
        if (o.gpus % nodes != 0)
          throw UserError("--gpus " + std::to_string(o.gpus) + " is not a multiple of --nodes " +
                          std::to_string(nodes));
        log.ranks = o.gpus;
        for (int n = 0; n < nodes; ++n)
          log.gpus_per_host["node" + std::to_string(n)] = o.gpus / nodes;
      }
    }
    validate::settle_collective(log, o.collective);
    logs.push_back(std::move(log));
  }
  return logs;
}

// The cluster preset of a log: --cluster, else the one its GPU's name points to.
topo::ClusterSpec preset_of(const NcclTestsOptions& o, const validate::NcclTestsLog& log) {
  if (!o.cluster.empty()) return topo::find_cluster_preset(o.cluster);
  const std::string name = validate::cluster_for_device(log.device);
  if (name.empty()) {
    throw UserError(log.file + ": cannot tell the cluster from " +
                    (log.device.empty() ? std::string("a log without device lines")
                                        : "GPU '" + log.device + "'") +
                    "; pass --cluster PRESET (clustersim list shows them)");
  }
  return topo::find_cluster_preset(name);
}

std::string ranks_text(const std::vector<ir::RankId>& ranks) {
  // "0-7" or "0-3,8-11": runs of consecutive ranks.
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(ranks[i]) +
         (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return s;
}

std::string line_text(const cost::MeasuredCollectives& c) {
  char buf[120];
  std::snprintf(buf, sizeof buf, "%.2f us + bus bytes / %.2f GB/s", c.latency.us(),
                c.bus_bandwidth.value * 1e-9);
  return buf;
}

std::string what_log(const validate::NcclTestsLog& log) {
  std::string s = std::string(ir::to_string(*log.collective)) + " (" +
                  (log.collective_from.empty() ? "--collective" : log.collective_from) + "), " +
                  std::to_string(log.ranks) + " GPUs on " + std::to_string(log.nodes()) + " host" +
                  (log.nodes() == 1 ? "" : "s");
  if (!log.device.empty()) s += " (" + log.device + ")";
  return s + ", " + std::to_string(log.rows.size()) + " size" + (log.rows.size() == 1 ? "" : "s");
}

void print_comparison(std::ostream& out, const validate::NcclTestsLog& log,
                      const validate::NcclTestsComparison& c) {
  char line[200];
  std::snprintf(line, sizeof line, "  %14s %14s %14s %8s %12s %12s\n", "size (B)", "measured (us)",
                "predicted (us)", "error", "busbw meas.", "busbw pred.");
  out << line;
  for (const auto& r : c.rows) {
    std::snprintf(line, sizeof line, "  %14lld %14.2f %14.2f %+7.1f%% %12.2f %12.2f\n",
                  static_cast<long long>(r.bytes), r.measured_us, r.predicted_us, r.error_percent,
                  r.measured_busbw, r.predicted_busbw);
    out << line;
  }
  std::snprintf(line, sizeof line, "MAPE %.2f%% over %zu sizes, worst %+.1f%% at %lld B",
                c.mape_percent, c.rows.size(), c.worst_percent,
                static_cast<long long>(c.worst_bytes));
  out << line;
  if (log.avg_bus_bandwidth) {
    std::snprintf(line, sizeof line, "; the log's average bus bandwidth %.2f GB/s",
                  *log.avg_bus_bandwidth);
    out << line;
  }
  out << "\n";
  int64_t wrong = 0;
  for (const auto& r : log.rows) wrong += r.wrong;
  if (wrong > 0)
    out << "note: the log reports " << wrong
        << " wrong values (#wrong): NCCL computed wrong results; the times may still be sound\n";
}

std::string today() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

}  // namespace

int validate_nccl_tests(const NcclTestsOptions& o, std::ostream& out) {
  const auto logs = read_logs(o);
  std::optional<cost::Profile> profile;
  if (!o.profile.empty()) profile = scenario::load_profile(o.profile);
  int status = 0;
  double sum = 0;
  size_t rows = 0;
  char line[240];
  nlohmann::json json_logs = nlohmann::json::array();
  for (size_t i = 0; i < logs.size(); ++i) {
    const auto& log = logs[i];
    const validate::NcclTestsGroup group = validate::group_of(log, preset_of(o, log));
    const std::vector<double> predicted =
        validate::predict_nccl_tests(log, group, profile ? &*profile : nullptr, o.fidelity);
    const auto c = validate::compare_nccl_tests(
        log, [&, k = size_t{0}](int64_t) mutable { return predicted[k++]; });
    if (i > 0) out << "\n";
    out << "validate    nccl-tests log " << log.file << "\n";
    out << "            " << what_log(log) << "\n";
    out << "            predicted on " << group.cluster.name << " (" << group.cluster.nodes
        << " node" << (group.cluster.nodes == 1 ? "" : "s") << ", ranks " << ranks_text(group.ranks)
        << ") with "
        << (profile && profile->collectives
                ? "profile " + profile->name + "'s measured line, " +
                      line_text(*profile->collectives)
                : std::string("the NCCL 2.28 model over the topology (") +
                      std::string(cost::to_string(o.fidelity)) + ")")
        << "\n";
    out << "            measured: the better of the out-of-place and in-place times; error = "
           "predicted / measured - 1\n\n";
    print_comparison(out, log, c);
    for (const auto& r : c.rows) sum += std::abs(r.error_percent);
    rows += c.rows.size();
    const bool beyond = o.max_error >= 0 && c.mape_percent > o.max_error;
    if (beyond) {
      std::snprintf(line, sizeof line, "the MAPE of %s is beyond --max-error %.1f%%\n",
                    log.file.c_str(), o.max_error);
      out << line;
      status = 1;
    }
    nlohmann::json sizes = nlohmann::json::array();
    for (const auto& r : c.rows) {
      sizes.push_back({{"bytes", r.bytes},
                       {"measured_us", r.measured_us},
                       {"predicted_us", r.predicted_us},
                       {"error_percent", r.error_percent},
                       {"measured_busbw", r.measured_busbw},
                       {"predicted_busbw", r.predicted_busbw}});
    }
    json_logs.push_back(
        {{"file", log.file},
         {"collective",
          log.collective ? std::string(ir::to_string(*log.collective)) : std::string()},
         {"ranks", group.ranks.size()},
         {"cluster", group.cluster.name},
         {"nodes", group.cluster.nodes},
         {"predicted_with", profile && profile->collectives
                                ? "profile " + profile->name
                                : "nccl_2.28_model_" + std::string(cost::to_string(o.fidelity))},
         {"mape", c.mape_percent},
         {"worst", c.worst_percent},
         {"worst_bytes", c.worst_bytes},
         {"beyond_max_error", beyond},
         {"sizes", sizes}});
  }
  if (!o.json.empty()) {
    OutputFile file(o.json);
    std::ostream& f = file.stream();
    const nlohmann::json j = {
        {"schema_version", reports::kSchemaVersion},
        {"kind", "validate"},
        {"mode", "nccl_tests"},
        {"max_error", o.max_error >= 0 ? nlohmann::json(o.max_error) : nlohmann::json(nullptr)},
        {"mape",
         rows > 0 ? nlohmann::json(sum / static_cast<double>(rows)) : nlohmann::json(nullptr)},
        {"logs", json_logs}};
    f << j.dump(2) << "\n";
    file.commit();
  }
  if (logs.size() > 1) {
    std::snprintf(line, sizeof line, "\nall %zu logs: MAPE %.2f%% over %zu sizes\n", logs.size(),
                  sum / static_cast<double>(rows), rows);
    out << line;
  }
  return status;
}

int calibrate_nccl_tests(const NcclTestsOptions& o, std::ostream& out) {
  if (o.out.empty()) throw UserError("calibrate --nccl-tests needs --out profiles/NAME.yaml");
  const auto logs = read_logs(o);
  for (const auto& log : logs) {
    if (log.ranks < 2)
      throw UserError(
          log.file +
          ": the log has no '#  Rank' lines (pass --gpus N, and --nodes M across nodes)");
  }
  // The fitted line goes into a copy of a whole profile: --profile, else the GPU's shipped one.
  const std::string gpu = preset_of(o, logs.front()).gpu;
  std::string base = o.profile;
  if (base.empty()) base = driver::default_profile_path(gpu);
  if (base.empty())
    throw UserError("no shipped profile for " + gpu +
                    ": pass --profile BASE.yaml (the fitted collectives go into a copy of it)");
  cost::Profile p = scenario::load_profile(base);
  const validate::CollectiveFit fit = validate::fit_collective_line(logs);
  std::string files;
  for (const auto& log : logs) files += (files.empty() ? "" : ", ") + log.file;
  out << "calibrate   collectives from nccl-tests logs, into a copy of profile " << p.name << " ("
      << base << ")\n";
  for (const auto& log : logs) out << "  " << log.file << ": " << what_log(log) << "\n";
  char line[240];
  std::snprintf(line, sizeof line,
                "fitted      %s (least squares of the relative error over %zu sizes)\n",
                line_text(fit.line).c_str(), fit.rows);
  out << line;
  std::snprintf(line, sizeof line,
                "            the line against the logs: MAPE %.2f%%, worst %+.1f%%\n",
                fit.mape_percent, fit.worst_percent);
  out << line;
  const size_t slash = o.out.find_last_of('/');
  std::string name = o.out.substr(slash == std::string::npos ? 0 : slash + 1);
  if (const size_t dot = name.rfind('.'); dot != std::string::npos && dot > 0) name.resize(dot);
  p.name = name;
  p.collectives = fit.line;
  p.measured_on +=
      (p.measured_on.empty() ? "" : "; ") + std::string("collectives: nccl-tests logs ") + files;
  p.date = today();
  p.sources.push_back("collectives: " + line_text(fit.line) +
                      ", fitted by calibrate --nccl-tests on " + files);
  // The base's suite error was of its own collective model, not of this line.
  p.validation.reset();
  scenario::save_profile(o.out, p);
  out << "wrote " << o.out << " (simulate --profile " << o.out
      << " prices every collective with this line, ring/Simple only)\n";
  return 0;
}

}  // namespace cs::workflows
