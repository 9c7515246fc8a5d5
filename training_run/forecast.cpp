#include "training_run/forecast.h"

#include <cmath>
#include <cstdio>

#include "training_run/defaults.h"
#include "training_run/goodput.h"

namespace cs::training_run {
namespace {

Input resolve(const std::optional<double>& given, const Default& fallback) {
  if (given) return {*given, false, ""};
  return {fallback.value, true, fallback.source};
}

Cost cost_of(double seconds, const Forecast& f) {
  Cost c;
  c.seconds = seconds;
  c.gpu_hours = seconds / 3600 * f.step.gpus;
  c.usd = c.gpu_hours * f.usd_per_gpu_hour.value;
  // W x h = Wh; 1 MWh = 1e6 Wh.
  c.mwh = c.gpu_hours * f.watts_per_gpu.value * f.pue.value * 1e-6;
  return c;
}

// Steps and tokens from what was given: steps, or tokens (default: per parameter) rounded up to
// whole steps.
void size_the_run(const RunInputs& in, Forecast& f) {
  const StepFacts& s = f.step;
  if (in.steps) {
    f.given_in_steps = true;
    f.steps = *in.steps;
    f.tokens = {f.steps * s.tokens_per_step, false, ""};
    return;
  }
  const Default per_parameter = default_tokens_per_parameter();
  f.tokens = resolve(
      in.tokens, {per_parameter.value * static_cast<double>(s.parameters), per_parameter.source});
  if (s.tokens_per_step <= 0) throw InputError("the step trains no tokens: give steps");
  f.steps = std::ceil(f.tokens.value / s.tokens_per_step);
  if (f.steps > 1e9) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.3g tokens take %.3g steps of %.0f tokens: at most 1e9 steps",
                  f.tokens.value, f.steps, s.tokens_per_step);
    throw InputError(buf);
  }
}

// Failures, checkpoints and goodput (goodput.h): no failures, no checkpoint needed.
void add_failures(Forecast& f) {
  const double rate_per_second = f.failures_per_gpu_hour.value * f.step.gpus / 3600;
  f.checkpoint_write_seconds = f.checkpoint_bytes.value / f.checkpoint_bandwidth.value;
  f.restore_seconds = f.checkpoint_write_seconds;
  if (rate_per_second <= 0) {
    f.with_failures = f.without_failures;
    return;
  }
  f.mtbf_seconds = 1 / rate_per_second;
  f.checkpoint_interval_seconds = daly_interval(f.checkpoint_write_seconds, f.mtbf_seconds);
  const double factor =
      wall_clock_factor(f.checkpoint_interval_seconds, f.checkpoint_write_seconds,
                        f.restart_seconds.value + f.restore_seconds, f.mtbf_seconds);
  if (!std::isfinite(factor)) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "with a failure every %.3g s on %d GPUs and %.3g s to restart and restore, the "
                  "run never finishes",
                  f.mtbf_seconds, f.step.gpus, f.restart_seconds.value + f.restore_seconds);
    throw InputError(buf);
  }
  f.goodput = 1 / factor;
  f.with_failures = cost_of(f.without_failures.seconds * factor, f);
}

std::string fmt(const char* format, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// 3 significant figures with a unit prefix: "15.6T", "774M".
std::string count_text(double v) {
  static constexpr std::pair<double, const char*> kPrefixes[] = {
      {1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  for (const auto& [scale, prefix] : kPrefixes) {
    if (v >= scale) return fmt("%.3g", v / scale) + prefix;
  }
  return fmt("%.3g", v);
}

// 3 significant figures below 1,000, whole numbers with thousands separators above: "0.189",
// "38,270,000" (never "3.83e+07").
std::string amount_text(double v) {
  if (v < 1000) return fmt("%.3g", v);
  const std::string digits = fmt("%.0f", v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "1.84 us", "2.84 s", "12.5 min", "3.09 h", "50.6 days".
std::string duration_text(double s) {
  if (s < 1e-3) return fmt("%.3g us", s * 1e6);
  if (s < 1) return fmt("%.3g ms", s * 1e3);
  if (s < 60) return fmt("%.3g s", s);
  if (s < 3600) return fmt("%.3g min", s / 60);
  if (s < 86400 * 2) return fmt("%.3g h", s / 3600);
  return amount_text(s / 86400) + " days";
}

// Decimal units, as storage is sold: "980 GB", "2 TB/s".
std::string decimal_text(double v, const char* unit) {
  static constexpr std::pair<double, const char*> kPrefixes[] = {
      {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "K"}};
  for (const auto& [scale, prefix] : kPrefixes) {
    if (v >= scale) return fmt("%.3g ", v / scale) + prefix + unit;
  }
  return fmt("%.3g ", v) + unit;
}

std::string money_text(double usd) {
  if (usd >= 1e6) return fmt("$%.3gM", usd * 1e-6);
  if (usd >= 1e3) return fmt("$%.3gK", usd * 1e-3);
  return fmt("$%.2f", usd);
}

// A default's mark: " (default: SOURCE)".
std::string marked(const Input& in) {
  return in.is_default ? " (default: " + in.source + ")" : std::string();
}

std::string cost_text(const Cost& c) {
  return duration_text(c.seconds) + ", " + amount_text(c.gpu_hours) + " GPU-hours, " +
         money_text(c.usd) + ", " + amount_text(c.mwh) + " MWh";
}

}  // namespace

Forecast forecast(const RunInputs& in, const StepFacts& step) {
  Forecast f;
  f.step = step;
  size_the_run(in, f);
  f.usd_per_gpu_hour = resolve(in.usd_per_gpu_hour, default_usd_per_gpu_hour(step.gpu));
  f.watts_per_gpu = resolve(in.watts_per_gpu, default_watts_per_gpu(step.gpu));
  f.pue = resolve(in.pue, default_pue());
  f.failures_per_gpu_hour = resolve(in.failures_per_gpu_hour, default_failures_per_gpu_hour());
  const Default per_parameter = default_checkpoint_bytes_per_parameter();
  f.checkpoint_bytes =
      resolve(in.checkpoint_bytes,
              {per_parameter.value * static_cast<double>(step.parameters), per_parameter.source});
  f.checkpoint_bandwidth = resolve(in.checkpoint_bandwidth, default_checkpoint_bandwidth());
  f.restart_seconds = resolve(in.restart_seconds, default_restart_seconds());
  f.without_failures = cost_of(f.steps * step.step_seconds, f);
  add_failures(f);
  return f;
}

std::vector<std::pair<std::string, std::string>> report_rows(const Forecast& f) {
  std::vector<std::pair<std::string, std::string>> rows;
  rows.emplace_back("tokens", count_text(f.tokens.value) +
                                  (f.given_in_steps ? " (steps given)" : marked(f.tokens)) + " = " +
                                  fmt("%.0f", f.steps) + " steps of " +
                                  count_text(f.step.tokens_per_step) + " tokens");
  rows.emplace_back(
      "price", fmt("$%.2f per GPU-hour", f.usd_per_gpu_hour.value) + marked(f.usd_per_gpu_hour));
  rows.emplace_back("power", fmt("%.0f W per GPU", f.watts_per_gpu.value) +
                                 marked(f.watts_per_gpu) + fmt(", PUE %.2f", f.pue.value) +
                                 marked(f.pue));
  rows.emplace_back("time and cost", cost_text(f.without_failures) + " without failures");
  rows.emplace_back(
      "failures", fmt("%.3g per GPU-hour", f.failures_per_gpu_hour.value) +
                      marked(f.failures_per_gpu_hour) +
                      (f.mtbf_seconds > 0
                           ? ": one every " + duration_text(f.mtbf_seconds) + " on " +
                                 std::to_string(f.step.gpus) + (f.step.gpus == 1 ? " GPU" : " GPUs")
                           : ": none expected"));
  rows.emplace_back("checkpoint",
                    decimal_text(f.checkpoint_bytes.value, "B") + marked(f.checkpoint_bytes) +
                        " at " + decimal_text(f.checkpoint_bandwidth.value, "B/s") +
                        marked(f.checkpoint_bandwidth) + ": written in " +
                        duration_text(f.checkpoint_write_seconds) +
                        " (training waits), restored in " + duration_text(f.restore_seconds));
  rows.emplace_back("restart", duration_text(f.restart_seconds.value) + marked(f.restart_seconds) +
                                   " after each failure, then the restore");
  if (f.mtbf_seconds > 0) {
    rows.emplace_back("goodput", fmt("%.2f%%", 100 * f.goodput) + " with a checkpoint every " +
                                     duration_text(f.checkpoint_interval_seconds) +
                                     " of training (the optimum, Daly 2006)");
  }
  rows.emplace_back("with failures", cost_text(f.with_failures));
  return rows;
}

std::string summary_line(const Forecast& f) {
  return duration_text(f.with_failures.seconds) + " (" + duration_text(f.without_failures.seconds) +
         " without failures, goodput " + fmt("%.2f%%", 100 * f.goodput) + "), " +
         amount_text(f.with_failures.gpu_hours) + " GPU-hours, " + money_text(f.with_failures.usd) +
         ", " + amount_text(f.with_failures.mwh) + " MWh for " + count_text(f.tokens.value) +
         " tokens";
}

nlohmann::json to_json(const Forecast& f) {
  using nlohmann::json;
  auto input = [](const Input& in) {
    return json{{"value", in.value}, {"default", in.is_default}, {"source", in.source}};
  };
  auto cost = [](const Cost& c) {
    return json{{"days", c.days()}, {"gpu_hours", c.gpu_hours}, {"usd", c.usd}, {"mwh", c.mwh}};
  };
  return {{"inputs",
           {{"tokens", input(f.tokens)},
            {"usd_per_gpu_hour", input(f.usd_per_gpu_hour)},
            {"watts_per_gpu", input(f.watts_per_gpu)},
            {"pue", input(f.pue)},
            {"failures_per_gpu_hour", input(f.failures_per_gpu_hour)},
            {"checkpoint_bytes", input(f.checkpoint_bytes)},
            {"checkpoint_bandwidth_bytes_per_s", input(f.checkpoint_bandwidth)},
            {"restart_overhead_s", input(f.restart_seconds)}}},
          {"steps", f.steps},
          {"tokens_per_step", f.step.tokens_per_step},
          {"without_failures", cost(f.without_failures)},
          {"mtbf_s", f.mtbf_seconds},
          {"checkpoint_write_s", f.checkpoint_write_seconds},
          {"restore_s", f.restore_seconds},
          {"checkpoint_interval_s", f.checkpoint_interval_seconds},
          {"goodput", f.goodput},
          {"with_failures", cost(f.with_failures)}};
}

}  // namespace cs::training_run
