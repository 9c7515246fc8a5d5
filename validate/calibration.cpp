#include "validate/calibration.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <ostream>

#include "common/error.h"
#include "common/limits.h"
#include "models/model_work.h"

namespace cs::validate {
namespace {

// The cpu plan. Interference suite, in cycles of four 256 x 1024 x 1024 GEMMs (0.5 GFLOP, a few
// ms on one core): a 1 MiB all-reduce starts when the first ends and runs beside the next (as
// DDP's bucket all-reduces start when their gradients are ready), and another starts when the
// fourth ends with the next cycle waiting for it (an all-reduce on an idle rank). Measuring each
// loaded all-reduce and each slowed GEMM against its own cycle's undisturbed twin cancels the
// drift of a shared machine's speed between cycles.
constexpr size_t kLoadGemmsPerCycle = 4;

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

// The suites' ops, priced as the model prices its own, in a dtype (bytes per element follow it).
model::OpFactory ops(ir::DType d) {
  const int64_t bytes = d == ir::DType::fp32 || d == ir::DType::tf32 ? 4
                        : d == ir::DType::fp8                        ? 1
                                                                     : 2;
  return {d, bytes};
}

using Shape = CalibrationPlan::Shape;
// The GEMM grid, every combination of the plan's axis.
std::vector<Shape> gemm_grid(const CalibrationPlan& plan) {
  std::vector<Shape> out;
  for (int64_t m : plan.gemm_axis) {
    for (int64_t n : plan.gemm_axis) {
      for (int64_t k : plan.gemm_axis) out.push_back({m, n, k});
    }
  }
  return out;
}

// The grid in the order it runs: small products first, so that the heaviest (which heat the GPU
// and draw its clocks down) come last in each repeat rather than before the light benchmarks.
std::vector<Shape> gemm_run_order(const CalibrationPlan& plan) {
  std::vector<Shape> out = gemm_grid(plan);
  std::stable_sort(out.begin(), out.end(), [](const Shape& a, const Shape& b) {
    return static_cast<double>(a.m) * static_cast<double>(a.n) * static_cast<double>(a.k) <
           static_cast<double>(b.m) * static_cast<double>(b.n) * static_cast<double>(b.k);
  });
  return out;
}

std::vector<ir::RankId> all_ranks(int ranks) {
  std::vector<ir::RankId> out(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) out[static_cast<size_t>(r)] = static_cast<ir::RankId>(r);
  return out;
}

// "gemm.m.n.k" on the cpu (fp32 only), "gemm.bf16.m.n.k" where the plan has several dtypes.
std::string gemm_name(const CalibrationPlan& plan, ir::DType d, const Shape& g) {
  const std::string dtype = plan.backend == "cpu" ? "" : std::string(ir::to_string(d)) + ".";
  return "gemm." + dtype + std::to_string(g.m) + "." + std::to_string(g.n) + "." +
         std::to_string(g.k);
}

// "attention.items.seq" in the plan's first dtype, "attention.tf32.items.seq" in another.
std::string attention_name(const CalibrationPlan& plan, ir::DType d, int64_t items, int64_t seq) {
  const std::string dtype = d == plan.gemm_dtypes.at(0) ? "" : std::string(ir::to_string(d)) + ".";
  return "attention." + dtype + std::to_string(items) + "." + std::to_string(seq);
}

std::vector<ir::DType> attention_dtypes(const CalibrationPlan& plan) {
  std::vector<ir::DType> out{plan.gemm_dtypes.at(0)};
  for (ir::DType d : plan.attention_dtypes) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  return out;
}

std::string probe_name(const Shape& x, bool misaligned) {
  return std::string(misaligned ? "misaligned." : "aligned.") + std::to_string(x.m) + "." +
         std::to_string(x.n) + "." + std::to_string(x.k);
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
  if (it == m.end())
    throw UserError("calibration: the measurements have no '" + name +
                    "' benchmark (a suite from another version?)");
  return it->second;
}

// The fraction of [s, e] that intervals of `spans` (disjoint: one stream's tasks) cover.
double covered(const std::vector<std::pair<double, double>>& spans, double s, double e) {
  double inside = 0;
  for (const auto& [a, b] : spans) inside += std::max(0.0, std::min(b, e) - std::max(a, s));
  return e > s ? inside / (e - s) : 0.0;
}

// GEMMs that an all-reduce overlapped, against the median of their cycle's undisturbed ones: the
// time they lost (`extra`) and the time they ran beside communication (`overlap`), added to.
void add_gemm_slowdown(const TaskDurations& d, const std::vector<ir::TaskId>& gemms,
                       const std::vector<std::pair<double, double>>& comm_spans, double& extra,
                       double& overlap) {
  for (size_t c = kLoadGemmsPerCycle; c + kLoadGemmsPerCycle <= gemms.size();
       c += kLoadGemmsPerCycle) {
    std::vector<double> undisturbed;
    std::vector<std::pair<double, double>> touched;  // (duration, overlapped time)
    for (size_t j = c; j < c + kLoadGemmsPerCycle; ++j) {
      const double s = d.start[gemms[j]], e = d.end[gemms[j]];
      const double f = covered(comm_spans, s, e);
      if (f == 0)
        undisturbed.push_back(e - s);
      else
        touched.emplace_back(e - s, f * (e - s));
    }
    if (undisturbed.empty()) continue;
    const double ref = median(undisturbed);
    for (const auto& [dur, ov] : touched) {
      extra += dur - ref;
      overlap += ov;
    }
  }
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
      if (g.task(t).kind == ir::TaskKind::compute)
        gemms.push_back(t);
      else if (g.task_name(t) == "load.all_reduce")
        loaded.push_back(t);
      else
        idle.push_back(t);
      if (g.task(t).kind == ir::TaskKind::collective) comm_spans.emplace_back(d.start[t], d.end[t]);
    }
    std::vector<std::pair<double, double>> gemm_spans;
    for (ir::TaskId t : gemms) gemm_spans.emplace_back(d.start[t], d.end[t]);
    // Cycle 0 is left out: its all-reduces also connect the ranks.
    for (size_t c = 1; c < loaded.size() && c < idle.size(); ++c) {
      const ir::TaskId l = loaded[c], i = idle[c];
      // "Beside a GEMM": for all but the 5% of its time the stream needs between two GEMMs.
      if (covered(gemm_spans, d.start[l], d.end[l]) >= 0.95 &&
          covered(gemm_spans, d.start[i], d.end[i]) == 0) {
        loaded_time += d.end[l] - d.start[l];
        idle_time += d.end[i] - d.start[i];
      }
    }
    add_gemm_slowdown(d, gemms, comm_spans, extra, overlap);
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

CalibrationPlan cpu_plan() {
  CalibrationPlan p;
  p.backend = "cpu";
  p.repeats = 7;
  p.gemm_axis = {128, 256, 512, 1024};
  p.gemm_dtypes = {ir::DType::fp32};  // the cpu backend computes in fp32
  p.attention_items = {8};
  p.attention_seq = {64, 128, 256, 512, 1024};
  p.attention_head_dim = 64;
  p.stream_bytes = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  p.optimizer_params = {256 << 10, 1 << 20, 4 << 20};
  p.all_reduce_bytes = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20};
  p.load_m = 256, p.load_n = 1024, p.load_k = 1024;
  p.load_all_reduce_bytes = 1 << 20;
  p.load_cycles = 16;
  return p;
}

CalibrationPlan cuda_plan(bool fp8) {
  CalibrationPlan p;
  p.backend = "cuda";
  // Five repeats: a GPU's speed does not drift as a shared VM's cores do; the median still drops
  // a cold first repeat.
  p.repeats = 5;
  // 256..32768 in factors of 2: GPT-2's hidden sizes (768, 1280) and their 3x / 4x multiples,
  // and the tokens of a micro-batch (1,024 at batch 1 to 32,768 at batch 32), on a log grid the
  // table interpolates (a factor of 4 between points misprices a 1,280-wide product by ~10%).
  p.gemm_axis = {256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
  p.gemm_dtypes = {ir::DType::bf16, ir::DType::fp16, ir::DType::tf32};
  if (fp8) p.gemm_dtypes.push_back(ir::DType::fp8);
  // GPT-2 small (12 heads) at batch 1 and 8, GPT-2 Large (20 heads) at seed 002's batches
  // 1, 4, 8, 16 and 32: batch x heads items of sequence 1024, head size 64.
  p.attention_items = {12, 20, 80, 96, 160, 320, 640};
  p.attention_seq = {1024};
  p.attention_head_dim = 64;
  p.stream_bytes = {int64_t{64} << 10, int64_t{1} << 20, int64_t{16} << 20, int64_t{256} << 20,
                    int64_t{4} << 30};
  p.optimizer_params = {int64_t{1} << 20, int64_t{16} << 20, int64_t{128} << 20};
  p.optimizer_state = true;
  p.all_reduce_bytes = {int64_t{1} << 20, int64_t{16} << 20, int64_t{64} << 20, int64_t{256} << 20,
                        int64_t{1} << 30};
  p.attention_dtypes = {ir::DType::fp16, ir::DType::tf32};
  // Norm and softmax rows of 1,024 floats, from 4 MiB (GPT-2 small's one micro-batch row block)
  // to 1 GiB.
  p.norm_bytes = {int64_t{4} << 20, int64_t{32} << 20, int64_t{256} << 20, int64_t{1} << 30};
  // k not a multiple of 8 (16 bytes of bf16): GPT-2's lm_head input gradient contracts over its
  // 50,257-word vocabulary; the aligned twin has k rounded up to the next multiple of 8.
  p.misaligned_probes = {{8192, 1280, 50257}, {4096, 4096, 8191}, {2048, 768, 32767}};
  p.kernels_are_executors_own = true;
  p.cool_down = true;
  // An 8192^3 bf16 GEMM (1.1 TFLOP: about 1.5 ms on an H100) and a 256 MiB all-reduce beside it.
  p.load_m = p.load_n = p.load_k = 8192;
  p.load_all_reduce_bytes = int64_t{256} << 20;
  p.load_cycles = 16;
  return p;
}

ir::TaskGraph calibration_graph(const std::string& suite, int ranks) {
  return calibration_graph(suite, ranks, cpu_plan());
}

namespace {

// The compute suite's benchmarks on one rank's stream: each kernel, then (plan.cool_down) an idle
// gap about as long.
class ComputeSuite {
 public:
  ComputeSuite(ir::TaskGraph& g, const CalibrationPlan& plan)
      : g_(g), plan_(plan), s_(g.add_stream("compute")), main_(ops(plan.gemm_dtypes.at(0))) {}

  void add_rank(ir::RankId r) {
    for (int rep = 0; rep < plan_.repeats; ++rep) light(r);
    // The GEMMs after every repeat of the light benchmarks: even at half duty the grid's largest
    // products leave an H100 hot and its clock dipping for seconds, and a light kernel measured
    // after them ran 15% slower than in a training step (attention at GPT-2 Large's shape: 1.10
    // ms against 0.93 ms, 2026-11-22), where its first repeat, measured before any of them,
    // matched the step.
    for (int rep = 0; rep < plan_.repeats; ++rep) gemms(r);
  }

 private:
  // The cool-down after a benchmark: its expected time at about the best rate an H100 reached in
  // this suite (2026-11-22: bf16 848, tf32 426, fp8 1,530 TFLOP/s; the streaming kernel 2.4
  // TB/s), rounded down so that the idle time is at least the busy time.
  void cool(ir::RankId r, const ir::ComputeOp& op) {
    if (!plan_.cool_down) return;
    const double rate = op.dtype == ir::DType::fp8 ? 1.4e15
                        : op.dtype == ir::DType::tf32 || op.dtype == ir::DType::fp32
                            ? 3.5e14
                            : 7e14;  // FLOP/s
    const double t =
        std::max(op.flops.value / rate, static_cast<double>(op.bytes.count) / 2e12);  // B/s
    if (t > 50e-6)
      g_.add_delay(r, s_, SimTime::from_seconds(t), g_.label("cool_down", ir::Phase::other));
  }
  void bench(ir::RankId r, const ir::ComputeOp& op, const std::string& name) {
    g_.add_compute(r, s_, op, g_.label(name, ir::Phase::other));
    cool(r, op);
  }
  // Streaming, norm, softmax, attention and optimizer kernels, then four empty ones.
  void light(ir::RankId r) {
    for (int64_t bytes : plan_.stream_bytes)
      bench(r, main_.memory_bound(ir::OpClass::elementwise, bytes),
            "memory." + std::to_string(bytes));
    for (int64_t bytes : plan_.norm_bytes) {
      bench(r, main_.memory_bound(ir::OpClass::norm, bytes), "norm." + std::to_string(bytes));
      bench(r, main_.memory_bound(ir::OpClass::softmax, bytes), "softmax." + std::to_string(bytes));
    }
    for (ir::DType d : attention_dtypes(plan_)) {
      for (int64_t items : plan_.attention_items) {
        for (int64_t seq : plan_.attention_seq)
          bench(r, ops(d).attention(items, seq, plan_.attention_head_dim, 1.0),
                attention_name(plan_, d, items, seq));
      }
    }
    for (int64_t params : plan_.optimizer_params) optimizer(r, params);
    for (int i = 0; i < 4; ++i)
      g_.add_compute(r, s_, main_.memory_bound(ir::OpClass::elementwise, 8),
                     g_.label("empty", ir::Phase::other));
  }
  // The executor's AdamW walks the rank's parameters and gradients (and, on cuda, keeps its
  // moments in the optimizer state): allocated first, freed after.
  void optimizer(ir::RankId r, int64_t params) {
    const auto fp32 = model::precision_info(model::Precision::fp32);
    auto memory = [&](int64_t bytes, ir::MemoryCategory c, const char* name) {
      g_.add_memory(r, s_, bytes, c, g_.label(name, ir::Phase::other));
    };
    memory(4 * params, ir::MemoryCategory::parameters, "params");
    memory(4 * params, ir::MemoryCategory::gradients, "grads");
    if (plan_.optimizer_state) memory(8 * params, ir::MemoryCategory::optimizer_state, "moments");
    g_.add_compute(r, s_, model::optimizer_op(params, fp32),
                   g_.label("optimizer." + std::to_string(params), ir::Phase::other));
    if (plan_.optimizer_state) memory(-8 * params, ir::MemoryCategory::optimizer_state, "moments");
    memory(-4 * params, ir::MemoryCategory::gradients, "grads");
    memory(-4 * params, ir::MemoryCategory::parameters, "params");
  }
  // The misaligned-K probes (each beside its aligned twin), then the GEMM grid per dtype.
  void gemms(ir::RankId r) {
    for (const Shape& x : plan_.misaligned_probes) {
      const Shape aligned{x.m, x.n, (x.k + 7) / 8 * 8};
      bench(r, main_.gemm(x.m, x.n, x.k), probe_name(x, true));
      bench(r, main_.gemm(aligned.m, aligned.n, aligned.k), probe_name(x, false));
    }
    for (ir::DType d : plan_.gemm_dtypes) {
      for (const Shape& x : gemm_run_order(plan_))
        bench(r, ops(d).gemm(x.m, x.n, x.k), gemm_name(plan_, d, x));
    }
  }

  ir::TaskGraph& g_;
  const CalibrationPlan& plan_;
  ir::StreamId s_;
  model::OpFactory main_;
};

void add_collectives_suite(ir::TaskGraph& g, int ranks, const CalibrationPlan& plan) {
  if (ranks < 2) throw UserError("calibration: the collectives suite needs at least 2 ranks");
  const auto s = g.add_stream("comm");
  const std::vector<ir::RankId> all = all_ranks(ranks);
  const auto group = g.group(all);
  for (int rep = 0; rep < plan.repeats; ++rep) {
    for (int64_t bytes : plan.all_reduce_bytes) {
      const auto c = g.new_collective(ir::CollectiveType::all_reduce, Bytes{bytes}, group);
      for (ir::RankId r : all)
        g.add_collective(r, s, c,
                         g.label("all_reduce." + std::to_string(bytes >> 10), ir::Phase::other));
    }
  }
}

// Load cycles: GEMMs on the compute stream with an all-reduce beside the first, then an
// all-reduce alone (idle), which the next cycle's GEMMs wait for.
void add_interference_suite(ir::TaskGraph& g, int ranks, const CalibrationPlan& plan) {
  // On the cpu the all-reduce needs a peer; on one GPU it is NCCL's one-rank all-reduce (a copy).
  if (ranks < 2 && plan.backend == "cpu")
    throw UserError(
        "calibration: the interference suite needs at least 2 ranks on the cpu backend");
  const model::OpFactory main = ops(plan.gemm_dtypes.at(0));
  const auto cs = g.add_stream("compute");
  const auto ks = g.add_stream("comm");
  const std::vector<ir::RankId> all = all_ranks(ranks);
  const auto group = g.group(all);
  std::vector<ir::TaskId> idle_before(static_cast<size_t>(ranks), UINT32_MAX);
  for (int cycle = 0; cycle < plan.load_cycles; ++cycle) {
    std::vector<std::vector<ir::TaskId>> gemms(static_cast<size_t>(ranks));
    for (ir::RankId r : all) {
      for (size_t i = 0; i < kLoadGemmsPerCycle; ++i) {
        const auto t = g.add_compute(r, cs, main.gemm(plan.load_m, plan.load_n, plan.load_k),
                                     g.label("load.gemm", ir::Phase::other));
        if (i == 0 && idle_before[r] != UINT32_MAX) g.add_dependency(idle_before[r], t);
        gemms[r].push_back(t);
      }
    }
    const auto beside =
        g.new_collective(ir::CollectiveType::all_reduce, Bytes{plan.load_all_reduce_bytes}, group);
    const auto idle =
        g.new_collective(ir::CollectiveType::all_reduce, Bytes{plan.load_all_reduce_bytes}, group);
    for (ir::RankId r : all) {
      g.add_dependency(gemms[r][0], g.add_collective(r, ks, beside,
                                                     g.label("load.all_reduce", ir::Phase::other)));
      idle_before[r] = g.add_collective(r, ks, idle, g.label("idle.all_reduce", ir::Phase::other));
      g.add_dependency(gemms[r].back(), idle_before[r]);
    }
  }
}

}  // namespace

ir::TaskGraph calibration_graph(const std::string& suite, int ranks, const CalibrationPlan& plan) {
  if (!limits::within(limits::kCalibrationRanks, ranks))
    throw UserError("calibration: ranks " +
                    limits::out_of_range(limits::kCalibrationRanks, std::to_string(ranks)));
  ir::TaskGraph g(static_cast<ir::RankId>(ranks));
  if (suite == "compute") {
    ComputeSuite compute(g, plan);
    for (ir::RankId r = 0; r < static_cast<ir::RankId>(ranks); ++r) compute.add_rank(r);
  } else if (suite == "collectives") {
    add_collectives_suite(g, ranks, plan);
  } else if (suite == "interference") {
    add_interference_suite(g, ranks, plan);
  } else {
    throw UserError("unknown calibration suite '" + suite +
                    "'; valid: compute, collectives, interference");
  }
  g.finalize();
  return g;
}

std::string device_preset_for_gpu(const std::string& gpu_name) {
  auto has = [&](const char* word) { return gpu_name.find(word) != std::string::npos; };
  if (has("B200")) return has("GB200") ? "gb200" : "b200";
  if (has("H200")) return "h200";
  if (has("H100")) return has("PCIe") ? "h100_pcie" : "h100_sxm";
  if (has("A100") && (has("80GB") || has("80G"))) return "a100_sxm_80gb";
  throw UserError("calibrate: no device preset for the GPU '" + gpu_name +
                  "'; known: H100 SXM (h100_sxm), H100 PCIe (h100_pcie), H200 (h200), A100 80GB "
                  "(a100_sxm_80gb), B200 (b200), GB200 (gb200)");
}

cost::Profile fit_profile(const Measurements& meas, const std::string& measured_on) {
  return fit_profile(meas, measured_on, cpu_plan());
}

cost::Profile fit_profile(const Measurements& meas, const std::string& measured_on,
                          const CalibrationPlan& plan, const cost::DeviceSpec* base) {
  const auto c = typical_times(meas.compute);
  const double gap = at(c, "empty");
  // Time beyond the per-task gap; at least 1 ns, so that a benchmark as fast as an empty task
  // cannot divide by zero.
  auto work_time = [&](const std::string& name) { return std::max(at(c, name) - gap, 1e-9); };
  auto gemm_rate = [&](ir::DType d, const Shape& x) {
    return ops(d).gemm(x.m, x.n, x.k).flops.value / work_time(gemm_name(plan, d, x));
  };

  const ir::DType main_dtype = plan.gemm_dtypes.at(0);
  double bandwidth = 0;  // the best streaming rate: the memory curves are shares of it
  for (int64_t bytes : plan.stream_bytes)
    bandwidth = std::max(bandwidth,
                         static_cast<double>(bytes) / work_time("memory." + std::to_string(bytes)));

  cost::Profile p;
  p.measured_on = measured_on;
  p.date = today();
  if (base) {
    // A GPU: the datasheet's peaks stay the profile's (MFU is quoted against them, and the
    // shipped profiles use them); every table is the measured rate as a share of its dtype's
    // datasheet peak, so a best GEMM at 86% of the datasheet reads 0.86.
    p.device = *base;
    p.name = base->name;
  } else {
    // The cpu backend runs every GEMM in fp32: its best rate over the grid is every dtype's peak.
    double best = 0;
    for (const Shape& x : gemm_grid(plan)) best = std::max(best, gemm_rate(main_dtype, x));
    p.name = plan.backend;
    p.device.name = plan.backend;
    p.device.fp32 = p.device.tf32 = p.device.bf16 = p.device.fp8 = {best};
  }
  auto peak_of = [&](ir::DType d) { return p.device.peak(d).value; };
  p.device.description = measured_on;
  p.device.hbm_bandwidth = {bandwidth};
  p.compute.launch_gap = SimTime::from_seconds(gap);
  // The closed-form figures stay as a fallback for anything the tables do not cover.
  p.compute.gemm_max = 1.0;
  p.compute.gemm_half_flops = 0.0;
  p.compute.memory = 1.0;

  for (ir::DType d : plan.gemm_dtypes) {
    std::vector<cost::GemmPoint> gemm;
    for (const Shape& x : gemm_grid(plan))
      gemm.push_back({x.m, x.n, x.k, gemm_rate(d, x) / peak_of(d)});
    if (d == main_dtype)
      p.compute.gemm_table = cost::GemmEfficiencyGrid(std::move(gemm));
    else
      p.compute.gemm_tables[d] = cost::GemmEfficiencyGrid(std::move(gemm));
  }
  if (!plan.misaligned_probes.empty()) {
    // The misaligned product's rate over its aligned twin's (k rounded up to a multiple of 8),
    // the median over the probes.
    std::vector<double> shares;
    for (const Shape& x : plan.misaligned_probes) {
      const Shape aligned{x.m, x.n, (x.k + 7) / 8 * 8};
      const double mis =
          ops(main_dtype).gemm(x.m, x.n, x.k).flops.value / work_time(probe_name(x, true));
      const double al = ops(main_dtype).gemm(aligned.m, aligned.n, aligned.k).flops.value /
                        work_time(probe_name(x, false));
      shares.push_back(std::min(1.0, mis / al));
    }
    p.compute.misaligned_gemm = median(shares);
  }

  std::map<ir::DType, cost::EfficiencyCurve> attention;
  for (ir::DType d : attention_dtypes(plan)) {
    std::vector<std::pair<double, double>> points;
    for (int64_t items : plan.attention_items) {
      for (int64_t seq : plan.attention_seq) {
        const double f = ops(d).attention(items, seq, plan.attention_head_dim, 1.0).flops.value;
        points.emplace_back(f, f / work_time(attention_name(plan, d, items, seq)) / peak_of(d));
      }
    }
    attention[d] = cost::EfficiencyCurve(points);
  }
  auto by_bytes = [&](const char* what, const std::vector<int64_t>& sizes) {
    std::vector<std::pair<double, double>> points;
    for (int64_t bytes : sizes) {
      points.emplace_back(static_cast<double>(bytes),
                          static_cast<double>(bytes) /
                              work_time(std::string(what) + "." + std::to_string(bytes)) /
                              bandwidth);
    }
    return cost::EfficiencyCurve(points);
  };
  p.compute.memory_curve = by_bytes("memory", plan.stream_bytes);
  std::vector<std::pair<double, double>> optimizer;
  const auto fp32 = model::precision_info(model::Precision::fp32);
  for (int64_t params : plan.optimizer_params) {
    const auto b = static_cast<double>(model::optimizer_op(params, fp32).bytes.count);
    optimizer.emplace_back(b, b / work_time("optimizer." + std::to_string(params)) / bandwidth);
  }
  p.compute.optimizer_curve = cost::EfficiencyCurve(optimizer);
  const cost::EfficiencyCurve norm = by_bytes("norm", plan.norm_bytes),
                              softmax = by_bytes("softmax", plan.norm_bytes);
  if (plan.kernels_are_executors_own) {
    p.executor = cost::ExecutorKernels{attention, norm, softmax};
    // A framework's attention is not measured here: the datasheet default stands until the
    // caller puts a published curve in (calibrate keeps the shipped profile's).
  } else {
    p.compute.attention_curve = attention.at(main_dtype);
    p.compute.attention =
        p.compute.attention_curve.points().back().second;  // fallback: the largest measured point
    p.compute.norm_curve = norm;
    p.compute.softmax_curve = softmax;
  }

  if (meas.collectives) {
    const auto k = typical_times(*meas.collectives);
    std::vector<std::pair<double, double>> ar;
    for (int64_t bytes : plan.all_reduce_bytes)
      ar.emplace_back(static_cast<double>(bytes),
                      at(k, "all_reduce." + std::to_string(bytes >> 10)));
    const auto [alpha, beta] = line_fit(ar);
    // nccl-tests' bus bytes of an all-reduce: 2 (n - 1) / n of the buffer.
    const int n = static_cast<int>(meas.collectives->graph->ranks());
    const double bus = 2.0 * (n - 1) / n;
    p.collectives =
        cost::MeasuredCollectives{SimTime::from_seconds(std::max(0.0, alpha)), {bus / beta}};
  }
  if (meas.interference) p.interference = measure_interference(*meas.interference);
  return p;
}

void keep_published_attention(cost::Profile& p, const cost::Profile& published) {
  p.compute.attention = published.compute.attention;
  p.compute.attention_curve = published.compute.attention_curve;
  p.compute.attention_curves = published.compute.attention_curves;
  p.compute.attention_by_head_dim =
      published.compute.attention_by_head_dim;  // PyTorch SDPA, measured
  p.compute.flash2_attention_by_head_dim = published.compute.flash2_attention_by_head_dim;
  for (const std::string& src : published.sources) {
    if (src.rfind("Attention", 0) == 0 || src.rfind("Peaks", 0) == 0) p.sources.push_back(src);
  }
}

void write_measurements_csv(std::ostream& out, const std::vector<NamedDurations>& suites) {
  out << "suite,benchmark,rank,start_s,end_s\n";
  // Microseconds at a minute into a suite (the default 6 digits kept 0.1 ms).
  const auto old_precision = out.precision(12);
  for (const auto& [suite, d] : suites) {
    for (ir::TaskId t = 0; t < d->graph->size(); ++t) {
      if (d->graph->task(t).kind == ir::TaskKind::memory) continue;
      out << suite << "," << d->graph->task_name(t) << "," << d->graph->task(t).rank << ","
          << d->start[t] << "," << d->end[t] << "\n";
    }
  }
  out.precision(old_precision);
}

}  // namespace cs::validate
