#include "validate/refit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <utility>

#include "common/error.h"
#include "cost_models/device_spec.h"
#include "cost_models/nccl_tables.h"
#include "validate/fitted_parameters.h"

namespace cs::validate {
namespace {

// The shipped value of a fitted parameter, by its name in fitted_parameters().
double shipped(const std::string& name) {
  for (const FittedParameter& p : fitted_parameters()) {
    if (p.name == name) return p.value;
  }
  throw std::logic_error("no fitted parameter '" + name + "'");
}

RefitParameter parameter(const std::string& name, const std::string& unit, double prior,
                         std::string prior_why, Grid grid) {
  return {name, unit, shipped(name), prior, std::move(prior_why), grid};
}

FitGroup nccl_group() {
  // NCCL 2.28's own tuning model (cost_models/nccl_tables.h) is what the simulator would price
  // with had nothing been measured: its ring LL base latency where the fit puts the launch
  // overhead, its Hopper NVLS efficiency, and no LL channel cap or NVLS pipeline term (NCCL's
  // model has neither).
  const double nccl_base = cost::nccl_base_latency_us(cost::Algorithm::ring, cost::Protocol::ll);
  const double nccl_nvls = cost::kNccl228.nvls_efficiency[static_cast<int>(cost::GpuArch::hopper)];
  FitGroup g;
  g.name = "nccl-tests collective constants";
  g.parameters = {
      parameter("collective launch overhead", "us", nccl_base, "NCCL 2.28's ring LL base latency",
                {0, 20, 0.1}),
      parameter("LL channel rate", "GB/s", 1000, "no per-channel LL cap, as in NCCL's model",
                {1, 40, 0.5}),
      parameter("NVLS pipeline latency", "us", 0, "none beyond NCCL's 25 us NVLink step",
                {0, 80, 1}),
      parameter("NVLS bandwidth share of NVLink", "of link bandwidth", nccl_nvls,
                "NCCL 2.28's Hopper nvlsEfficiency", {0.3, 1.0, 0.005}),
  };
  g.fitted_on = {"nccl_tests_8xh100_awsome"};
  g.objective = Objective::worst_then_mape;
  g.apply = [](const std::vector<double>& v, cost::CollectiveFits& c, SuiteOptions&) {
    c.launch_overhead_us = v[0];
    c.ll_channel_gbps = v[1];
    c.nvls_pipeline_us = v[2];
    c.nvls_efficiency = v[3];
  };
  return g;
}

FitGroup vtrain_group() {
  FitGroup g;
  g.name = "vTrain all-reduce constants";
  g.parameters = {
      parameter("buffer pass efficiency", "of HBM bandwidth", 1.0,
                "buffer passes at the HBM datasheet rate", {0.2, 1.0, 0.01}),
      parameter("NVLink efficiency", "of link bandwidth", 1.0, "the NVLink datasheet rate",
                {0.5, 1.0, 0.01}),
  };
  // The curves were measured by the same project on the same A100 system whose iterations those
  // tables time (SPLIT.md), so leaving a table out leaves the curves out too.
  g.fitted_on = {"vtrain_a100_single_node", "vtrain_a100_multi_node"};
  g.fitted_outside_suites =
      "fitted on vTrain's A100 all-reduce curves (validate/data/vtrain_a100_allreduce, 7,168 "
      "rows), which are not a suite; the VTrainAllReduce tests in tests/network_test.cpp check "
      "that fit";
  g.apply = [](const std::vector<double>& v, cost::CollectiveFits& c, SuiteOptions&) {
    c.pass_efficiency = v[0];
    c.nvlink_efficiency = v[1];
  };
  return g;
}

FitGroup eager_host_group() {
  FitGroup g;
  g.name = "eager PyTorch host time";
  g.parameters = {parameter("eager host time per kernel", "us", 10,
                            "the low end of the 10-30 us per PyTorch op that "
                            "models/software_stack.cpp cites",
                            {4, 100, 0.5})};
  // Our own Hugging Face eager steps on the campaign's H100 host and GPU campaign 2's calibration
  // classes on its H200 host: their host-bound rows (batch 1-2, GPT-2 small, Gemma 3 1B, Llama at
  // 2 layers) pin the time per kernel. Seed 002 times a leaner GPT-2 of its own on another host
  // (models/software_stack.cpp says why it is not fitted on); our November H200 steps have no
  // host-bound row.
  g.fitted_on = {"h100_torch_steps_202611", "h200_gpu_database_20261128_calibration"};
  g.also_measured_by = {"seed002_gpt2_large_1xh100_batch", "h200_torch_steps_202611"};
  g.apply = [](const std::vector<double>& v, cost::CollectiveFits&, SuiteOptions& o) {
    o.eager_host_us = v[0];
  };
  return g;
}

FitGroup compiled_host_group() {
  FitGroup g;
  g.name = "torch.compile host time";
  g.parameters = {parameter("compiled host time per kernel", "us", 5,
                            "a launch from Inductor's flat wrapper, ~2-5 us, and nothing else",
                            {2, 120, 1})};
  // The same two campaigns' compiled steps: GPT-2 small and Large are host-bound there (GPT-2 at
  // batch 4 on the H200 host issues its compiled step in 21.6 ms).
  g.fitted_on = {"h100_torch_steps_202611", "h200_gpu_database_20261128_calibration"};
  g.apply = [](const std::vector<double>& v, cost::CollectiveFits&, SuiteOptions& o) {
    o.compiled_host_us = v[0];
  };
  return g;
}

// A profile's fitted tensor clock: its `tensor_clock_fitted_on` text starts with the source, or
// the sources joined by " + " ("a + b (45 rows, ...)"), fitted on their mean MAPE.
FitGroup tensor_clock_group(const FittedParameter& p) {
  FitGroup g;
  g.name = p.name;
  g.parameters = {
      {p.name, p.unit, p.value, 1.0, "the curves' rate held all run", {0.4, 1.2, 0.01}}};
  std::istringstream words(p.fitted_on);
  for (std::string word; words >> word;) {
    if (word == "+") continue;
    g.fitted_on.push_back(word);
    std::string next;
    if (!(words >> next) || next != "+") break;
  }
  const std::string profile = p.profile;
  g.apply = [profile](const std::vector<double>& v, cost::CollectiveFits&, SuiteOptions& o) {
    o.tensor_clock_ratio[profile] = v[0];
  };
  return g;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

const SourceResult& shipped_result(const SuiteSet& set, const std::string& source) {
  for (const SourceResult& r : set.shipped) {
    if (r.source == source) return r;
  }
  throw UserError("no suite with source '" + source + "' in the folder (validate --fit needs it)");
}

// Every source in `sources` predicted with the groups' values (each pair: a group, its values);
// the other fits as shipped.
std::vector<SourceResult> run_with(
    const SuiteSet& set, const std::vector<std::string>& sources,
    const std::vector<std::pair<const FitGroup*, std::vector<double>>>& fits) {
  cost::CollectiveFits collective;
  SuiteOptions options = set.options;
  for (const auto& [group, values] : fits) group->apply(values, collective, options);
  const cost::ScopedCollectiveFits scope(collective);
  std::vector<SourceResult> out;
  for (const std::string& source : sources)
    out.push_back(run_suite_file(shipped_result(set, source).file, options));
  return out;
}

// The objective over the sources, as a pair compared in order (smaller is better).
std::pair<double, double> score(const std::vector<SourceResult>& results, Objective objective) {
  double mape = 0, worst = 0;
  for (const SourceResult& r : results) {
    mape += r.mape / static_cast<double>(results.size());
    worst = std::max(worst, r.worst);
  }
  return objective == Objective::mape ? std::pair{mape, 0.0} : std::pair{worst, mape};
}

std::vector<double> grid_points(const Grid& g, double lo, double hi, double step) {
  std::vector<double> out;
  const long n = std::lround((hi - lo) / step);
  for (long k = 0; k <= n; ++k) out.push_back(std::clamp(lo + k * step, g.lo, g.hi));
  return out;
}

// The points to try for parameter i around `at`: its whole grid 5 steps apart, or (fine) the
// steps within 5 of `at`.
std::vector<double> candidates(const Grid& g, double at, bool fine) {
  if (!fine) return grid_points(g, g.lo, g.hi, 5 * g.step);
  return grid_points(g, std::max(g.lo, at - 5 * g.step), std::min(g.hi, at + 5 * g.step), g.step);
}

// How well the sources pin a lone parameter: the values tried within 0.05 points of the best.
void set_flat_range(FitResult& r, const std::vector<std::pair<double, double>>& tried) {
  constexpr double kFlat = 0.05;
  r.flat_lo = r.flat_hi = r.values.front();
  for (const auto& [x, objective] : tried) {
    if (objective > r.objective + kFlat) continue;
    r.flat_lo = std::min(r.flat_lo, x);
    r.flat_hi = std::max(r.flat_hi, x);
  }
}

// Coordinate descent from `start` by `objective`, over pairs of parameters at once (parameters
// that trade against each other, such as a latency and a rate, stall a one-at-a-time search):
// each pair over the coarse grid, then the fine steps around the best; again until a whole pass
// changes nothing. A group of one parameter is a plain grid search.
FitResult descend(const SuiteSet& set, const FitGroup& group,
                  const std::vector<std::string>& sources, std::vector<double> start,
                  Objective objective) {
  FitResult r;
  r.values = std::move(start);
  auto best = score(run_with(set, sources, {{&group, r.values}}), objective);
  r.evaluations = 1;
  const size_t n = group.parameters.size();
  std::vector<std::pair<double, double>> tried;  // a group of one: each value and its objective
  auto try_pair = [&](size_t i, size_t j, bool fine) {
    const std::vector<double> xs = candidates(group.parameters[i].grid, r.values[i], fine);
    const std::vector<double> ys = i == j ? std::vector<double>{r.values[j]}
                                          : candidates(group.parameters[j].grid, r.values[j], fine);
    const std::vector<double> from = r.values;
    for (double x : xs) {
      for (double y : ys) {
        std::vector<double> trial = from;
        trial[j] = y;
        trial[i] = x;  // after j: a group of one has i == j
        ++r.evaluations;
        const auto s = score(run_with(set, sources, {{&group, trial}}), objective);
        if (n == 1) tried.emplace_back(x, s.first);
        if (s < best) best = s, r.values = trial;
      }
    }
    return r.values != from;
  };
  for (int pass = 0; pass < 6; ++pass) {
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = n == 1 ? i : i + 1; j < n; ++j) {
        changed = try_pair(i, j, false) || changed;
        changed = try_pair(i, j, true) || changed;
      }
    }
    if (!changed) break;
  }
  r.objective = best.first;
  set_flat_range(r, tried);
  return r;
}

}  // namespace

std::vector<FitGroup> fit_groups() {
  std::vector<FitGroup> out = {nccl_group(), vtrain_group(), eager_host_group(),
                               compiled_host_group()};
  for (const FittedParameter& p : profile_fitted_parameters()) out.push_back(tensor_clock_group(p));
  return out;
}

SuiteSet load_suite_set(const std::string& path, const SuiteOptions& options) {
  SuiteSet set;
  set.options = options;
  for (const std::string& f : suite_files(path)) set.shipped.push_back(run_suite_file(f, options));
  return set;
}

FitResult fit_group(const SuiteSet& set, const FitGroup& group,
                    const std::vector<std::string>& sources) {
  FitResult r;
  for (const RefitParameter& p : group.parameters) r.values.push_back(p.prior);
  if (sources.empty()) return r;
  if (group.objective == Objective::mape)
    return descend(set, group, sources, r.values, group.objective);
  // A minimax objective has ridges that stop a coordinate search short of its optimum: the
  // search goes by the mean first, then polishes by the worst row.
  const FitResult by_mean = descend(set, group, sources, r.values, Objective::mape);
  r = descend(set, group, sources, by_mean.values, group.objective);
  r.evaluations += by_mean.evaluations;
  return r;
}

namespace {

std::string joined(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& s : list) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string value_text(double v, const std::string& unit) {
  char text[64];
  std::snprintf(text, sizeof text, "%.4g %s", v, unit.c_str());
  return text;
}

std::string objective_text(const std::vector<SourceResult>& results, Objective objective) {
  const auto [first, second] = score(results, objective);
  char text[96];
  if (objective == Objective::mape)
    std::snprintf(text, sizeof text, "MAPE %.2f%%", first);
  else
    std::snprintf(text, sizeof text, "worst %.2f%%, MAPE %.2f%%", first, second);
  return text;
}

// The calibration sources a group is refitted on once `left_out` is set aside: its own, else those
// that also measure it.
std::vector<std::string> refit_sources(const SuiteSet& set, const FitGroup& g,
                                       const std::string& left_out) {
  auto present = [&](const std::vector<std::string>& list) {
    std::vector<std::string> out;
    for (const std::string& s : list) {
      const bool in_set = std::any_of(set.shipped.begin(), set.shipped.end(), [&](const auto& r) {
        return r.source == s && r.role == Role::calibration;
      });
      if (s != left_out && in_set) out.push_back(s);
    }
    return out;
  };
  std::vector<std::string> own = present(g.fitted_on);
  return own.empty() ? present(g.also_measured_by) : own;
}

}  // namespace

void print_fits(std::ostream& out, const SuiteSet& set) {
  out << "fits redone from the calibration sources (validate/refit.h): coordinate descent over "
         "each\n"
         "parameter's grid from its prior; a fit never sees a validation source\n";
  for (const FitGroup& g : fit_groups()) {
    out << "\n" << g.name << ", fitted on " << joined(g.fitted_on) << "\n";
    if (!g.fitted_outside_suites.empty()) {
      out << "  not redone here: " << g.fitted_outside_suites << "\n";
      continue;
    }
    const std::vector<std::string> sources = refit_sources(set, g, "");
    if (sources.empty()) {
      out << "  not redone: none of its sources is in the folder\n";
      continue;
    }
    std::vector<double> shipped_values;
    for (const RefitParameter& p : g.parameters) shipped_values.push_back(p.shipped);
    const FitResult fit = fit_group(set, g, sources);
    out << "  objective as shipped: "
        << objective_text(run_with(set, sources, {{&g, shipped_values}}), g.objective)
        << "; refit: " << objective_text(run_with(set, sources, {{&g, fit.values}}), g.objective)
        << " (" << fit.evaluations << " evaluations)\n";
    char line[320];
    if (g.parameters.size() == 1 && fit.flat_hi - fit.flat_lo > 2 * g.parameters[0].grid.step) {
      const std::string& unit = g.parameters[0].unit;
      out << "  loosely pinned: every value from " << value_text(fit.flat_lo, unit) << " to "
          << value_text(fit.flat_hi, unit) << " is within 0.05 points of the best\n";
    }
    for (size_t i = 0; i < g.parameters.size(); ++i) {
      const RefitParameter& p = g.parameters[i];
      std::snprintf(line, sizeof line, "  %-32s shipped %-22s refit %-22s prior %s (%s)\n",
                    p.name.c_str(), value_text(p.shipped, p.unit).c_str(),
                    value_text(fit.values[i], p.unit).c_str(), value_text(p.prior, p.unit).c_str(),
                    p.prior_why.c_str());
      out << line;
    }
  }
}

void print_cross_validation(std::ostream& out, const SuiteSet& set) {
  out << "leave-one-source-out: each source predicted with every fit made on it redone without it\n"
         "(on the other calibration sources that measure it, else at its prior); validation "
         "sources\n"
         "had nothing fitted on them, so their error is already out of sample\n\n";
  char line[320];
  std::snprintf(line, sizeof line, "  %-40s %-12s %17s %17s  %s\n", "source", "role", "as shipped",
                "left out", "fits redone without it");
  out << line;
  const std::vector<FitGroup> groups = fit_groups();
  double in_sample = 0, left_out = 0;
  int calibration = 0;
  for (const SourceResult& r : set.shipped) {
    if (r.rows_run == 0) continue;
    std::vector<std::pair<const FitGroup*, std::vector<double>>> refits;
    std::string how;
    for (const FitGroup& g : groups) {
      if (!contains(g.fitted_on, r.source)) continue;
      // A fit made outside the suites cannot be redone here: leaving out its hardware leaves out
      // its data, so it takes its prior.
      const std::vector<std::string> sources = g.fitted_outside_suites.empty()
                                                   ? refit_sources(set, g, r.source)
                                                   : std::vector<std::string>{};
      refits.push_back({&g, fit_group(set, g, sources).values});
      how += (how.empty() ? "" : "; ") + g.name + ": " +
             (sources.empty() ? "at the prior" : "refit on " + joined(sources));
    }
    const SourceResult again = refits.empty() ? r : run_with(set, {r.source}, refits).front();
    char shipped_text[40], left_text[40];
    std::snprintf(shipped_text, sizeof shipped_text, "%6.2f%% (%+.1f%%)", r.mape, r.bias);
    std::snprintf(left_text, sizeof left_text, "%6.2f%% (%+.1f%%)", again.mape, again.bias);
    std::snprintf(line, sizeof line, "  %-40s %-12s %17s %17s  %s\n", r.source.c_str(),
                  role_name(r.role), shipped_text, left_text,
                  !how.empty() ? how.c_str()
                  : r.role == Role::calibration
                      ? "no fitted number here (SPLIT.md says why it calibrates)"
                      : "nothing fitted on it");
    out << line;
    if (r.role != Role::calibration) continue;
    ++calibration;
    in_sample += r.mape;
    left_out += again.mape;
  }
  if (calibration == 0) return;
  std::snprintf(line, sizeof line,
                "\ncalibration sources: MAPE %.2f%% in sample, %.2f%% left out (mean over %d "
                "source%s); each figure is MAPE (signed mean error)\n",
                in_sample / calibration, left_out / calibration, calibration,
                calibration == 1 ? "" : "s");
  out << line;
}

}  // namespace cs::validate
