#include "planner/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "common/parallel.h"
#include "driver/simulation.h"

namespace cs::planner {
namespace {

int64_t parse_count(const std::string& v, SweepAxis axis) {
  if (const auto n = parse_integer(v); n && *n > 0) return *n;
  throw UserError("sweep --" + std::string(to_string(axis)) + ": '" + v + "' is not a positive integer");
}

// Rescales the scenario to `gpus` GPUs of the same cluster kind, keeping TP and PP.
void scale_gpus(scenario::Scenario& s, int gpus) {
  if (s.cluster_name == "custom") throw UserError("sweeping GPUs needs a preset cluster (a custom cluster has a fixed size)");
  const int per_node = s.cluster.node.gpus;
  if (gpus > per_node && gpus % per_node != 0) {
    throw UserError(std::to_string(gpus) + " GPUs is not a whole number of " + s.cluster_name + " nodes (" + std::to_string(per_node) + " GPUs each)");
  }
  if (gpus > per_node && s.cluster.node.nics == 0) {
    throw UserError(std::to_string(gpus) + " GPUs need several " + s.cluster_name + " machines, which have no network");
  }
  const int model_parallel = s.layout.tp * s.layout.pp;
  if (gpus % model_parallel != 0) {
    throw UserError(std::to_string(gpus) + " GPUs do not split into tp x pp = " + std::to_string(model_parallel) + " groups");
  }
  s.cluster.nodes = gpus > per_node ? gpus / per_node : 1;
  s.nodes = s.cluster.nodes;
  s.gpus = gpus;
  s.layout.dp = gpus / model_parallel;
}

}  // namespace

std::string_view to_string(SweepAxis a) {
  switch (a) {
    case SweepAxis::gpus: return "gpus";
    case SweepAxis::nodes: return "nodes";
    case SweepAxis::global_batch: return "batch";
    case SweepAxis::seq_len: return "seq";
    case SweepAxis::nic_bandwidth: return "bandwidth";
  }
  return "?";
}

scenario::Scenario sweep_point(const scenario::Scenario& base, SweepAxis axis, const std::string& value) {
  scenario::Scenario s = base;
  switch (axis) {
    case SweepAxis::gpus: scale_gpus(s, static_cast<int>(parse_count(value, axis))); break;
    case SweepAxis::nodes: scale_gpus(s, static_cast<int>(parse_count(value, axis)) * base.cluster.node.gpus); break;
    case SweepAxis::global_batch: s.training.global_batch = parse_count(value, axis); break;
    case SweepAxis::seq_len: s.training.seq_len = parse_count(value, axis); break;
    case SweepAxis::nic_bandwidth:
      if (s.cluster_name == "custom") throw UserError("sweeping NIC bandwidth needs a preset cluster");
      try {
        s.cluster.node.nic = parse_bandwidth(value);
      } catch (const UnitError& e) {
        throw UserError("sweep --bandwidth: " + std::string(e.what()));
      }
      break;
  }
  s.name = base.name + " [" + std::string(to_string(axis)) + " " + value + "]";
  if (s.cluster_name != "custom") topo::validate(s.cluster);
  strategy::validate(s.layout, s.training, s.model, s.gpus);
  return s;
}

SweepResult run_sweep(const scenario::Scenario& base, SweepAxis axis, const std::vector<std::string>& values, unsigned threads) {
  SweepResult r;
  r.axis = axis;
  r.scenario = base.name;
  r.rows.resize(values.size());
  parallel_for(values.size(), threads, [&](size_t i) {
      SweepRow& row = r.rows[i];
      row.value = values[i];
      try {
        const scenario::Scenario s = sweep_point(base, axis, values[i]);
        row.gpus = s.gpus;
        const auto sim = driver::simulate(s, {false, false, driver::RankMode::automatic, false});
        const auto& rep = sim.report;
        row.step_time = rep.step_time;
        row.tokens_per_second = rep.tokens_per_second;
        row.mfu = rep.mfu;
        row.peak_memory = rep.peak_memory;
        row.fits = rep.fits;
        const sim::MeanRankTimes mean = sim::mean_rank_times(rep);
        row.compute = mean.compute;
        row.exposed_communication = mean.exposed_communication;
        row.idle = mean.idle;
      } catch (const std::exception& e) {  // a worker must not throw: the row says why
        row.error = e.what();
      }
  });
  // Speedup against the first point that ran.
  const SweepRow* first = nullptr;
  for (const auto& row : r.rows) {
    if (row.error.empty()) {
      first = &row;
      break;
    }
  }
  for (auto& row : r.rows) {
    if (!first || !row.error.empty()) continue;
    row.speedup = row.tokens_per_second / first->tokens_per_second;
    if (axis == SweepAxis::gpus || axis == SweepAxis::nodes) {
      row.efficiency = row.speedup / (static_cast<double>(row.gpus) / static_cast<double>(first->gpus));
    }
  }
  return r;
}

void write_sweep_csv(std::ostream& out, const SweepResult& r) {
  out << to_string(r.axis) << ",gpu_count,step_time_s,tokens_per_s,mfu,speedup,scaling_efficiency,compute_s,exposed_communication_s,idle_s,"
                             "peak_memory_bytes,fits,error\n";
  for (const auto& row : r.rows) {
    out << row.value << "," << row.gpus << ",";
    if (row.error.empty()) {
      out << row.step_time.seconds() << "," << row.tokens_per_second << "," << row.mfu << "," << row.speedup << ","
          << (row.efficiency >= 0 ? std::to_string(row.efficiency) : "") << "," << row.compute.seconds() << ","
          << row.exposed_communication.seconds() << "," << row.idle.seconds() << "," << row.peak_memory << "," << (row.fits ? "true" : "false") << ",";
    } else {
      out << ",,,,,,,,,,\"" << row.error << "\"";
    }
    out << "\n";
  }
}

namespace {

// A "nice" axis maximum and tick step (1, 2 or 5 times a power of ten) for values up to v.
std::pair<double, double> nice_axis(double v) {
  if (!(v > 0)) return {1.0, 0.2};
  const double raw = v / 5.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double f : {1.0, 2.0, 5.0, 10.0}) {
    step = f * mag;
    if (step >= raw) break;
  }
  return {std::ceil(v / step) * step, step};
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

}  // namespace

void write_sweep_svg(std::ostream& out, const SweepResult& r) {
  std::vector<const SweepRow*> ok;
  for (const auto& row : r.rows) {
    if (row.error.empty()) ok.push_back(&row);
  }
  const double W = 960, H = 440, top = 60, bottom = 70, left = 70, gap = 90;
  const double panel = (W - left - gap - 30) / 2, plot_h = H - top - bottom;
  const bool scaling = r.axis == SweepAxis::gpus || r.axis == SweepAxis::nodes;
  const std::string xlabel = r.axis == SweepAxis::gpus ? "GPUs" : r.axis == SweepAxis::nodes ? "nodes"
                           : r.axis == SweepAxis::global_batch ? "global batch (sequences)"
                           : r.axis == SweepAxis::seq_len ? "sequence length (tokens)" : "NIC bandwidth per direction";
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " " << H
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << "<text x=\"" << W / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">" << escape(r.scenario) << ": sweep over " << escape(xlabel)
      << "</text>\n";
  const size_t n = ok.size();
  auto x_at = [&](double x0, size_t i) { return x0 + panel * (static_cast<double>(i) + 0.5) / static_cast<double>(std::max<size_t>(n, 1)); };
  auto axes = [&](double x0, const std::string& ylabel, double ymax, double ystep) {
    out << "<line x1=\"" << x0 << "\" y1=\"" << top + plot_h << "\" x2=\"" << x0 + panel << "\" y2=\"" << top + plot_h << "\" stroke=\"black\"/>\n";
    out << "<line x1=\"" << x0 << "\" y1=\"" << top << "\" x2=\"" << x0 << "\" y2=\"" << top + plot_h << "\" stroke=\"black\"/>\n";
    for (double y = 0; y <= ymax + 1e-9; y += ystep) {
      const double py = top + plot_h - plot_h * y / ymax;
      out << "<line x1=\"" << x0 - 4 << "\" y1=\"" << py << "\" x2=\"" << x0 + panel << "\" y2=\"" << py << "\" stroke=\"#ddd\"/>\n";
      out << "<text x=\"" << x0 - 8 << "\" y=\"" << py + 4 << "\" text-anchor=\"end\">" << num(y) << "</text>\n";
    }
    for (size_t i = 0; i < n; ++i) {
      out << "<text x=\"" << x_at(x0, i) << "\" y=\"" << top + plot_h + 18 << "\" text-anchor=\"middle\">" << escape(ok[i]->value) << "</text>\n";
    }
    out << "<text x=\"" << x0 + panel / 2 << "\" y=\"" << H - 25 << "\" text-anchor=\"middle\">" << escape(xlabel) << "</text>\n";
    out << "<text transform=\"translate(" << x0 - 48 << "," << top + plot_h / 2 << ") rotate(-90)\" text-anchor=\"middle\">" << escape(ylabel)
        << "</text>\n";
  };
  // Left: speedup (and ideal).
  double smax = 1;
  for (const auto* row : ok) smax = std::max(smax, row->speedup);
  if (scaling && !ok.empty()) smax = std::max(smax, static_cast<double>(ok.back()->gpus) / ok.front()->gpus);
  const auto [sy, ss] = nice_axis(smax);
  axes(left, "speedup over the first point", sy, ss);
  auto py_s = [&](double v) { return top + plot_h - plot_h * v / sy; };
  if (scaling && !ok.empty()) {
    out << "<polyline fill=\"none\" stroke=\"#999\" stroke-dasharray=\"6,4\" points=\"";
    for (size_t i = 0; i < n; ++i) out << x_at(left, i) << "," << py_s(static_cast<double>(ok[i]->gpus) / ok.front()->gpus) << " ";
    out << "\"/>\n";
  }
  out << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"";
  for (size_t i = 0; i < n; ++i) out << x_at(left, i) << "," << py_s(ok[i]->speedup) << " ";
  out << "\"/>\n";
  for (size_t i = 0; i < n; ++i) {
    out << "<circle cx=\"" << x_at(left, i) << "\" cy=\"" << py_s(ok[i]->speedup) << "\" r=\"4\" fill=\"#1f77b4\"/>\n";
    std::string tag = num(std::round(ok[i]->speedup * 100) / 100) + "x";
    if (ok[i]->efficiency >= 0) tag += " (" + num(std::round(ok[i]->efficiency * 1000) / 10) + "%)";
    out << "<text x=\"" << x_at(left, i) << "\" y=\"" << py_s(ok[i]->speedup) - 10 << "\" text-anchor=\"middle\" font-size=\"11\">" << tag
        << "</text>\n";
  }
  out << "<text x=\"" << left + 8 << "\" y=\"" << top - 8 << "\" fill=\"#1f77b4\">speedup" << (scaling ? " (dashed: ideal)" : "") << "</text>\n";
  // Right: step time split, stacked bars in ms.
  const double x1 = left + panel + gap;
  double tmax = 0;
  for (const auto* row : ok) tmax = std::max(tmax, (row->compute + row->exposed_communication + row->idle).ms());
  const auto [ty, ts] = nice_axis(tmax);
  axes(x1, "step time per GPU (ms)", ty, ts);
  const char* colours[3] = {"#2ca02c", "#d62728", "#bbbbbb"};
  const char* names[3] = {"compute", "exposed communication", "idle"};
  const double bar = panel / static_cast<double>(std::max<size_t>(n, 1)) * 0.6;
  for (size_t i = 0; i < n; ++i) {
    double base_ms = 0;
    const double parts[3] = {ok[i]->compute.ms(), ok[i]->exposed_communication.ms(), ok[i]->idle.ms()};
    for (int p = 0; p < 3; ++p) {
      const double y0 = top + plot_h - plot_h * (base_ms + parts[p]) / ty;
      out << "<rect x=\"" << x_at(x1, i) - bar / 2 << "\" y=\"" << y0 << "\" width=\"" << bar << "\" height=\"" << plot_h * parts[p] / ty
          << "\" fill=\"" << colours[p] << "\"/>\n";
      base_ms += parts[p];
    }
  }
  for (int p = 0; p < 3; ++p) {
    const double lx = x1 + 8 + (p == 0 ? 0 : p == 1 ? 90 : 260);
    out << "<rect x=\"" << lx << "\" y=\"" << top - 20 << "\" width=\"10\" height=\"10\" fill=\"" << colours[p] << "\"/>\n";
    out << "<text x=\"" << lx + 14 << "\" y=\"" << top - 11 << "\">" << names[p] << "</text>\n";
  }
  out << "</svg>\n";
}

}  // namespace cs::planner
