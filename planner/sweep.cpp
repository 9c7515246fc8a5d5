#include "planner/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <ostream>

#include "common/limits.h"
#include "common/parallel.h"
#include "driver/simulation.h"
#include "reports/svg.h"

namespace cs::planner {
namespace {

int64_t parse_count(const std::string& v, SweepAxis axis) {
  if (const auto n = parse_integer(v); n && *n > 0) return *n;
  // Digits past 64 bits: a count too large, which the caller's bound refuses with its reason.
  if (v.find_first_not_of("0123456789") == std::string::npos &&
      v.find_first_not_of('0') != std::string::npos)
    return INT64_MAX;
  throw UserError("sweep --" + std::string(to_string(axis)) + ": '" + v +
                  "' is not a positive integer");
}

// A global batch or a sequence length, within what a scenario accepts.
int64_t bounded_count(const std::string& v, SweepAxis axis) {
  const int64_t n = parse_count(v, axis);
  const limits::IntegerBound b =
      axis == SweepAxis::global_batch ? limits::kBatchSequences : limits::kSequenceTokens;
  if (!limits::within(b, n))
    throw UserError("sweep --" + std::string(to_string(axis)) + ": " + limits::out_of_range(b, v));
  return n;
}

// A point's GPU count (`nodes` x `per_node` GPUs), bounded before it becomes an int: 4294967304
// GPUs ran as 8 under that label.
int gpu_count(const std::string& v, SweepAxis axis, int64_t per_node) {
  const int64_t n = parse_count(v, axis);
  if (n > limits::kMaxGpus || n * per_node > limits::kMaxGpus) {
    throw UserError("sweep --" + std::string(to_string(axis)) + ": '" + v +
                    "' is out of range: a cluster has at most " + std::to_string(limits::kMaxGpus) +
                    " GPUs (" + limits::kMaxGpusWhy + ")");
  }
  return static_cast<int>(n * per_node);
}

BytesPerSecond nic_bandwidth(const std::string& v) {
  try {
    return parse_bandwidth(v);
  } catch (const UnitError& e) {
    throw UserError("sweep --bandwidth: " + std::string(e.what()));
  }
}

// The value itself: a positive whole number within its bound (a cluster's GPUs, a scenario's batch
// and sequence) or a bandwidth within bounds. A value that is not one refuses the whole sweep,
// before any point runs; a point whose value is sound but which the scenario cannot run at (12
// GPUs for TP 8) is a row saying why.
void check_value(const scenario::Scenario& base, SweepAxis axis, const std::string& value) {
  switch (axis) {
    case SweepAxis::gpus:
      gpu_count(value, axis, 1);
      break;
    case SweepAxis::nodes:
      gpu_count(value, axis, base.cluster.node.gpus);
      break;
    case SweepAxis::global_batch:
    case SweepAxis::seq_len:
      bounded_count(value, axis);
      break;
    case SweepAxis::nic_bandwidth:
      nic_bandwidth(value);
      break;
  }
}

// Rescales the scenario to `gpus` GPUs of the same cluster kind, keeping TP, CP, PP and EP: only
// DP changes (a data-parallel group is a copy of the model-parallel group of tp x cp x pp GPUs).
// EP splits the experts over ranks of the tp x cp x dp grid of a stage; a DP that no longer holds
// it is refused by strategy::validate, which says why.
void scale_gpus(scenario::Scenario& s, int gpus) {
  if (s.has_custom_cluster())
    throw UserError("sweeping GPUs needs a preset cluster (a custom cluster has a fixed size)");
  const int per_node = s.cluster.node.gpus;
  if (gpus > per_node && gpus % per_node != 0) {
    throw UserError(std::to_string(gpus) + " GPUs is not a whole number of " + s.cluster_name +
                    " nodes (" + std::to_string(per_node) + " GPUs each)");
  }
  if (gpus > per_node && s.cluster.node.nics == 0) {
    throw UserError(std::to_string(gpus) + " GPUs need several " + s.cluster_name +
                    " machines, which have no network");
  }
  const int model_parallel = s.layout.tp * s.layout.cp * s.layout.pp;
  if (gpus % model_parallel != 0) {
    throw UserError(std::to_string(gpus) + " GPUs do not split into tp x cp x pp = " +
                    std::to_string(model_parallel) + " groups");
  }
  s.cluster.nodes = gpus > per_node ? gpus / per_node : 1;
  s.nodes = s.cluster.nodes;
  s.gpus = gpus;
  s.layout.dp = gpus / model_parallel;
}

}  // namespace

std::string_view to_string(SweepAxis a) {
  switch (a) {
    case SweepAxis::gpus:
      return "gpus";
    case SweepAxis::nodes:
      return "nodes";
    case SweepAxis::global_batch:
      return "batch";
    case SweepAxis::seq_len:
      return "seq";
    case SweepAxis::nic_bandwidth:
      return "bandwidth";
  }
  return "?";
}

scenario::Scenario sweep_point(const scenario::Scenario& base, SweepAxis axis,
                               const std::string& value) {
  scenario::Scenario s = base;
  switch (axis) {
    case SweepAxis::gpus:
      scale_gpus(s, gpu_count(value, axis, 1));
      break;
    case SweepAxis::nodes:
      scale_gpus(s, gpu_count(value, axis, base.cluster.node.gpus));
      break;
    case SweepAxis::global_batch:
      s.training.global_batch = bounded_count(value, axis);
      break;
    case SweepAxis::seq_len:
      s.training.seq_len = bounded_count(value, axis);
      break;
    case SweepAxis::nic_bandwidth:
      if (s.has_custom_cluster()) throw UserError("sweeping NIC bandwidth needs a preset cluster");
      s.cluster.node.nic = nic_bandwidth(value);
      break;
  }
  s.name = base.name + " [" + std::string(to_string(axis)) + " " + value + "]";
  if (!s.has_custom_cluster()) topo::validate(s.cluster);
  strategy::validate(s.layout, s.training, s.model, s.gpus);
  return s;
}

SweepResult run_sweep(const scenario::Scenario& base, SweepAxis axis,
                      const std::vector<std::string>& values, unsigned threads) {
  for (const auto& v : values) check_value(base, axis, v);
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
      row.efficiency =
          row.speedup / (static_cast<double>(row.gpus) / static_cast<double>(first->gpus));
    }
  }
  return r;
}

void write_sweep_csv(std::ostream& out, const SweepResult& r) {
  out << to_string(r.axis)
      << ",gpu_count,step_time_s,tokens_per_s,mfu,speedup,scaling_efficiency,compute_s,exposed_"
         "communication_s,idle_s,"
         "peak_memory_bytes,fits,error\n";
  for (const auto& row : r.rows) {
    out << row.value << "," << row.gpus << ",";
    if (row.error.empty()) {
      out << row.step_time.seconds() << "," << row.tokens_per_second << "," << row.mfu << ","
          << row.speedup << "," << (row.efficiency >= 0 ? std::to_string(row.efficiency) : "")
          << "," << row.compute.seconds() << "," << row.exposed_communication.seconds() << ","
          << row.idle.seconds() << "," << row.peak_memory << "," << (row.fits ? "true" : "false")
          << ",";
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
  const double step = reports::nice_step(v, 5);
  return {std::ceil(v / step) * step, step};
}

}  // namespace

// Charts: a log-log speedup panel (x by GPU count, so ideal scaling is a straight line) when the
// sweep scales GPUs or nodes over a ratio of at least kLogRatio, evenly spaced points otherwise;
// the step-time split as stacked bars, one colour per category with a legend. Tick labels are
// measured (kCharWidth per character) so axis titles sit clear of them; point labels that would
// collide move below their point or are left out.
namespace {

// The sweep's chart: speedup on the left (log-log when it spans a decade-scale ratio), the step
// time split into compute, exposed communication and idle on the right.
class SweepSvg {
 public:
  SweepSvg(std::ostream& out, const SweepResult& r) : out_(out), r_(r) {
    for (const auto& row : r.rows) {
      if (row.error.empty()) ok_.push_back(&row);
    }
    n_ = ok_.size();
    scaling_ = r.axis == SweepAxis::gpus || r.axis == SweepAxis::nodes;
    xlabel_ = r.axis == SweepAxis::gpus           ? "GPUs"
              : r.axis == SweepAxis::nodes        ? "nodes"
              : r.axis == SweepAxis::global_batch ? "global batch (sequences)"
              : r.axis == SweepAxis::seq_len      ? "sequence length (tokens)"
                                                  : "NIC bandwidth per direction";
    // x tick labels: rotated when they would not fit side by side.
    size_t widest = 1;
    for (const auto* row : ok_) widest = std::max(widest, row->value.size());
    rotate_ = n_ > 0 && widest * kCharWidth + 6 > kPanelW * 0.8 / static_cast<double>(n_);
    xtick_h_ = rotate_ ? widest * kCharWidth * 0.6 + 14 : 18;
    // x positions: by log of the GPU count on scaling sweeps, evenly spaced otherwise.
    log_x_ = scaling_ && n_ > 1 &&
             static_cast<double>(ok_.back()->gpus) / ok_.front()->gpus >= kLogRatio;
  }

  void write() {
    const double H = kTop + kPlotH + xtick_h_ + 50;
    out_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << H
         << "\" viewBox=\"0 0 " << kW << " " << H
         << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    out_ << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    out_ << "<text x=\"" << kW / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">"
         << reports::xml_escape(r_.scenario) << ": sweep over " << reports::xml_escape(xlabel_)
         << "</text>\n";
    speedup_panel();
    time_panel();
    out_ << "</svg>\n";
  }

 private:
  static constexpr double kCharWidth = 6.5;  // px per character at 12 px sans-serif (estimate)
  static constexpr double kLogRatio = 8;     // a scale spanning this factor gets a log axis
  static constexpr double kW = 1000, kTop = 70, kLeft = 30, kGap = 40, kPlotH = 280;
  static constexpr double kPanelW = (kW - 2 * kLeft - kGap) / 2;

  struct Axis {
    double lo, hi;
    bool log;
    std::vector<double> ticks;
  };
  struct Box {
    double x0, y0, x1, y1;
  };

  // Bars always sit evenly spaced; points by log of the GPU count when the x axis is logarithmic.
  double x_frac(size_t i, bool by_log = true) const {
    if (log_x_ && by_log) {
      const double lo = std::log(static_cast<double>(ok_.front()->gpus)),
                   hi = std::log(static_cast<double>(ok_.back()->gpus));
      return 0.06 + 0.88 * (std::log(static_cast<double>(ok_[i]->gpus)) - lo) / (hi - lo);
    }
    return (static_cast<double>(i) + 0.5) / static_cast<double>(std::max<size_t>(n_, 1));
  }

  static Axis make_axis(double vmin, double vmax, bool allow_log) {
    Axis a{0, 1, false, {}};
    if (allow_log && vmin > 0 && vmax / vmin >= kLogRatio) {
      a.log = true;
      a.lo = std::pow(10.0, std::floor(std::log10(vmin)));
      a.hi = std::pow(10.0, std::ceil(std::log10(vmax)));
      for (double d = a.lo; d <= a.hi * 1.0001; d *= 10) {
        for (double m : {1.0, 2.0, 5.0}) {
          if (d * m >= a.lo * 0.9999 && d * m <= a.hi * 1.0001) a.ticks.push_back(d * m);
        }
      }
      return a;
    }
    const auto [ymax, ystep] = nice_axis(vmax);
    a.hi = ymax;
    for (double y = 0; y <= ymax + 1e-9; y += ystep) a.ticks.push_back(y);
    return a;
  }

  static double y_of(const Axis& a, double v) {
    const double f =
        a.log ? (std::log(std::max(v, a.lo)) - std::log(a.lo)) / (std::log(a.hi) - std::log(a.lo))
              : v / a.hi;
    return kTop + kPlotH - kPlotH * f;
  }

  void x_tick_labels(double x0, double width, bool by_log) {
    for (size_t i = 0; i < n_; ++i) {
      const double px = x0 + width * x_frac(i, by_log), py = kTop + kPlotH + 16;
      if (rotate_) {
        out_ << "<text transform=\"translate(" << px << "," << py
             << ") rotate(-35)\" text-anchor=\"end\">" << reports::xml_escape(ok_[i]->value)
             << "</text>\n";
      } else {
        out_ << "<text x=\"" << px << "\" y=\"" << py << "\" text-anchor=\"middle\">"
             << reports::xml_escape(ok_[i]->value) << "</text>\n";
      }
    }
  }

  // Axes of a panel whose plot area starts at x0 (after the tick labels and the axis title).
  void axes(double& x0, double& width, double panel_x, const std::string& ylabel, const Axis& a,
            bool by_log) {
    size_t tick_chars = 1;
    for (double t : a.ticks) tick_chars = std::max(tick_chars, reports::shortest(t).size());
    const double tick_w = static_cast<double>(tick_chars) * kCharWidth;
    x0 = panel_x + 20 + tick_w + 12;  // axis title (rotated, ~14 px), gap, tick labels, gap
    width = panel_x + kPanelW - x0;
    out_ << "<text transform=\"translate(" << panel_x + 12 << "," << kTop + kPlotH / 2
         << ") rotate(-90)\" text-anchor=\"middle\">" << reports::xml_escape(ylabel) << "</text>\n";
    for (double t : a.ticks) {
      const double py = y_of(a, t);
      out_ << "<line x1=\"" << x0 - 4 << "\" y1=\"" << py << "\" x2=\"" << x0 + width << "\" y2=\""
           << py << "\" stroke=\"#ddd\"/>\n";
      out_ << "<text x=\"" << x0 - 8 << "\" y=\"" << py + 4 << "\" text-anchor=\"end\">"
           << reports::shortest(t) << "</text>\n";
    }
    out_ << "<line x1=\"" << x0 << "\" y1=\"" << kTop + kPlotH << "\" x2=\"" << x0 + width
         << "\" y2=\"" << kTop + kPlotH << "\" stroke=\"black\"/>\n";
    out_ << "<line x1=\"" << x0 << "\" y1=\"" << kTop << "\" x2=\"" << x0 << "\" y2=\""
         << kTop + kPlotH << "\" stroke=\"black\"/>\n";
    x_tick_labels(x0, width, by_log);
    out_ << "<text x=\"" << x0 + width / 2 << "\" y=\"" << kTop + kPlotH + xtick_h_ + 22
         << "\" text-anchor=\"middle\">" << reports::xml_escape(xlabel_)
         << (log_x_ && by_log ? " (log scale)" : "") << "</text>\n";
  }

  // (name, swatch svg) pairs in a row from (x, y).
  void legend(double x, double y, const std::vector<std::pair<std::string, std::string>>& items) {
    for (const auto& [name, swatch] : items) {
      out_ << "<g transform=\"translate(" << x << "," << y << ")\">" << swatch << "</g><text x=\""
           << x + 18 << "\" y=\"" << y + 10 << "\">" << reports::xml_escape(name) << "</text>\n";
      x += 18 + static_cast<double>(name.size()) * kCharWidth + 16;
    }
  }

  void polyline(const char* style, double x0, double width, const Axis& a,
                const std::function<double(size_t)>& value) {
    out_ << "<polyline fill=\"none\" " << style << " points=\"";
    for (size_t i = 0; i < n_; ++i)
      out_ << x0 + width * x_frac(i) << "," << y_of(a, value(i)) << " ";
    out_ << "\"/>\n";
  }

  // Each point's "1.9x (95.2%)" label above it, else below it, else left out where it would
  // overlap one already placed.
  void speedup_labels(double x0, double width, const Axis& sa) {
    std::vector<Box> placed;
    auto clear = [&](const Box& b) {
      for (const Box& p : placed) {
        if (b.x0 < p.x1 && p.x0 < b.x1 && b.y0 < p.y1 && p.y0 < b.y1) return false;
      }
      return true;
    };
    for (size_t i = 0; i < n_; ++i) {
      const double px = x0 + width * x_frac(i), py = y_of(sa, ok_[i]->speedup);
      out_ << "<circle cx=\"" << px << "\" cy=\"" << py << "\" r=\"4\" fill=\"#1f77b4\"/>\n";
      std::string tag = reports::shortest(std::round(ok_[i]->speedup * 100) / 100) + "x";
      if (ok_[i]->efficiency >= 0)
        tag += " (" + reports::shortest(std::round(ok_[i]->efficiency * 1000) / 10) + "%)";
      const double w = static_cast<double>(tag.size()) * kCharWidth * 0.92;       // 11 px text
      const double cx = std::clamp(px, x0 + 4 + w / 2, x0 + width + 20 - w / 2);  // in the panel
      for (double dy : {-10.0, 20.0}) {
        const Box b{cx - w / 2, py + dy - 11, cx + w / 2, py + dy + 2};
        if (!clear(b)) continue;
        placed.push_back(b);
        out_ << "<text x=\"" << cx << "\" y=\"" << py + dy
             << "\" text-anchor=\"middle\" font-size=\"11\">" << tag << "</text>\n";
        break;
      }
    }
  }

  // Left: speedup (and ideal), log-log when it spans a decade-scale ratio.
  void speedup_panel() {
    double smin = 1, smax = 1;
    for (const auto* row : ok_) {
      smin = std::min(smin, row->speedup);
      smax = std::max(smax, row->speedup);
    }
    if (scaling_ && !ok_.empty())
      smax = std::max(smax, static_cast<double>(ok_.back()->gpus) / ok_.front()->gpus);
    const Axis sa = make_axis(smin, smax, scaling_);
    double x0 = 0, width = 0;
    axes(x0, width, kLeft,
         std::string("speedup over the first point") + (sa.log ? " (log scale)" : ""), sa, true);
    legend(
        x0, kTop - 34,
        {{scaling_ ? "speedup (label: efficiency)" : "speedup",
          "<line x1=\"0\" y1=\"6\" x2=\"14\" y2=\"6\" stroke=\"#1f77b4\" stroke-width=\"2\"/>"}});
    if (scaling_)
      legend(x0, kTop - 16,
             {{"ideal (linear scaling)",
               "<line x1=\"0\" y1=\"6\" x2=\"14\" y2=\"6\" stroke=\"#999\" "
               "stroke-dasharray=\"4,3\"/>"}});
    if (scaling_ && !ok_.empty()) {
      polyline("stroke=\"#999\" stroke-dasharray=\"6,4\"", x0, width, sa,
               [&](size_t i) { return static_cast<double>(ok_[i]->gpus) / ok_.front()->gpus; });
    }
    polyline("stroke=\"#1f77b4\" stroke-width=\"2\"", x0, width, sa,
             [&](size_t i) { return ok_[i]->speedup; });
    speedup_labels(x0, width, sa);
  }

  // Right: step time split, stacked bars in ms, one colour per category.
  void time_panel() {
    double tmax = 0;
    for (const auto* row : ok_)
      tmax = std::max(tmax, (row->compute + row->exposed_communication + row->idle).ms());
    const Axis ta = make_axis(0, tmax, false);
    double x1 = 0, width1 = 0;
    axes(x1, width1, kLeft + kPanelW + kGap, "step time per GPU (ms)", ta, false);
    const char* colours[3] = {"#2ca02c", "#d62728", "#bbbbbb"};
    const char* names[3] = {"compute", "exposed communication", "idle"};
    std::vector<std::pair<std::string, std::string>> items;
    for (int p = 0; p < 3; ++p)
      items.emplace_back(
          names[p], std::string("<rect width=\"12\" height=\"12\" fill=\"") + colours[p] + "\"/>");
    legend(x1, kTop - 34, items);
    const double bar = width1 / static_cast<double>(std::max<size_t>(n_, 1)) * 0.6;
    for (size_t i = 0; i < n_; ++i) {
      double base_ms = 0;
      const double parts[3] = {ok_[i]->compute.ms(), ok_[i]->exposed_communication.ms(),
                               ok_[i]->idle.ms()};
      for (int p = 0; p < 3; ++p) {
        const double y0 = y_of(ta, base_ms + parts[p]);
        out_ << "<rect x=\"" << x1 + width1 * x_frac(i, false) - bar / 2 << "\" y=\"" << y0
             << "\" width=\"" << bar << "\" height=\"" << y_of(ta, base_ms) - y0 << "\" fill=\""
             << colours[p] << "\"><title>" << names[p] << ": " << reports::shortest(parts[p])
             << " ms</title></rect>\n";
        base_ms += parts[p];
      }
    }
  }

  std::ostream& out_;
  const SweepResult& r_;
  std::vector<const SweepRow*> ok_;
  size_t n_ = 0;
  bool scaling_ = false, rotate_ = false, log_x_ = false;
  std::string xlabel_;
  double xtick_h_ = 18;
};

}  // namespace

void write_sweep_svg(std::ostream& out, const SweepResult& r) { SweepSvg(out, r).write(); }

}  // namespace cs::planner
