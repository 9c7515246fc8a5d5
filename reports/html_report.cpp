#include "reports/html_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "common/units.h"
#include "reports/svg.h"

namespace cs::reports {
namespace {

constexpr double kChartWidth = 960;  // px, every chart
constexpr double kLeft = 150;        // px for row labels
constexpr double kRight = 20;
constexpr double kPlotWidth = kChartWidth - kLeft - kRight;

// One colour per category, the same in every chart and legend.
constexpr const char* kCompute = "#2ca02c";
constexpr const char* kExposed = "#d62728";
constexpr const char* kIdle = "#bdbdbd";
constexpr std::array<const char*, 4> kPhaseColour = {"#1f77b4", "#ff7f0e", "#9467bd",
                                                     "#8c564b"};  // ir::Phase order
constexpr std::array<const char*, ir::kMemoryCategoryCount> kMemoryColour = {
    "#1f77b4", "#ff7f0e", "#9467bd", "#2ca02c", "#d62728", "#8c564b", "#e377c2", "#7f7f7f"};

std::string num(double v, const char* f = "%.1f") {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Ticks at 1, 2 or 5 times a power of ten, about `count` of them from 0 to at least `v`.
std::vector<double> ticks(double v, int count = 6) {
  if (!(v > 0)) return {0, 1};
  const double step = nice_step(v, count);
  std::vector<double> out;
  for (double t = 0; t <= v + step * 1e-9; t += step) out.push_back(t);
  if (out.back() < v) out.push_back(out.back() + step);
  return out;
}

void legend(std::ostream& out, double x, double y,
            const std::vector<std::pair<std::string, const char*>>& items) {
  for (const auto& [name, colour] : items) {
    out << "<rect x=\"" << x << "\" y=\"" << y - 10 << "\" width=\"12\" height=\"12\" fill=\""
        << colour << "\"/>"
        << "<text x=\"" << x + 16 << "\" y=\"" << y << "\">" << xml_escape(name) << "</text>\n";
    x += 16 + 7.0 * static_cast<double>(name.size()) +
         18;  // ~7 px per character at 12 px sans-serif
  }
}

// A time axis in ms under a plot of `height` starting at `top`.
// The axis spans exactly the step; ticks at round values inside it.
void time_axis(std::ostream& out, double top, double height, double step_ms) {
  auto t = ticks(step_ms, 8);
  while (t.size() > 1 && t.back() > step_ms * (1 + 1e-9)) t.pop_back();
  const double span = std::max(step_ms, 1e-12);
  for (double v : t) {
    const double x = kLeft + kPlotWidth * v / span;
    out << "<line x1=\"" << x << "\" y1=\"" << top << "\" x2=\"" << x << "\" y2=\"" << top + height
        << "\" stroke=\"#e5e5e5\"/>"
        << "<text x=\"" << x << "\" y=\"" << top + height + 16 << "\" text-anchor=\"middle\">"
        << shortest(v) << "</text>\n";
  }
  out << "<text x=\"" << kLeft + kPlotWidth / 2 << "\" y=\"" << top + height + 36
      << "\" text-anchor=\"middle\">time in the step (ms)</text>\n";
}

void split_chart(std::ostream& out, const sim::Report& rep) {
  const size_t rows = std::min(rep.ranks.size(), kSplitRows);
  const bool dense = rows > 32;  // thin bars, a label on every 8th
  const double bar = dense ? 6 : 16, pitch = bar + (dense ? 2 : 4), top = 40;
  const double height = top + pitch * static_cast<double>(rows) + 50;
  double max_ms = rep.step_time.ms();
  out << "<h2>Step time per rank</h2>\n";
  if (rep.ranks.size() > rows)
    out << "<p class=\"note\">first " << rows << " of " << rep.ranks.size() << " ranks</p>\n";
  out << "<svg width=\"" << kChartWidth << "\" height=\"" << height << "\" viewBox=\"0 0 "
      << kChartWidth << " " << height << "\">\n";
  legend(out, kLeft, 20,
         {{"compute", kCompute},
          {"exposed communication", kExposed},
          {"idle (incl. waiting for peers)", kIdle}});
  time_axis(out, top - 4, pitch * static_cast<double>(rows) + 4, max_ms);
  const double span = std::max(max_ms, 1e-12);
  for (size_t k = 0; k < rows; ++k) {
    const auto& rr = rep.ranks[k];
    const double y = top + pitch * static_cast<double>(k);
    const double parts[3] = {rr.compute.ms(), rr.exposed_communication.ms(), rr.idle.ms()};
    const char* colours[3] = {kCompute, kExposed, kIdle};
    const char* names[3] = {"compute", "exposed communication", "idle"};
    if (!dense || k % 8 == 0) {  // 8 rows = 64 px apart: never overlapping
      out << "<text x=\"" << kLeft - 8 << "\" y=\"" << y + bar << "\" text-anchor=\"end\""
          << (dense ? " font-size=\"10\"" : "") << ">rank " << rr.cluster_rank << " (stage "
          << rr.stage << ")</text>\n";
    }
    double x = kLeft;
    for (int p = 0; p < 3; ++p) {
      const double w = kPlotWidth * parts[p] / span;
      out << "<rect x=\"" << num(x, "%.2f") << "\" y=\"" << y << "\" width=\"" << num(w, "%.2f")
          << "\" height=\"" << bar << "\" fill=\"" << colours[p] << "\" data-tip=\"rank "
          << rr.cluster_rank << ": " << names[p] << " " << num(parts[p], "%.3f") << " ms ("
          << num(100.0 * parts[p] / std::max(max_ms, 1e-12)) << "% of the step)\"/>";
      x += w;
    }
    out << "\n";
  }
  out << "</svg>\n";
}

// The ranks the timeline shows: all when few, else the first rank of each stage and then others.
std::vector<ir::RankId> timeline_rows(const sim::Report& rep) {
  std::vector<ir::RankId> rows;
  if (rep.ranks.size() <= kTimelineRows) {
    for (ir::RankId r = 0; r < rep.ranks.size(); ++r) rows.push_back(r);
    return rows;
  }
  std::vector<char> taken(rep.ranks.size(), 0);
  int last_stage = -1;
  for (ir::RankId r = 0; r < rep.ranks.size() && rows.size() < kTimelineRows; ++r) {
    if (rep.ranks[r].stage != last_stage) {
      bool seen = false;
      for (ir::RankId q : rows) seen |= rep.ranks[q].stage == rep.ranks[r].stage;
      if (!seen) {
        rows.push_back(r);
        taken[r] = 1;
      }
      last_stage = rep.ranks[r].stage;
    }
  }
  std::sort(rows.begin(), rows.end(),
            [&](ir::RankId a, ir::RankId b) { return rep.ranks[a].stage < rep.ranks[b].stage; });
  return rows;
}

// A task's span on the timeline chart: compute by phase (0..3) or communication (4).
struct Span {
  int64_t a, b;
  int phase;
};
constexpr int kCommunication = 4;
using ColumnFill = std::array<double, 5>;  // per pixel column: time per compute phase, in comm.

// Per chart row: its rank's compute and communication spans.
std::vector<std::vector<Span>> timeline_spans(const ir::TaskGraph& g, const sim::Timeline& tl,
                                              const std::vector<ir::RankId>& rows) {
  std::vector<int> row_of(g.ranks(), -1);
  for (size_t i = 0; i < rows.size(); ++i) row_of[rows[i]] = static_cast<int>(i);
  std::vector<std::vector<Span>> spans(rows.size());
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const ir::Task& task = g.task(t);
    const int row = row_of[task.rank];
    if (row < 0) continue;
    const bool comm = task.kind == ir::TaskKind::collective || task.kind == ir::TaskKind::send ||
                      task.kind == ir::TaskKind::recv;
    if (task.kind != ir::TaskKind::compute && !comm) continue;
    spans[static_cast<size_t>(row)].push_back(
        {tl.tasks[t].start.ps, tl.tasks[t].end.ps,
         comm ? kCommunication : static_cast<int>(task.phase)});
  }
  return spans;
}

// How much of each pixel column each kind of span fills.
std::vector<ColumnFill> column_fill(const std::vector<Span>& spans, size_t columns,
                                    double ps_per_px) {
  std::vector<ColumnFill> fill(columns, ColumnFill{});
  for (const Span& s : spans) {
    const double a = static_cast<double>(s.a) / ps_per_px, b = static_cast<double>(s.b) / ps_per_px;
    for (size_t c = static_cast<size_t>(std::max(0.0, a));
         c < columns && static_cast<double>(c) < b; ++c) {
      fill[c][static_cast<size_t>(s.phase)] +=
          std::min(b, static_cast<double>(c + 1)) - std::max(a, static_cast<double>(c));
    }
  }
  return fill;
}

// A column shows its dominant compute phase when compute fills at least kMinFill of it, and
// communication likewise.
constexpr double kMinFill = 0.1;
int dominant_phase(const ColumnFill& f) {
  int best = -1;
  for (int k = 0; k < kCommunication; ++k) {
    if (f[static_cast<size_t>(k)] >= kMinFill &&
        (best < 0 || f[static_cast<size_t>(k)] > f[static_cast<size_t>(best)]))
      best = k;
  }
  return best;
}

// One rectangle per run of columns of the same category (-1: nothing drawn).
template <typename CategoryOf>
void draw_runs(std::ostream& out, const std::vector<ColumnFill>& fill, CategoryOf category_of,
               double y, double h) {
  int run = -1;
  size_t from = 0;
  for (size_t c = 0; c <= fill.size(); ++c) {
    const int k = c < fill.size() ? category_of(fill[c]) : -1;
    if (k == run) continue;
    if (run >= 0) {
      out << "<rect x=\"" << kLeft + static_cast<double>(from) << "\" y=\"" << y << "\" width=\""
          << c - from << "\" height=\"" << h << "\" fill=\""
          << (run == kCommunication ? kExposed : kPhaseColour[static_cast<size_t>(run)]) << "\"/>";
    }
    run = k;
    from = c;
  }
  out << "\n";
}

void timeline_chart(std::ostream& out, const ir::TaskGraph& g, const sim::Timeline& tl,
                    const sim::Report& rep) {
  const auto rows = timeline_rows(rep);
  const double lane = 14, comm_lane = 5, pitch = lane + comm_lane + 8, top = 40;
  const double height = top + pitch * static_cast<double>(rows.size()) + 50;
  const double step_ms = rep.step_time.ms();
  const double span_ps = std::max(step_ms, 1e-12) * 1e9;
  const double ps_per_px = span_ps / kPlotWidth;
  // Per row: compute intervals by phase and communication intervals, merged below a pixel.
  const std::vector<std::vector<Span>> spans = timeline_spans(g, tl, rows);
  out << "<h2>Timeline overview</h2>\n";
  if (rows.size() < rep.ranks.size())
    out << "<p class=\"note\">" << rows.size() << " of " << rep.ranks.size()
        << " ranks: the first of each pipeline stage</p>\n";
  out << "<svg width=\"" << kChartWidth << "\" height=\"" << height << "\" viewBox=\"0 0 "
      << kChartWidth << " " << height << "\">\n";
  legend(out, kLeft, 20,
         {{"forward", kPhaseColour[0]},
          {"backward", kPhaseColour[1]},
          {"optimizer", kPhaseColour[2]},
          {"other compute", kPhaseColour[3]},
          {"communication (thin lane)", kExposed}});
  time_axis(out, top - 4, pitch * static_cast<double>(rows.size()), step_ms);
  for (size_t i = 0; i < rows.size(); ++i) {
    const double y = top + pitch * static_cast<double>(i);
    const auto& rr = rep.ranks[rows[i]];
    out << "<text x=\"" << kLeft - 8 << "\" y=\"" << y + lane - 3 << "\" text-anchor=\"end\">rank "
        << rr.cluster_rank << " (stage " << rr.stage << ")</text>\n";
    out << "<rect x=\"" << kLeft << "\" y=\"" << y << "\" width=\""
        << kPlotWidth * step_ms * 1e9 / span_ps << "\" height=\"" << lane + comm_lane + 1
        << "\" fill=\"#f4f4f4\"/>\n";
    const std::vector<ColumnFill> fill =
        column_fill(spans[i], static_cast<size_t>(kPlotWidth), ps_per_px);
    draw_runs(out, fill, dominant_phase, y, lane);
    draw_runs(
        out, fill,
        [](const ColumnFill& f) { return f[kCommunication] >= kMinFill ? kCommunication : -1; },
        y + lane + 1, comm_lane);
  }
  out << "</svg>\n";
}

// The memory chart's columns: per pixel column the category totals at the column's highest point
// (carried forward through columns without a change); a total of -1 marks a column never set.
struct MemoryColumns {
  std::vector<std::array<double, ir::kMemoryCategoryCount>> col;
  std::vector<double> total;
  size_t end = 0;  // columns up to the step's end
};

MemoryColumns memory_columns(const sim::Timeline& tl, ir::RankId r, double step_ms) {
  const double span_ms = std::max(step_ms, 1e-12);
  const size_t columns = static_cast<size_t>(kPlotWidth);
  MemoryColumns m{std::vector<std::array<double, ir::kMemoryCategoryCount>>(columns),
                  std::vector<double>(columns, -1.0), 0};
  std::array<double, ir::kMemoryCategoryCount> state{};
  size_t last_col = 0;
  bool any = false;
  auto set_column = [&](size_t k) {
    m.col[k] = state;
    m.total[k] = 0;
    for (double v : state) m.total[k] += v;
  };
  for (const sim::MemorySample& s : tl.memory_samples) {
    if (s.rank != r) continue;
    const size_t c = std::min(
        columns - 1, static_cast<size_t>(s.time.ms() / span_ms * static_cast<double>(columns)));
    for (size_t k = any ? last_col + 1 : 0; k < c; ++k) set_column(k);  // no change in these
    state[static_cast<size_t>(s.category)] =
        static_cast<double>(s.category_bytes) / (1024.0 * 1024.0 * 1024.0);
    double total = 0;
    for (double v : state) total += v;
    if (!any || c != last_col || total >= m.total[c]) set_column(c);
    last_col = c;
    any = true;
  }
  m.end =
      std::min(columns, static_cast<size_t>(step_ms / span_ms * static_cast<double>(columns)) + 1);
  for (size_t k = any ? last_col + 1 : 0; k < m.end; ++k) set_column(k);
  return m;
}

using Outline = std::vector<std::pair<double, double>>;  // (x, GiB)

// Adds a column's step from x0 to x0 + 1 at `v` to an outline.
void add_step(Outline& line, double x0, double v) {
  if (line.empty() || line.back().second != v) {
    line.emplace_back(x0, line.empty() ? v : line.back().second);
    line.emplace_back(x0, v);
  }
  line.emplace_back(x0 + 1, v);
}

// Keeps only the corners of each run (the middle points of a flat run add nothing).
Outline corners(const Outline& v) {
  Outline o;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0 && i + 1 < v.size() && v[i - 1].second == v[i].second &&
        v[i + 1].second == v[i].second)
      continue;
    o.push_back(v[i]);
  }
  return o;
}

// Category c's area, stacked: from the sum of the categories below it to that sum plus its own.
std::pair<Outline, Outline> stacked_outline(const MemoryColumns& m, int c) {
  Outline upper, lower;
  for (size_t k = 0; k < m.end; ++k) {
    if (m.total[k] < 0) continue;
    double below = 0;
    for (int q = 0; q < c; ++q) below += m.col[k][static_cast<size_t>(q)];
    const double above = below + m.col[k][static_cast<size_t>(c)];
    const double x0 = kLeft + static_cast<double>(k);
    add_step(upper, x0, above);
    add_step(lower, x0, below);
  }
  return {upper, lower};
}

void memory_chart(std::ostream& out, const sim::Timeline& tl, const sim::Report& rep,
                  const ir::TaskGraph& g) {
  const ir::RankId r = static_cast<ir::RankId>(rep.peak_index);
  const double top = 40, plot_h = 260, height = top + plot_h + 50;
  const double step_ms = rep.step_time.ms();
  const MemoryColumns columns = memory_columns(tl, r, step_ms);
  const double capacity =
      static_cast<double>(rep.memory_capacity.count) / (1024.0 * 1024.0 * 1024.0);
  const double peak = static_cast<double>(rep.peak_memory) / (1024.0 * 1024.0 * 1024.0);
  const auto yt = ticks(std::max(capacity, peak) * 1.05, 5);
  const double ymax = yt.back();
  auto py = [&](double gib) { return top + plot_h - plot_h * gib / ymax; };
  out << "<h2>Memory over time on rank " << g.cluster_rank(r) << " (the peak rank)</h2>\n";
  out << "<svg width=\"" << kChartWidth << "\" height=\"" << height << "\" viewBox=\"0 0 "
      << kChartWidth << " " << height << "\">\n";
  std::vector<std::pair<std::string, const char*>> items;
  for (int c = 0; c < ir::kMemoryCategoryCount; ++c)
    items.emplace_back(std::string(ir::to_string(static_cast<ir::MemoryCategory>(c))),
                       kMemoryColour[static_cast<size_t>(c)]);
  legend(out, kLeft, 20, items);
  for (double v : yt) {
    out << "<line x1=\"" << kLeft << "\" y1=\"" << py(v) << "\" x2=\"" << kLeft + kPlotWidth
        << "\" y2=\"" << py(v) << "\" stroke=\"#e5e5e5\"/>"
        << "<text x=\"" << kLeft - 8 << "\" y=\"" << py(v) + 4 << "\" text-anchor=\"end\">"
        << shortest(v) << "</text>\n";
  }
  out << "<text transform=\"translate(" << kLeft - 60 << "," << top + plot_h / 2
      << ") rotate(-90)\" text-anchor=\"middle\">GiB</text>\n";
  time_axis(out, top, plot_h, step_ms);
  // Stacked step areas: category c spans cumulative[c-1] .. cumulative[c], drawn as one polygon.
  for (int c = 0; c < ir::kMemoryCategoryCount; ++c) {
    auto [upper, lower] = stacked_outline(columns, c);
    const bool nonzero =
        std::any_of(upper.begin(), upper.end(), [](const auto& p) { return p.second > 0; });
    if (!nonzero) continue;
    upper = corners(upper);
    lower = corners(lower);
    out << "<polygon fill=\"" << kMemoryColour[static_cast<size_t>(c)]
        << "\" fill-opacity=\"0.85\" data-tip=\""
        << ir::to_string(static_cast<ir::MemoryCategory>(c)) << ": "
        << num(static_cast<double>(rep.ranks[r].memory.at_peak[static_cast<size_t>(c)]) /
                   (1024.0 * 1024.0 * 1024.0),
               "%.2f")
        << " GiB at the peak\" points=\"";
    for (const auto& [x, v] : upper) out << num(x, "%.1f") << "," << num(py(v), "%.1f") << " ";
    for (auto it = lower.rbegin(); it != lower.rend(); ++it)
      out << num(it->first, "%.1f") << "," << num(py(it->second), "%.1f") << " ";
    out << "\"/>\n";
  }
  if (capacity > 0) {
    out << "<line x1=\"" << kLeft << "\" y1=\"" << py(capacity) << "\" x2=\"" << kLeft + kPlotWidth
        << "\" y2=\"" << py(capacity)
        << "\" stroke=\"#000\" stroke-width=\"2\" stroke-dasharray=\"8,4\"/>"
        << "<text x=\"" << kLeft + kPlotWidth - 4 << "\" y=\"" << py(capacity) - 6
        << "\" text-anchor=\"end\">capacity " << num(capacity, "%.2f") << " GiB</text>\n";
  }
  out << "</svg>\n";
}

// An axis of the Pareto chart: from 0, or logarithmic in decades when the values span 10x or more.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double step = 0;             // linear ticks' spacing (0: a round step for the range)
  double at(double v) const {  // 0..1 along the axis
    if (log)
      return (std::log10(std::max(v, lo)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    return (v - lo) / (hi - lo);
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log) {
      const int decades = static_cast<int>(std::lround(std::log10(hi / lo)));
      for (double d = std::pow(10.0, std::floor(std::log10(lo) + 1e-9)); d <= hi * (1 + 1e-9);
           d *= 10) {
        for (double m : {1.0, 2.0, 5.0}) {
          const double v = d * m;
          if ((m == 1.0 || decades <= 3) && v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9))
            t.push_back(v);
        }
      }
      return t;
    }
    const double spacing = step > 0 ? step : nice_step(hi - lo, 6);
    for (double v = lo; v <= hi + spacing * 1e-9; v += spacing) t.push_back(v);
    return t;
  }
};

Axis make_axis(double min, double max) {
  Axis a;
  if (min > 0 && max / min >= 10) {
    a.log = true;
    a.lo = std::pow(10.0, std::floor(std::log10(min)));
    a.hi = std::pow(10.0, std::ceil(std::log10(max)));
    return a;
  }
  const double step = nice_step(std::max(max, 1e-12), 6);
  a.hi = std::ceil(max * 1.02 / step) * step;
  if (a.hi <= 0) a.hi = 1;
  return a;
}

// An axis fitted to the data (the plan's scatter plot): the values' range with kPlotMargin of it
// on each side, rounded out to round values, so that points a few percent apart do not crowd one
// corner of a plot that starts at zero; logarithmic when the values span a decade, from the round
// value (1, 2 or 5 times a power of ten) below the smallest to the one above the largest.
constexpr double kPlotMargin = 0.05;

Axis fitted_axis(double min, double max) {
  Axis a;
  if (min > 0 && max / min >= 10) {
    a.log = true;
    auto round_value = [](double v, bool up) {
      const double decade = std::pow(10.0, std::floor(std::log10(v)));
      const std::array<double, 4> steps{1, 2, 5, 10};
      if (up) {
        for (double m : steps)
          if (decade * m >= v * (1 - 1e-9)) return decade * m;
      }
      for (auto it = steps.rbegin(); it != steps.rend(); ++it)
        if (decade * *it <= v * (1 + 1e-9)) return decade * *it;
      return decade;
    };
    a.lo = round_value(min, false);
    a.hi = round_value(max, true);
    return a;
  }
  const double margin =
      max > min ? (max - min) * kPlotMargin : std::max(std::abs(max), 1.0) * kPlotMargin;
  const double lo = std::max(min - margin, min >= 0 ? 0.0 : min - margin);
  a.step = nice_step(max + margin - lo, 6);
  a.lo = std::floor(lo / a.step) * a.step;
  a.hi = std::ceil((max + margin) / a.step) * a.step;
  return a;
}

// The plan chart's key: each marker drawn as on the plot, in a row above it.
void plan_legend(std::ostream& out, double x, double y) {
  struct Item {
    const char* name;
    std::string marker;  // SVG at (0, 0), translated into place
  };
  const std::vector<Item> items = {
      {"best layout", "<circle r=\"7\" fill=\"" + std::string(kCompute) + "\" stroke=\"#000\"/>"},
      {"Pareto frontier",
       "<line x1=\"-10\" x2=\"10\" stroke=\"#1f77b4\" stroke-width=\"2\"/>"
       "<circle r=\"5\" fill=\"#1f77b4\"/>"},
      {"other layouts that fit", "<circle r=\"3\" fill=\"#9e9e9e\" fill-opacity=\"0.6\"/>"},
      {"does not fit", "<circle r=\"3\" fill=\"none\" stroke=\"" + std::string(kExposed) + "\"/>"},
      {"memory capacity",
       "<line x1=\"-10\" x2=\"10\" stroke=\"#000\" stroke-width=\"2\" stroke-dasharray=\"5,3\"/>"}};
  for (const Item& item : items) {
    out << "<g transform=\"translate(" << num(x + 10, "%.1f") << "," << num(y - 4, "%.1f") << ")\">"
        << item.marker << "</g><text x=\"" << num(x + 24, "%.1f") << "\" y=\"" << y << "\">"
        << item.name << "</text>\n";
    x += 24 + 7.0 * static_cast<double>(std::string(item.name).size()) + 22;  // ~7 px a character
  }
}

// The plan chart's axes: memory per GPU (x) and step time (y), each fitted to the points.
std::pair<Axis, Axis> plan_axes(const std::vector<PlanPoint>& points) {
  if (points.empty()) return {fitted_axis(0, 0), fitted_axis(0, 0)};
  double mem_min = 1e300, mem_max = 0, t_min = 1e300, t_max = 0;
  for (const auto& p : points) {
    mem_min = std::min(mem_min, p.memory_gib);
    mem_max = std::max(mem_max, p.memory_gib);
    t_min = std::min(t_min, p.step_ms);
    t_max = std::max(t_max, p.step_ms);
  }
  return {fitted_axis(mem_min, mem_max), fitted_axis(t_min, t_max)};
}

void pareto_heading(std::ostream& out, const PlanHtmlInput& in, const Axis& xa, const Axis& ya,
                    bool capacity_shown) {
  out << "<h2>Pareto frontier: step time against peak memory per GPU</h2>\n"
      << "<p class=\"note\">every simulated layout; the frontier joins those no other layout beats "
         "on both; axes span the points' range"
      << (xa.log || ya.log ? ", logarithmic where the values span a decade" : "");
  if (in.capacity_gib > 0 && !capacity_shown)
    out << "; memory capacity " << num(in.capacity_gib, "%.2f")
        << " GiB outside the plotted range (not drawn)";
  out << "</p>\n";
}

void pareto_chart(std::ostream& out, const PlanHtmlInput& in) {
  constexpr double left = 80, right = 20, top = 44, plot_h = 420;
  const double plot_w = kChartWidth - left - right, height = top + plot_h + 56;
  const auto axes = plan_axes(in.points);
  const Axis& xa = axes.first;
  const Axis& ya = axes.second;
  // The capacity line is drawn where it falls inside the points' range (it does whenever some
  // points fit and some do not); elsewhere the note names it.
  const bool capacity_shown =
      in.capacity_gib > 0 && in.capacity_gib >= xa.lo && in.capacity_gib <= xa.hi;
  auto px = [&](double gib) { return left + plot_w * xa.at(gib); };
  auto py = [&](double ms) { return top + plot_h * (1 - ya.at(ms)); };
  pareto_heading(out, in, xa, ya, capacity_shown);
  out << "<svg width=\"" << kChartWidth << "\" height=\"" << height << "\" viewBox=\"0 0 "
      << kChartWidth << " " << height << "\">\n";
  plan_legend(out, left, 20);
  for (double v : xa.ticks()) {
    const double x = px(v);
    out << "<line x1=\"" << num(x, "%.1f") << "\" y1=\"" << top << "\" x2=\"" << num(x, "%.1f")
        << "\" y2=\"" << top + plot_h << "\" stroke=\"#e5e5e5\"/>"
        << "<text x=\"" << num(x, "%.1f") << "\" y=\"" << top + plot_h + 16
        << "\" text-anchor=\"middle\">" << shortest(v) << "</text>\n";
  }
  for (double v : ya.ticks()) {
    const double y = py(v);
    out << "<line x1=\"" << left << "\" y1=\"" << num(y, "%.1f") << "\" x2=\"" << left + plot_w
        << "\" y2=\"" << num(y, "%.1f") << "\" stroke=\"#e5e5e5\"/>"
        << "<text x=\"" << left - 6 << "\" y=\"" << num(y + 4, "%.1f") << "\" text-anchor=\"end\">"
        << shortest(v) << "</text>\n";
  }
  out << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << top + plot_h + 40
      << "\" text-anchor=\"middle\">peak memory per GPU (GiB)" << (xa.log ? ", log scale" : "")
      << "</text>\n"
      << "<text transform=\"translate(16," << top + plot_h / 2
      << ") rotate(-90)\" text-anchor=\"middle\">step time (ms)" << (ya.log ? ", log scale" : "")
      << "</text>\n";
  if (capacity_shown) {
    const double x = px(in.capacity_gib);
    out << "<line x1=\"" << num(x, "%.1f") << "\" y1=\"" << top << "\" x2=\"" << num(x, "%.1f")
        << "\" y2=\"" << top + plot_h
        << "\" stroke=\"#000\" stroke-width=\"2\" stroke-dasharray=\"8,4\"/>"
        << "<text x=\"" << num(x - 4, "%.1f") << "\" y=\"" << top + 14
        << "\" text-anchor=\"end\">capacity " << num(in.capacity_gib, "%.2f") << " GiB</text>\n";
  }
  auto tip = [](const PlanPoint& p) {
    return xml_escape(p.layout) + ": " + num(p.step_ms, "%.3f") + " ms, " +
           num(p.memory_gib, "%.2f") + " GiB" +
           (p.rank   ? ", rank " + std::to_string(p.rank)
            : p.fits ? ""
                     : ", does not fit");
  };
  for (const auto& p : in.points) {
    if (p.frontier || p.rank == 1) continue;
    out << "<circle cx=\"" << num(px(p.memory_gib), "%.1f") << "\" cy=\""
        << num(py(p.step_ms), "%.1f") << "\" r=\"3\" "
        << (p.fits ? "fill=\"#9e9e9e\" fill-opacity=\"0.6\""
                   : "fill=\"none\" stroke=\"" + std::string(kExposed) + "\"")
        << " data-tip=\"" << tip(p) << "\"/>\n";
  }
  // The frontier as a staircase from the leanest point to the fastest.
  std::vector<const PlanPoint*> front;
  for (const auto& p : in.points) {
    if (p.frontier) front.push_back(&p);
  }
  std::sort(front.begin(), front.end(),
            [](const PlanPoint* a, const PlanPoint* b) { return a->memory_gib < b->memory_gib; });
  if (front.size() > 1) {
    out << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"";
    for (size_t i = 0; i < front.size(); ++i) {
      if (i > 0)
        out << num(px(front[i]->memory_gib), "%.1f") << ","
            << num(py(front[i - 1]->step_ms), "%.1f") << " ";
      out << num(px(front[i]->memory_gib), "%.1f") << "," << num(py(front[i]->step_ms), "%.1f")
          << " ";
    }
    out << "\"/>\n";
  }
  for (const PlanPoint* p : front) {
    if (p->rank == 1) continue;  // drawn below, on top
    out << "<circle cx=\"" << num(px(p->memory_gib), "%.1f") << "\" cy=\""
        << num(py(p->step_ms), "%.1f") << "\" r=\"5\" fill=\"#1f77b4\" data-tip=\"" << tip(*p)
        << "\"/>\n";
  }
  for (const auto& p : in.points) {
    if (p.rank != 1) continue;
    const double x = px(p.memory_gib), y = py(p.step_ms);
    const bool right_side = x < left + plot_w * 0.6;  // the label goes where there is room
    out << "<circle cx=\"" << num(x, "%.1f") << "\" cy=\"" << num(y, "%.1f") << "\" r=\"7\" fill=\""
        << kCompute << "\" stroke=\"#000\" data-tip=\"" << tip(p) << "\"/>"
        << "<text x=\"" << num(right_side ? x + 12 : x - 12, "%.1f") << "\" y=\""
        << num(y - 10, "%.1f") << "\" text-anchor=\"" << (right_side ? "start" : "end")
        << "\">best: " << xml_escape(p.layout) << "</text>\n";
  }
  out << "</svg>\n";
}

// The page's head (styles: no stylesheet is fetched) and its end with the only script, which
// shows a hovered element's figures and marks <body data-ready> once it has run.
void page_begin(std::ostream& out, const std::string& title) {
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>clustersim: "
      << xml_escape(title) << "</title>\n";
  out << "<style>\n"
         "body{font:14px/1.4 sans-serif;margin:24px;color:#222;max-width:1000px}\n"
         "h1{font-size:20px;margin:0 0 8px} h2{font-size:16px;margin:28px 0 4px}\n"
         "table.facts td{padding:1px 12px 1px 0;vertical-align:top} table.facts "
         "td:first-child{color:#666}\n"
         ".verdict{background:#fff7e0;border-left:4px solid #f0a000;padding:8px 12px;margin:12px "
         "0}\n"
         ".note{color:#666;margin:0}\n"
         "svg{font:12px sans-serif;display:block}\n"
         "#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:3px "
         "6px;border-radius:3px;font-size:12px;display:none}\n"
         ".swatch{display:inline-block;width:12px;height:12px;margin-right:8px}\n"
         "details{margin:6px 0 0} summary{cursor:pointer;color:#444}\n"
         "table.wrap{border-collapse:collapse} table.wrap td,table.wrap th{padding:2px "
         "8px;text-align:right;border-bottom:1px solid #eee}\n"
         "table.wrap td:first-child,table.wrap th:first-child{text-align:left}\n"
         "table.ranks{border-collapse:collapse} table.ranks td,table.ranks th{padding:2px "
         "8px;text-align:right;border-bottom:1px solid #eee;white-space:nowrap}\n"
         "</style></head>\n<body>\n";
}

void page_end(std::ostream& out) {
  out << "<script>\n"
         "(function(){\n"
         "  var tip = document.getElementById('tip');\n"
         "  document.addEventListener('mousemove', function(e){\n"
         "    var t = e.target && e.target.getAttribute ? e.target.getAttribute('data-tip') : "
         "null;\n"
         "    if (!t) { tip.style.display = 'none'; return; }\n"
         "    tip.textContent = t; tip.style.display = 'block';\n"
         "    tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px';\n"
         "  });\n"
         "  document.body.setAttribute('data-ready', 'yes');\n"
         "})();\n"
         "</script>\n</body></html>\n";
}

void facts_table(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& facts) {
  out << "<table class=\"facts\">\n";
  for (const auto& [k, v] : facts)
    out << "<tr><td>" << xml_escape(k) << "</td><td>" << xml_escape(v) << "</td></tr>\n";
  out << "</table>\n";
}

// `cls` "wrap": cells may wrap (wide text columns), for a table that must fit the page's width.
void data_table(std::ostream& out, const HtmlTable& t, const char* cls = "ranks") {
  out << "<table class=\"" << cls << "\"><tr>";
  for (const auto& h : t.header) out << "<th>" << xml_escape(h) << "</th>";
  out << "</tr>\n";
  for (const auto& row : t.rows) {
    out << "<tr>";
    for (const auto& c : row) out << "<td>" << xml_escape(c) << "</td>";
    out << "</tr>\n";
  }
  out << "</table>\n";
}

}  // namespace

void write_html_report(std::ostream& out, const HtmlReportInput& in) {
  const sim::Report& rep = *in.report;
  page_begin(out, in.title);
  out << "<h1>" << xml_escape(in.title) << "</h1>\n<table class=\"facts\">\n";
  for (const auto& [k, v] : in.facts)
    out << "<tr><td>" << xml_escape(k) << "</td><td>" << xml_escape(v) << "</td></tr>\n";
  out << "</table>\n";
  if (!in.bottleneck.empty()) {
    out << "<div class=\"verdict\"><b>What bounds the step</b><ul>\n";
    for (const auto& s : in.bottleneck) out << "<li>" << xml_escape(s) << "</li>\n";
    out << "</ul></div>\n";
  }
  split_chart(out, rep);
  if (in.graph && in.timeline) {
    timeline_chart(out, *in.graph, *in.timeline, rep);
    if (!in.timeline->memory_samples.empty()) memory_chart(out, *in.timeline, rep, *in.graph);
  }
  out << "<h2>Per rank (ms)</h2>\n<table "
         "class=\"ranks\"><tr><th>rank</th><th>stage</th><th>compute</th><th>communication</"
         "th><th>exposed</th>"
         "<th>idle</th><th>peer wait</th><th>overlap</th><th>peak memory</th></tr>\n";
  for (size_t k = 0; k < std::min<size_t>(rep.ranks.size(), kSplitRows); ++k) {
    const auto& rr = rep.ranks[k];
    out << "<tr><td>" << rr.cluster_rank << "</td><td>" << rr.stage << "</td><td>"
        << num(rr.compute.ms(), "%.3f") << "</td><td>" << num(rr.communication.ms(), "%.3f")
        << "</td><td>" << num(rr.exposed_communication.ms(), "%.3f") << "</td><td>"
        << num(rr.idle.ms(), "%.3f") << "</td><td>" << num(rr.peer_wait.ms(), "%.3f") << "</td><td>"
        << num(rr.overlap_percent) << "%</td><td>"
        << xml_escape(format_bytes(Bytes{rr.memory.peak})) << "</td></tr>\n";
  }
  out << "</table>\n";
  if (!in.training_run.empty()) {
    out << "<h2>The training run: time, cost and goodput under failures</h2>\n";
    facts_table(out, in.training_run);
  }
  out << "<div id=\"tip\"></div>\n";
  page_end(out);
}

void write_plan_html(std::ostream& out, const PlanHtmlInput& in) {
  page_begin(out, in.title);
  out << "<h1>" << xml_escape(in.title) << "</h1>\n";
  facts_table(out, in.facts);
  if (!in.points.empty()) pareto_chart(out, in);
  out << "<h2>Layouts that fit, best first</h2>\n";
  data_table(out, in.ranked);
  page_end(out);
}

void write_sweep_html(std::ostream& out, const SweepHtmlInput& in) {
  page_begin(out, in.title);
  out << "<h1>" << xml_escape(in.title) << "</h1>\n";
  facts_table(out, in.facts);
  out << "<h2>Scaling</h2>\n" << in.svg << "\n<h2>Points</h2>\n";
  data_table(out, in.table);
  page_end(out);
}

void write_compare_html(std::ostream& out, const CompareHtmlInput& in) {
  page_begin(out, in.title);
  out << "<h1>" << xml_escape(in.title) << "</h1>\n";
  facts_table(out, in.facts);
  out << "<h2>What changed</h2>\n";
  if (in.changes.rows.empty()) {
    out << "<p class=\"note\">nothing: the two scenarios have the same keys</p>\n";
  } else {
    data_table(out, in.changes);
  }
  out << "<h2>Side by side</h2>\n";
  data_table(out, in.figures);
  page_end(out);
}

namespace {

// One colour per source, the same in the overview, its chart and the summary (cycled beyond ten).
// (Grey comes last: it reads as "disabled".)
constexpr std::array<const char*, 10> kSourceColour = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                                       "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                                       "#bcbd22", "#7f7f7f"};
const char* source_colour(size_t i) { return kSourceColour[i % kSourceColour.size()]; }

constexpr double kLabelWidth = 380;  // px for row and source labels (left of every validate chart)
constexpr size_t kLabelChars = 52;   // ~7 px per character at 12 px sans-serif

// `s` cut to fit the label column (the whole text stays in the tooltip).
std::string fit_label(const std::string& s) {
  return s.size() <= kLabelChars ? s : s.substr(0, kLabelChars - 3) + "...";
}

std::string signed_percent(double v) { return num(v, "%+.1f") + "%"; }

// Every row's signed error, one lane per source in the source's colour: how far off and in which
// direction each source is, at a glance. The x axis is linear and always shows 0.
void validate_overview(std::ostream& out, const ValidateHtmlInput& in) {
  constexpr double top = 30, lane = 22, right = 30;
  const double plot_w = kChartWidth - kLabelWidth - right;
  double lo = 0, hi = 0;
  for (const auto& s : in.sources) {
    for (const auto& r : s.rows) {
      if (!r.run) continue;
      lo = std::min(lo, r.error_percent);
      hi = std::max(hi, r.error_percent);
    }
  }
  const double step = nice_step(std::max(hi - lo, 1.0), 8);
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step;
  if (hi - lo < step) hi = lo + step;
  auto px = [&](double e) { return kLabelWidth + plot_w * (e - lo) / (hi - lo); };
  const double plot_h = lane * static_cast<double>(in.sources.size());
  const double height = top + plot_h + 50;
  out << "<h2>Error of every row run, by source</h2>\n"
      << "<p class=\"note\">signed error, 100 (predicted / measured - 1): right of 0 the "
         "prediction is above the measurement</p>\n";
  out << "<svg class=\"overview\" width=\"" << kChartWidth << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << kChartWidth << " " << height << "\">\n";
  for (double v = lo; v <= hi + step * 1e-9; v += step) {
    const double x = px(v);
    const bool zero = std::abs(v) < step * 1e-9;
    out << "<line x1=\"" << num(x, "%.1f") << "\" y1=\"" << top << "\" x2=\"" << num(x, "%.1f")
        << "\" y2=\"" << top + plot_h << "\" stroke=\"" << (zero ? "#444" : "#e5e5e5") << "\"/>"
        << "<text x=\"" << num(x, "%.1f") << "\" y=\"" << top + plot_h + 16
        << "\" text-anchor=\"middle\">" << shortest(zero ? 0.0 : v) << "</text>\n";
  }
  out << "<text x=\"" << kLabelWidth + plot_w / 2 << "\" y=\"" << top + plot_h + 38
      << "\" text-anchor=\"middle\">signed error of the row (%)</text>\n";
  for (size_t i = 0; i < in.sources.size(); ++i) {
    const ValidateSource& s = in.sources[i];
    const double y = top + lane * static_cast<double>(i) + lane / 2;
    // The colour swatch beside each source's name is the chart's legend.
    out << "<rect x=\"8\" y=\"" << y - 6 << "\" width=\"12\" height=\"12\" fill=\""
        << source_colour(i) << "\"/>"
        << "<text x=\"26\" y=\"" << y + 4 << "\" data-tip=\"" << xml_escape(s.name) << "\">"
        << xml_escape(fit_label(s.name)) << "</text>\n";
    size_t run = 0;
    for (const auto& r : s.rows) {
      if (!r.run) continue;
      ++run;
      out << "<circle class=\"dot\" cx=\"" << num(px(r.error_percent), "%.1f") << "\" cy=\"" << y
          << "\" r=\"4\" fill=\"" << source_colour(i) << "\" fill-opacity=\"0.65\" data-tip=\""
          << xml_escape(s.name + ": " + r.label + ": " + signed_percent(r.error_percent)) << "\"/>";
    }
    if (run == 0)
      out << "<text x=\"" << kLabelWidth + 6 << "\" y=\"" << y + 4
          << "\" fill=\"#666\">no row run</text>";
    out << "\n";
  }
  out << "</svg>\n";
}

// A source with more rows than kRowChartRows: predicted against measured, one point per row, on
// the same axes (log where the values span a decade), with predicted = measured and the
// worst-row bound as lines.
constexpr size_t kRowChartRows = 60;

void validate_scatter(std::ostream& out, const ValidateSource& s,
                      const std::vector<const ValidateRow*>& rows, const char* colour,
                      const std::string& unit) {
  constexpr double left = 80, top = 44, plot = 440;
  const double height = top + plot + 56;
  double vmin = 1e300, vmax = 0;
  for (const ValidateRow* r : rows) {
    vmin = std::min({vmin, r->measured, r->predicted});
    vmax = std::max({vmax, r->measured, r->predicted});
  }
  const Axis axis = make_axis(vmin, vmax);
  auto px = [&](double v) { return left + plot * axis.at(v); };
  auto py = [&](double v) { return top + plot * (1 - axis.at(v)); };
  out << "<svg class=\"source-chart\" width=\"" << kChartWidth << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << kChartWidth << " " << height << "\">\n";
  const double lx = left + plot + 40;  // the legend, right of the square plot
  out << "<circle cx=\"" << lx + 6 << "\" cy=\"" << top + 6 << "\" r=\"4\" fill=\"" << colour
      << "\"/><text x=\"" << lx + 18 << "\" y=\"" << top + 10
      << "\">a row: predicted against measured</text>\n"
      << "<line x1=\"" << lx << "\" y1=\"" << top + 30 << "\" x2=\"" << lx + 12 << "\" y2=\""
      << top + 30 << "\" stroke=\"#000\" stroke-dasharray=\"4,3\"/><text x=\"" << lx + 18
      << "\" y=\"" << top + 34 << "\">predicted = measured</text>\n";
  if (s.bound_worst > 0) {
    out << "<line x1=\"" << lx << "\" y1=\"" << top + 54 << "\" x2=\"" << lx + 12 << "\" y2=\""
        << top + 54 << "\" stroke=\"#d62728\" stroke-dasharray=\"2,3\"/><text x=\"" << lx + 18
        << "\" y=\"" << top + 58 << "\">worst-row bound, +/-" << shortest(s.bound_worst)
        << "%</text>\n";
  }
  for (double v : axis.ticks()) {
    out << "<line x1=\"" << num(px(v), "%.1f") << "\" y1=\"" << top << "\" x2=\""
        << num(px(v), "%.1f") << "\" y2=\"" << top + plot << "\" stroke=\"#e5e5e5\"/>"
        << "<text x=\"" << num(px(v), "%.1f") << "\" y=\"" << top + plot + 16
        << "\" text-anchor=\"middle\">" << shortest(v) << "</text>"
        << "<line x1=\"" << left << "\" y1=\"" << num(py(v), "%.1f") << "\" x2=\"" << left + plot
        << "\" y2=\"" << num(py(v), "%.1f") << "\" stroke=\"#e5e5e5\"/>"
        << "<text x=\"" << left - 6 << "\" y=\"" << num(py(v) + 4, "%.1f")
        << "\" text-anchor=\"end\">" << shortest(v) << "</text>\n";
  }
  const std::string scale = axis.log ? ", log scale" : "";
  out << "<text x=\"" << left + plot / 2 << "\" y=\"" << top + plot + 40
      << "\" text-anchor=\"middle\">measured " << xml_escape(unit) << scale << "</text>\n"
      << "<text transform=\"translate(16," << top + plot / 2
      << ") rotate(-90)\" text-anchor=\"middle\">predicted " << xml_escape(unit) << scale
      << "</text>\n";
  // predicted = k measured, clipped to the plot: k = 1 and, with a bound, 1 +/- bound.
  auto ray = [&](double k, const char* stroke, const char* dash) {
    const double a = std::max(axis.lo, axis.lo / k), b = std::min(axis.hi, axis.hi / k);
    if (!(b > a)) return;
    out << "<line x1=\"" << num(px(a), "%.1f") << "\" y1=\"" << num(py(k * a), "%.1f") << "\" x2=\""
        << num(px(b), "%.1f") << "\" y2=\"" << num(py(k * b), "%.1f") << "\" stroke=\"" << stroke
        << "\" stroke-dasharray=\"" << dash << "\"/>\n";
  };
  ray(1, "#000", "4,3");
  if (s.bound_worst > 0) {
    ray(1 + s.bound_worst / 100, "#d62728", "2,3");
    if (s.bound_worst < 100) ray(1 - s.bound_worst / 100, "#d62728", "2,3");
  }
  for (const ValidateRow* r : rows) {
    out << "<circle class=\"row\" cx=\"" << num(px(r->measured), "%.1f") << "\" cy=\""
        << num(py(r->predicted), "%.1f") << "\" r=\"2.5\" fill=\"" << colour
        << "\" fill-opacity=\"0.5\" data-tip=\""
        << xml_escape(r->label + ": measured " + num(r->measured, "%.4g") + ", predicted " +
                      num(r->predicted, "%.4g") + ", error " + signed_percent(r->error_percent))
        << "\"/>";
  }
  out << "\n</svg>\n";
}

// One source: per row run, the measured value (open circle) and the prediction (filled, in the
// source's colour) joined by a line, and the signed error at the right; one line per row.
void validate_source_chart(std::ostream& out, const ValidateSource& s, size_t index) {
  constexpr double top = 44, pitch = 18, right = 80;
  const double plot_w = kChartWidth - kLabelWidth - right;
  std::vector<const ValidateRow*> rows;
  double vmin = 1e300, vmax = 0;
  for (const auto& r : s.rows) {
    if (!r.run) continue;
    rows.push_back(&r);
    vmin = std::min({vmin, r.measured, r.predicted});
    vmax = std::max({vmax, r.measured, r.predicted});
  }
  // "step time (ms)", but "tokens/s per GPU" rather than "tokens/s per GPU (tokens/s/GPU)".
  const std::string unit = s.unit.size() <= 3 && !s.unit.empty() && s.unit != s.figure
                               ? s.figure + " (" + s.unit + ")"
                               : s.figure;
  if (rows.size() > kRowChartRows) {  // a line per row would be a page per source
    validate_scatter(out, s, rows, source_colour(index), unit);
    return;
  }
  const double plot_h = pitch * static_cast<double>(std::max<size_t>(rows.size(), 1));
  const double height = top + plot_h + 50;
  out << "<svg class=\"source-chart\" width=\"" << kChartWidth << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << kChartWidth << " " << height << "\">\n";
  const char* colour = source_colour(index);
  out << "<circle cx=\"" << kLabelWidth + 6
      << "\" cy=\"16\" r=\"4\" fill=\"#fff\" stroke=\"#000\" stroke-width=\"1.5\"/><text x=\""
      << kLabelWidth + 16 << "\" y=\"20\">measured</text>"
      << "<circle cx=\"" << kLabelWidth + 96 << "\" cy=\"16\" r=\"4\" fill=\"" << colour
      << "\"/><text x=\"" << kLabelWidth + 106 << "\" y=\"20\">predicted</text>"
      << "<text x=\"" << kChartWidth - 10 << "\" y=\"20\" text-anchor=\"end\">error</text>\n";
  if (rows.empty()) {
    out << "<text x=\"" << kLabelWidth << "\" y=\"" << top + 12
        << "\" fill=\"#666\">no row could be run (the table below says why)</text>\n</svg>\n";
    return;
  }
  const Axis axis = make_axis(vmin, vmax);
  auto px = [&](double v) { return kLabelWidth + plot_w * axis.at(v); };
  for (double v : axis.ticks()) {
    const double x = px(v);
    out << "<line x1=\"" << num(x, "%.1f") << "\" y1=\"" << top - 6 << "\" x2=\"" << num(x, "%.1f")
        << "\" y2=\"" << top + plot_h << "\" stroke=\"#e5e5e5\"/>"
        << "<text x=\"" << num(x, "%.1f") << "\" y=\"" << top + plot_h + 16
        << "\" text-anchor=\"middle\">" << shortest(v) << "</text>\n";
  }
  out << "<text x=\"" << kLabelWidth + plot_w / 2 << "\" y=\"" << top + plot_h + 38
      << "\" text-anchor=\"middle\">" << xml_escape(unit) << (axis.log ? ", log scale" : "")
      << "</text>\n";
  for (size_t k = 0; k < rows.size(); ++k) {
    const ValidateRow& r = *rows[k];
    const double y = top + pitch * static_cast<double>(k) + pitch / 2;
    const bool beyond = s.bound_worst > 0 && std::abs(r.error_percent) > s.bound_worst;
    const std::string tip =
        xml_escape(r.label + ": measured " + num(r.measured, "%.4g") + ", predicted " +
                   num(r.predicted, "%.4g") + " " + (s.unit.empty() ? s.figure : s.unit) +
                   ", error " + signed_percent(r.error_percent));
    out << "<text x=\"" << kLabelWidth - 10 << "\" y=\"" << y + 4
        << "\" text-anchor=\"end\" data-tip=\"" << tip << "\">" << xml_escape(fit_label(r.label))
        << "</text>"
        << "<line x1=\"" << num(px(r.measured), "%.1f") << "\" y1=\"" << y << "\" x2=\""
        << num(px(r.predicted), "%.1f") << "\" y2=\"" << y << "\" stroke=\"" << colour
        << "\" stroke-width=\"2\" stroke-opacity=\"0.5\"/>"
        << "<circle cx=\"" << num(px(r.measured), "%.1f") << "\" cy=\"" << y
        << "\" r=\"4\" fill=\"#fff\" stroke=\"#000\" stroke-width=\"1.5\" data-tip=\"" << tip
        << "\"/>"
        << "<circle class=\"row\" cx=\"" << num(px(r.predicted), "%.1f") << "\" cy=\"" << y
        << "\" r=\"4\" fill=\"" << colour << "\" data-tip=\"" << tip << "\"/>"
        << "<text x=\"" << kChartWidth - 10 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\""
        << (beyond ? " fill=\"#d62728\" font-weight=\"bold\"" : "") << ">"
        << signed_percent(r.error_percent) << "</text>\n";
  }
  out << "</svg>\n";
  if (s.bound_worst > 0)
    out << "<p class=\"note\">errors in bold red are beyond the worst-row bound of "
        << shortest(s.bound_worst) << "%</p>\n";
}

// Every row of a source: its figures, or why it was not run.
void validate_rows_table(std::ostream& out, const ValidateSource& s) {
  size_t not_run = 0;
  for (const auto& r : s.rows) not_run += r.run ? 0 : 1;
  out << "<details><summary>every row (" << s.rows.size() << "; " << not_run
      << " not run)</summary>\n";
  HtmlTable t;
  t.header = {"row",   "label",   "measured", "predicted",
              "error", "profile", "stack",    "not run because"};
  for (const ValidateRow& r : s.rows) {
    t.rows.push_back(
        {std::to_string(r.index), r.label, r.measured > 0 ? num(r.measured, "%.4g") : "-",
         r.run ? num(r.predicted, "%.4g") : "-", r.run ? signed_percent(r.error_percent) : "-",
         r.profile.empty() ? "-" : r.profile, r.stack.empty() ? "-" : r.stack, r.note});
  }
  data_table(out, t);
  out << "</details>\n";
}

}  // namespace

void write_validate_html(std::ostream& out, const ValidateHtmlInput& in) {
  page_begin(out, in.title);
  out << "<h1>" << xml_escape(in.title) << "</h1>\n";
  facts_table(out, in.facts);
  out << "<h2>Summary</h2>\n";
  data_table(out, in.summary, "wrap");
  validate_overview(out, in);
  for (size_t i = 0; i < in.sources.size(); ++i) {
    const ValidateSource& s = in.sources[i];
    out << "<h2><span class=\"swatch\" style=\"background:" << source_colour(i) << "\"></span>"
        << xml_escape(s.name) << "</h2>\n";
    validate_source_chart(out, s, i);
    validate_rows_table(out, s);
  }
  if (!in.by_profile.rows.empty()) {
    out << "<h2>Out-of-sample step-time error by profile</h2>\n<p class=\"note\">every training "
           "row of a validation source predicted with the profile (speedups excluded; calibration "
           "sources are a fit, not a prediction)</p>\n";
    data_table(out, in.by_profile, "wrap");
  }
  if (!in.by_profile_stack.rows.empty()) {
    out << "<h2>Out-of-sample step-time error by profile and software stack</h2>\n<p "
           "class=\"note\">what a simulate report's header quotes</p>\n";
    data_table(out, in.by_profile_stack, "wrap");
  }
  out << "<div id=\"tip\"></div>\n";
  page_end(out);
}

}  // namespace cs::reports
