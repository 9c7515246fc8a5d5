#include "validate/calibration.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>

#include "common/error.h"

namespace cs::validate {
namespace {

constexpr int kRepeats = 5;

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
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

}  // namespace

ir::TaskGraph calibration_graph(const std::string& suite) {
  if (suite == "compute") {
    ir::TaskGraph g(1);
    const auto s = g.add_stream("compute");
    for (int rep = 0; rep < kRepeats; ++rep) {
      for (int64_t d : {64, 128, 256, 384, 512, 768, 1024}) {
        ir::ComputeOp op;
        op.op = ir::OpClass::gemm;
        op.dtype = ir::DType::fp32;
        op.m = op.n = op.k = d;
        op.flops = {2.0 * static_cast<double>(d * d * d)};
        op.bytes = {4 * 3 * d * d};
        g.add_compute(0, s, op, g.label("gemm." + std::to_string(d), ir::Phase::other));
      }
      for (int64_t mib : {1, 4, 16, 64}) {
        ir::ComputeOp op;
        op.op = ir::OpClass::elementwise;
        op.bytes = {mib << 20};
        g.add_compute(0, s, op, g.label("stream." + std::to_string(mib), ir::Phase::other));
      }
      for (int k = 0; k < 4; ++k) {
        ir::ComputeOp op;
        op.op = ir::OpClass::elementwise;
        op.bytes = {8};
        g.add_compute(0, s, op, g.label("empty", ir::Phase::other));
      }
    }
    g.finalize();
    return g;
  }
  if (suite == "collectives") {
    ir::TaskGraph g(2);
    const auto s = g.add_stream("comm");
    const auto group = g.group({0, 1});
    for (int rep = 0; rep < kRepeats; ++rep) {
      for (int64_t kib : {64, 256, 1024, 4096, 16384}) {
        const auto c = g.new_collective(ir::CollectiveType::all_reduce, Bytes{kib << 10}, group);
        for (ir::RankId r = 0; r < 2; ++r) g.add_collective(r, s, c, g.label("all_reduce." + std::to_string(kib), ir::Phase::other));
      }
    }
    g.finalize();
    return g;
  }
  throw UserError("unknown calibration suite '" + suite + "'; valid: compute, collectives");
}

cost::Profile fit_profile(const TaskDurations& compute, const TaskDurations* collectives, const std::string& measured_on) {
  // Medians over the repeats, by benchmark name.
  auto by_name = [](const TaskDurations& d, ir::RankId rank) {
    std::map<std::string, std::vector<double>> m;
    for (ir::TaskId t = 0; t < d.graph->size(); ++t) {
      if (d.graph->task(t).rank == rank) m[d.graph->task_name(t)].push_back(d.seconds[t]);
    }
    std::map<std::string, double> out;
    for (auto& [k, v] : m) out[k] = median(v);
    return out;
  };
  const auto c = by_name(compute, 0);
  const double gap = c.at("empty");
  std::vector<std::pair<double, double>> mem, gemm;
  for (int64_t mib : {1, 4, 16, 64}) mem.emplace_back(static_cast<double>(mib << 20), c.at("stream." + std::to_string(mib)) - gap);
  for (int64_t d : {64, 128, 256, 384, 512, 768, 1024}) gemm.emplace_back(2.0 * static_cast<double>(d * d * d), c.at("gemm." + std::to_string(d)) - gap);
  const auto [mem_a, mem_b] = line_fit(mem);
  const auto [gemm_a, gemm_b] = line_fit(gemm);
  cost::Profile p;
  p.name = "cpu";
  p.measured_on = measured_on;
  p.date = today();
  p.device.name = "cpu";
  p.device.description = measured_on;
  const double peak = 1.0 / gemm_b;
  p.device.fp32 = p.device.tf32 = p.device.bf16 = p.device.fp8 = {peak};  // the cpu backend runs every GEMM in fp32
  p.device.hbm_bandwidth = {1.0 / mem_b};
  p.compute.gemm_max = 1.0;
  p.compute.gemm_half_flops = std::max(0.0, gemm_a * peak);
  p.compute.attention = 1.0;
  p.compute.memory = 1.0;
  p.compute.launch_gap = SimTime::from_seconds(gap);
  (void)mem_a;
  if (collectives) {
    const auto k = by_name(*collectives, 0);
    std::vector<std::pair<double, double>> ar;
    for (int64_t kib : {64, 256, 1024, 4096, 16384}) ar.emplace_back(static_cast<double>(kib << 10), k.at("all_reduce." + std::to_string(kib)));
    const auto [alpha, beta] = line_fit(ar);  // 2 ranks: bus bytes = buffer bytes
    p.collectives = cost::MeasuredCollectives{SimTime::from_seconds(std::max(0.0, alpha)), {1.0 / beta}};
  }
  return p;
}

}  // namespace cs::validate
