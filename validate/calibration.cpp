#include "validate/calibration.h"

#include <algorithm>
#include <ctime>
#include <map>

#include "common/error.h"
#include "models/model_work.h"

namespace cs::validate {
namespace {

constexpr int kRepeats = 7;
constexpr int64_t kGemmAxis[] = {128, 256, 512, 1024};
constexpr int64_t kAttentionSeq[] = {64, 128, 256, 512, 1024};
constexpr int64_t kAttentionHeadDim = 64, kAttentionItems = 8;
constexpr int64_t kStreamBytes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
constexpr int64_t kOptimizerParams[] = {256 << 10, 1 << 20, 4 << 20};
constexpr int64_t kAllReduceKiB[] = {64, 256, 1024, 4096, 16384};
// Interference suite, in cycles of four 256 x 1024 x 1024 GEMMs (0.5 GFLOP, a few ms on one
// core): a 1 MiB all-reduce starts when the first ends and runs beside the next (as DDP's bucket
// all-reduces start when their gradients are ready), and another starts when the fourth ends with
// the next cycle waiting for it (an all-reduce on an idle rank). Measuring each loaded all-reduce
// and each slowed GEMM against its own cycle's undisturbed twin cancels the drift of a shared
// machine's speed between cycles.
constexpr struct {
  int64_t m, n, k;
} kLoadGemm{256, 1024, 1024};
constexpr int kLoadCycles = 16;
constexpr size_t kLoadGemmsPerCycle = 4;
constexpr int64_t kLoadAllReduceBytes = 1 << 20;

// Least-squares line y = a + b x.
std::pair<double, double> line_fit(const std::vector<std::pair<double, double>>& xy) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const auto n = static_cast<double>(xy.size());
  for (const auto& [x, y] : xy) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  return {(sy - b * sx) / n, b};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

// The suites' ops, priced as the model prices its own (the cpu backend computes in fp32).
constexpr model::OpFactory kOps{ir::DType::fp32, 4};

struct Shape {
  int64_t m, n, k;
};
// The GEMM grid, every combination of kGemmAxis.
std::vector<Shape> gemm_grid() {
  std::vector<Shape> out;
  for (int64_t m : kGemmAxis) {
    for (int64_t n : kGemmAxis) {
      for (int64_t k : kGemmAxis) out.push_back({m, n, k});
    }
  }
  return out;
}

std::vector<ir::RankId> all_ranks(int ranks) {
  std::vector<ir::RankId> out(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) out[static_cast<size_t>(r)] = static_cast<ir::RankId>(r);
  return out;
}

std::string gemm_name(const Shape& g) {
  return "gemm." + std::to_string(g.m) + "." + std::to_string(g.n) + "." + std::to_string(g.k);
}

// Each benchmark's median over its repeats on each rank, then the slowest rank's: the simulator
// treats ranks as identical devices, and a synchronous step runs at the pace of its slowest rank
// (the cores of a cloud VM do not run at one speed: other tenants share them). The median, not
// the fastest repeat, is the statistic `validate --measured` compares against (the median step).
std::map<std::string, double> typical_times(const TaskDurations& d) {
  std::map<std::pair<std::string, ir::RankId>, std::vector<double>> all;
  for (ir::TaskId t = 0; t < d.graph->size(); ++t) {
    if (d.graph->task(t).kind == ir::TaskKind::memory) continue;
    all[{d.graph->task_name(t), d.graph->task(t).rank}].push_back(d.end[t] - d.start[t]);
  }
  std::map<std::string, double> out;
  for (auto& [key, v] : all) out[key.first] = std::max(out[key.first], median(v));
  return out;
}

double at(const std::map<std::string, double>& m, const std::string& name) {
  const auto it = m.find(name);
  if (it == m.end()) throw UserError("calibration: the measurements have no '" + name + "' benchmark (a suite from another version?)");
  return it->second;
}

// The fraction of [s, e] that intervals of `spans` (disjoint: one stream's tasks) cover.
double covered(const std::vector<std::pair<double, double>>& spans, double s, double e) {
  double inside = 0;
  for (const auto& [a, b] : spans) inside += std::max(0.0, std::min(b, e) - std::max(a, s));
  return e > s ? inside / (e - s) : 0.0;
}

// The interference suite's two slow-downs. Per rank and cycle: the all-reduce beside a GEMM
// against the one on an idle rank, and each GEMM an all-reduce overlapped against the cycle's
// undisturbed GEMMs, summed over cycles. A GEMM overlapped for T wall seconds at speed
// 1 / (1 + s) takes T s / (1 + s) longer: x = extra / T, s = x / (1 - x).
cost::Interference measure_interference(const TaskDurations& d) {
  const ir::TaskGraph& g = *d.graph;
  double loaded_time = 0, idle_time = 0, extra = 0, overlap = 0;
  for (ir::RankId r = 0; r < g.ranks(); ++r) {
    std::vector<ir::TaskId> gemms, loaded, idle;
    std::vector<std::pair<double, double>> comm_spans;
    for (ir::TaskId t = 0; t < g.size(); ++t) {
      if (g.task(t).rank != r) continue;
      if (g.task(t).kind == ir::TaskKind::compute) gemms.push_back(t);
      else if (g.task_name(t) == "load.all_reduce") loaded.push_back(t);
      else idle.push_back(t);
      if (g.task(t).kind == ir::TaskKind::collective) comm_spans.emplace_back(d.start[t], d.end[t]);
    }
    std::vector<std::pair<double, double>> gemm_spans;
    for (ir::TaskId t : gemms) gemm_spans.emplace_back(d.start[t], d.end[t]);
    // Cycle 0 is left out: its all-reduces also connect the ranks.
    for (size_t c = 1; c < loaded.size() && c < idle.size(); ++c) {
      const ir::TaskId l = loaded[c], i = idle[c];
      // "Beside a GEMM": for all but the 5% of its time the stream needs between two GEMMs.
      if (covered(gemm_spans, d.start[l], d.end[l]) >= 0.95 && covered(gemm_spans, d.start[i], d.end[i]) == 0) {
        loaded_time += d.end[l] - d.start[l];
        idle_time += d.end[i] - d.start[i];
      }
    }
    for (size_t c = kLoadGemmsPerCycle; c + kLoadGemmsPerCycle <= gemms.size(); c += kLoadGemmsPerCycle) {
      std::vector<double> undisturbed;
      std::vector<std::pair<double, double>> touched;  // (duration, overlapped time)
      for (size_t j = c; j < c + kLoadGemmsPerCycle; ++j) {
        const double s = d.start[gemms[j]], e = d.end[gemms[j]];
        const double f = covered(comm_spans, s, e);
        if (f == 0) undisturbed.push_back(e - s);
        else touched.emplace_back(e - s, f * (e - s));
      }
      if (undisturbed.empty()) continue;
      const double ref = median(undisturbed);
      for (const auto& [dur, ov] : touched) {
        extra += dur - ref;
        overlap += ov;
      }
    }
  }
  cost::Interference out;
  // Totals, not medians: a step pays for every slow all-reduce, the long tail included.
  if (overlap > 0) {
    // x = 0.9 (s = 9) caps what one noisy suite can claim: compute at a tenth of its speed.
    const double x = std::clamp(extra / overlap, 0.0, 0.9);
    out.compute_slowdown = x / (1 - x);
  }
  if (idle_time > 0) out.comm_slowdown = std::max(0.0, loaded_time / idle_time - 1);
  return out;
}

}  // namespace

ir::TaskGraph calibration_graph(const std::string& suite, int ranks) {
  if (ranks < 1 || ranks > 64) throw UserError("calibration: ranks must be 1..64, got " + std::to_string(ranks));
  ir::TaskGraph g(static_cast<ir::RankId>(ranks));
  if (suite == "compute") {
    const auto s = g.add_stream("compute");
    const auto fp32 = model::precision_info(model::Precision::fp32);
    for (ir::RankId r = 0; r < static_cast<ir::RankId>(ranks); ++r) {
      for (int rep = 0; rep < kRepeats; ++rep) {
        for (const Shape& x : gemm_grid()) g.add_compute(r, s, kOps.gemm(x.m, x.n, x.k), g.label(gemm_name(x), ir::Phase::other));
        for (int64_t seq : kAttentionSeq) {
          g.add_compute(r, s, kOps.attention(kAttentionItems, seq, kAttentionHeadDim, 1.0), g.label("attention." + std::to_string(seq), ir::Phase::other));
        }
        for (int64_t bytes : kStreamBytes) {
          g.add_compute(r, s, kOps.memory_bound(ir::OpClass::elementwise, bytes), g.label("memory." + std::to_string(bytes), ir::Phase::other));
        }
        for (int64_t params : kOptimizerParams) {
          // The executor's AdamW walks the rank's parameters and gradients: allocate them first.
          g.add_memory(r, s, 4 * params, ir::MemoryCategory::parameters, g.label("params", ir::Phase::other));
          g.add_memory(r, s, 4 * params, ir::MemoryCategory::gradients, g.label("grads", ir::Phase::other));
          g.add_compute(r, s, model::optimizer_op(params, fp32), g.label("optimizer." + std::to_string(params), ir::Phase::other));
          g.add_memory(r, s, -4 * params, ir::MemoryCategory::gradients, g.label("grads", ir::Phase::other));
          g.add_memory(r, s, -4 * params, ir::MemoryCategory::parameters, g.label("params", ir::Phase::other));
        }
        for (int i = 0; i < 4; ++i) g.add_compute(r, s, kOps.memory_bound(ir::OpClass::elementwise, 8), g.label("empty", ir::Phase::other));
      }
    }
  } else if (suite == "collectives") {
    if (ranks < 2) throw UserError("calibration: the collectives suite needs at least 2 ranks");
    const auto s = g.add_stream("comm");
    const std::vector<ir::RankId> all = all_ranks(ranks);
    const auto group = g.group(all);
    for (int rep = 0; rep < kRepeats; ++rep) {
      for (int64_t kib : kAllReduceKiB) {
        const auto c = g.new_collective(ir::CollectiveType::all_reduce, Bytes{kib << 10}, group);
        for (ir::RankId r : all) g.add_collective(r, s, c, g.label("all_reduce." + std::to_string(kib), ir::Phase::other));
      }
    }
  } else if (suite == "interference") {
    if (ranks < 2) throw UserError("calibration: the interference suite needs at least 2 ranks");
    const auto cs = g.add_stream("compute");
    const auto ks = g.add_stream("comm");
    const std::vector<ir::RankId> all = all_ranks(ranks);
    const auto group = g.group(all);
    std::vector<ir::TaskId> idle_before(static_cast<size_t>(ranks), UINT32_MAX);
    for (int cycle = 0; cycle < kLoadCycles; ++cycle) {
      std::vector<std::vector<ir::TaskId>> gemms(static_cast<size_t>(ranks));
      for (ir::RankId r : all) {
        for (size_t i = 0; i < kLoadGemmsPerCycle; ++i) {
          const auto t = g.add_compute(r, cs, kOps.gemm(kLoadGemm.m, kLoadGemm.n, kLoadGemm.k), g.label("load.gemm", ir::Phase::other));
          if (i == 0 && idle_before[r] != UINT32_MAX) g.add_dependency(idle_before[r], t);
          gemms[r].push_back(t);
        }
      }
      const auto beside = g.new_collective(ir::CollectiveType::all_reduce, Bytes{kLoadAllReduceBytes}, group);
      const auto idle = g.new_collective(ir::CollectiveType::all_reduce, Bytes{kLoadAllReduceBytes}, group);
      for (ir::RankId r : all) {
        g.add_dependency(gemms[r][0], g.add_collective(r, ks, beside, g.label("load.all_reduce", ir::Phase::other)));
        idle_before[r] = g.add_collective(r, ks, idle, g.label("idle.all_reduce", ir::Phase::other));
        g.add_dependency(gemms[r].back(), idle_before[r]);
      }
    }
  } else {
    throw UserError("unknown calibration suite '" + suite + "'; valid: compute, collectives, interference");
  }
  g.finalize();
  return g;
}

cost::Profile fit_profile(const Measurements& meas, const std::string& measured_on) {
  const auto c = typical_times(meas.compute);
  const double gap = at(c, "empty");
  // Time beyond the per-task gap; at least 1 ns, so that a benchmark as fast as an empty task
  // cannot divide by zero.
  auto work_time = [&](const std::string& name) { return std::max(at(c, name) - gap, 1e-9); };

  // Peaks: the best GEMM rate and the best streaming rate; every table is relative to them.
  double peak = 0, bandwidth = 0;
  for (const Shape& x : gemm_grid()) peak = std::max(peak, kOps.gemm(x.m, x.n, x.k).flops.value / work_time(gemm_name(x)));
  for (int64_t bytes : kStreamBytes) bandwidth = std::max(bandwidth, static_cast<double>(bytes) / work_time("memory." + std::to_string(bytes)));

  cost::Profile p;
  p.name = "cpu";
  p.measured_on = measured_on;
  p.date = today();
  p.device.name = "cpu";
  p.device.description = measured_on;
  p.device.fp32 = p.device.tf32 = p.device.bf16 = p.device.fp8 = {peak};  // the cpu backend runs every GEMM in fp32
  p.device.hbm_bandwidth = {bandwidth};
  p.compute.launch_gap = SimTime::from_seconds(gap);
  // The closed-form figures stay as a fallback for anything the tables do not cover.
  p.compute.gemm_max = 1.0;
  p.compute.gemm_half_flops = 0.0;
  p.compute.memory = 1.0;

  std::vector<cost::GemmPoint> gemm;
  for (const Shape& x : gemm_grid()) gemm.push_back({x.m, x.n, x.k, kOps.gemm(x.m, x.n, x.k).flops.value / work_time(gemm_name(x)) / peak});
  p.compute.gemm_table = cost::GemmEfficiencyGrid(std::move(gemm));
  std::vector<std::pair<double, double>> attention, memory, optimizer;
  for (int64_t seq : kAttentionSeq) {
    const double f = kOps.attention(kAttentionItems, seq, kAttentionHeadDim, 1.0).flops.value;
    attention.emplace_back(f, f / work_time("attention." + std::to_string(seq)) / peak);
  }
  for (int64_t bytes : kStreamBytes) {
    memory.emplace_back(static_cast<double>(bytes), static_cast<double>(bytes) / work_time("memory." + std::to_string(bytes)) / bandwidth);
  }
  const auto fp32 = model::precision_info(model::Precision::fp32);
  for (int64_t params : kOptimizerParams) {
    const auto b = static_cast<double>(model::optimizer_op(params, fp32).bytes.count);
    optimizer.emplace_back(b, b / work_time("optimizer." + std::to_string(params)) / bandwidth);
  }
  p.compute.attention = attention.back().second;  // fallbacks: the largest measured point
  p.compute.attention_curve = cost::EfficiencyCurve(attention);
  p.compute.memory_curve = cost::EfficiencyCurve(memory);
  p.compute.optimizer_curve = cost::EfficiencyCurve(optimizer);

  if (meas.collectives) {
    const auto k = typical_times(*meas.collectives);
    std::vector<std::pair<double, double>> ar;
    for (int64_t kib : kAllReduceKiB) ar.emplace_back(static_cast<double>(kib << 10), at(k, "all_reduce." + std::to_string(kib)));
    const auto [alpha, beta] = line_fit(ar);
    // nccl-tests' bus bytes of an all-reduce: 2 (n - 1) / n of the buffer.
    const int n = static_cast<int>(meas.collectives->graph->ranks());
    const double bus = 2.0 * (n - 1) / n;
    p.collectives = cost::MeasuredCollectives{SimTime::from_seconds(std::max(0.0, alpha)), {bus / beta}};
  }
  if (meas.interference) p.interference = measure_interference(*meas.interference);
  return p;
}

}  // namespace cs::validate
