#include "validate/table_validation.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "common/error.h"
#include "common/parallel.h"
#include "common/text_file.h"
#include "driver/simulation.h"
#include "sim/critical_path.h"

namespace cs::validate {
namespace {

constexpr int kTableNodeGpus = 8;  // scenario_for: one dgx_a100 node

scenario::Scenario scenario_for(const TableRow& r) {
  scenario::Scenario s;
  s.name = "vtrain row " + std::to_string(r.line);
  s.model.name = "gpt-h" + std::to_string(r.hidden) + "-l" + std::to_string(r.layers);
  s.model.family = model::Family::gpt;
  s.model.layers = static_cast<int>(r.layers);
  s.model.hidden = r.hidden;
  s.model.heads = static_cast<int>(r.heads);
  s.model.kv_heads = s.model.heads;
  s.model.ffn_hidden = 4 * r.hidden;
  s.model.vocab = 50257;
  s.model.max_seq = r.seq;
  s.model.dropout = 0.1;
  s.cluster = topo::preset_with_nodes("dgx_a100", 1);
  s.cluster_name = "dgx_a100";
  s.gpu = s.cluster.gpu;
  s.nodes = 1;
  s.gpus = r.gpus;
  s.layout.tp = r.tp;
  s.layout.pp = r.pp;
  s.layout.dp = r.dp;
  // The layout's default data parallelism (DDP) with bucketing off: one all-reduce after backward.
  s.layout.bucket_size = Bytes{int64_t{1} << 40};
  s.layout.schedule = strategy::PipelineSchedule::one_f_one_b;
  s.training.global_batch = r.global_batch;
  s.training.micro_batch = r.micro_batch;
  s.training.seq_len = r.seq;
  s.training.precision = model::Precision::mixed_fp16;
  s.training.attention =
      model::AttentionImpl::eager;  // Megatron-DeepSpeed of 2022: no FlashAttention
  s.training.recompute = model::Recompute::full;
  model::validate(s.model);
  strategy::validate(s.layout, s.training, s.model, s.gpus);
  return s;
}

RowParts parts_of(const driver::SimulationResult& r, SimTime launch_gap) {
  const sim::CriticalPath p = sim::critical_path(r.step.graph, r.timeline);
  RowParts out;
  const auto sec = [&](sim::PathClass c) { return p.time[static_cast<size_t>(c)].seconds(); };
  const auto n = [&](sim::PathClass c) {
    return static_cast<double>(p.tasks[static_cast<size_t>(c)]);
  };
  // Each compute task's time includes one launch gap: split it out as the kernel count.
  const double gap = launch_gap.seconds();
  out.gemm = sec(sim::PathClass::gemm) - gap * n(sim::PathClass::gemm);
  out.attention = sec(sim::PathClass::attention) - gap * n(sim::PathClass::attention);
  out.memory = sec(sim::PathClass::memory_bound) - gap * n(sim::PathClass::memory_bound);
  out.kernels =
      n(sim::PathClass::gemm) + n(sim::PathClass::attention) + n(sim::PathClass::memory_bound);
  out.communication = sec(sim::PathClass::communication);
  out.comm_calls = n(sim::PathClass::communication);
  // The modelled gaps stay as they are. Host waits (PathClass::host) are left out, as they were
  // before the class existed: the table's constants (table_model_factors) were fitted without
  // them.
  out.idle = sec(sim::PathClass::idle) + gap * out.kernels;
  out.simulated_s = r.report.step_time.seconds();
  return out;
}

}  // namespace

std::vector<TableRow> read_vtrain_table(const std::string& path) {
  std::istringstream in(
      read_text_file(path, "table"));  // a directory or /dev/zero: a UserError, not an empty table
  std::vector<TableRow> rows;
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f.size() != 11)
      throw UserError(path + ":" + std::to_string(no) +
                      ": expected 11 comma-separated columns (GPUs, global batch, micro batch, "
                      "hidden, heads, layers, sequence, TP, DP, PP, iteration ms), got " +
                      std::to_string(f.size()));
    TableRow r;
    r.line = no;
    try {
      size_t col = 0;
      auto integer = [&]() {
        const auto v = parse_integer(f[col++]);
        if (!v || *v < 1) throw std::invalid_argument("not a positive integer");
        return *v;
      };
      // gpus, tp, dp and pp are kept as int.
      auto small = [&]() {
        const int64_t v = integer();
        if (v > INT32_MAX) throw std::invalid_argument("above 2^31 - 1");
        return static_cast<int>(v);
      };
      r.gpus = small();
      r.global_batch = integer();
      r.micro_batch = integer();
      r.hidden = integer();
      r.heads = integer();
      r.layers = integer();
      r.seq = integer();
      r.tp = small();
      r.dp = small();
      r.pp = small();
      r.measured_s = std::stod(f[col]) * 1e-3;
      if (!(r.measured_s > 0)) throw std::invalid_argument("bad");
    } catch (const std::exception&) {
      throw UserError(path + ":" + std::to_string(no) +
                      ": expected positive numbers in every column, got '" + line + "'");
    }
    // Range checks (each a physical bound): the rows are simulated on one DGX A100 node, as
    // scenario_for builds them.
    const std::string at = path + ":" + std::to_string(no) + ": ";
    if (r.gpus > kTableNodeGpus) {
      throw UserError(at + std::to_string(r.gpus) +
                      " GPUs: the table's rows are simulated on one dgx_a100 node (at most " +
                      std::to_string(kTableNodeGpus) +
                      " GPUs); multi-node rows are not supported yet");
    }
    // Each factor at most the GPUs (checked just above), so the product cannot overflow: the
    // vtrain_table fuzzer found tp x dp x pp overflowing int64 with three 10-digit columns.
    if (r.tp > r.gpus || r.dp > r.gpus || r.pp > r.gpus || int64_t{r.tp} * r.dp * r.pp != r.gpus) {
      throw UserError(at + "TP x DP x PP = " + std::to_string(r.tp) + " x " + std::to_string(r.dp) +
                      " x " + std::to_string(r.pp) + " does not match the row's " +
                      std::to_string(r.gpus) + " GPUs");
    }
    if (r.layers > 100000 || r.heads > 65536 || r.hidden > (int64_t{1} << 20) ||
        r.seq > (int64_t{1} << 24) || r.global_batch > (int64_t{1} << 24) ||
        r.micro_batch > r.global_batch) {
      throw UserError(at +
                      "out of range: layers at most 100000, heads 65536, hidden 1048576, sequence "
                      "16777216 tokens, global batch "
                      "16777216 sequences, micro batch at most the global batch");
    }
    if (r.measured_s > 3600)
      throw UserError(at + "iteration time " + f[10] +
                      " ms is out of range: at most 3600000 ms (one hour)");
    rows.push_back(r);
  }
  if (rows.empty())
    throw UserError(
        path +
        ": no data rows (expected lines of 11 comma-separated columns; '#' starts a comment)");
  return rows;
}

std::vector<RowParts> simulate_rows(const std::vector<TableRow>& rows, unsigned threads,
                                    double gemm_half_flops) {
  std::vector<RowParts> parts(rows.size());
  const SimTime gap = cost::ComputeEfficiency{}.launch_gap;
  parallel_for(rows.size(), threads, [&](size_t i) {
    try {
      scenario::Scenario s = scenario_for(rows[i]);
      if (gemm_half_flops != cost::ComputeEfficiency{}.gemm_half_flops) {
        // The datasheet device with a candidate GEMM curve, as a profile would give it.
        cost::Profile p;
        p.name = "gemm curve candidate";
        p.device = cost::find_device(s.gpu);
        p.compute.gemm_half_flops = gemm_half_flops;
        s.profile = p;
      }
      const driver::SimulateOptions opts{false, false, driver::RankMode::representative, false,
                                         false};
      // Two short runs extrapolated linearly in the micro-batch count, as the planner does.
      const int64_t m = s.training.accumulation(s.layout);
      const auto [m1, m2] = driver::short_run_counts(s.layout);
      if (m <= m2) {
        parts[i] = parts_of(driver::simulate(s, opts), gap);
        parts[i].tp_hops = parts[i].comm_calls * (rows[i].tp - 1);
        return;
      }
      const int64_t per = s.training.micro_batch * s.layout.dp;
      s.training.global_batch = per * m1;
      const RowParts a = parts_of(driver::simulate(s, opts), gap);
      s.training.global_batch = per * m2;
      const RowParts b = parts_of(driver::simulate(s, opts), gap);
      const double f = static_cast<double>(m - m1) / static_cast<double>(m2 - m1);
      auto lerp = [&](double x, double y) { return x + (y - x) * f; };
      RowParts& p = parts[i];
      p.gemm = lerp(a.gemm, b.gemm);
      p.attention = lerp(a.attention, b.attention);
      p.memory = lerp(a.memory, b.memory);
      p.kernels = lerp(a.kernels, b.kernels);
      p.communication = lerp(a.communication, b.communication);
      p.comm_calls = lerp(a.comm_calls, b.comm_calls);
      p.idle = lerp(a.idle, b.idle);
      p.simulated_s = lerp(a.simulated_s, b.simulated_s);
      parts[i].tp_hops = parts[i].comm_calls * (rows[i].tp - 1);
    } catch (const std::exception& e) {  // a worker must not throw: the row says why
      parts[i].error = e.what();
    }
  });
  return parts;
}

TableFit fit_with_gemm_curve(const std::vector<TableRow>& rows, const std::vector<size_t>& use,
                             unsigned threads) {
  TableFit best;
  double best_mape = 0;
  for (double half : kGemmHalfCandidates) {
    std::vector<RowParts> parts = simulate_rows(rows, threads, half);
    const Factors f = fit(rows, parts, use);
    const double mape = errors(rows, parts, f, use).mape;
    if (best.parts.empty() || mape < best_mape) {
      best = {half, f, std::move(parts)};
      best_mape = mape;
    }
  }
  return best;
}

double Factors::predict(const RowParts& p) const {
  return v[0] * p.gemm + v[1] * p.attention + v[2] * p.memory + v[3] * p.kernels +
         v[4] * p.communication + v[5] * p.comm_calls + p.idle + v[6] + v[7] * p.tp_hops;
}

const char* Factors::name(int i) {
  static const char* kNames[kFactorCount] = {"a_gemm (GEMM time vs roofline default)",
                                             "a_attn (attention time vs default)",
                                             "a_mem (memory-bound kernel time vs default)",
                                             "t_kernel (overhead per kernel)",
                                             "a_comm (communication time vs default)",
                                             "t_call (overhead per collective or transfer)",
                                             "t_step (fixed per iteration)",
                                             "t_hop (per collective, per tensor-parallel peer)"};
  return kNames[i];
}
const char* Factors::unit(int i) { return i == 3 || i == 5 || i == 7 ? "us" : i == 6 ? "ms" : "x"; }

namespace {

// The normal equations of sum over rows of ((predict - measured) / measured)^2: linear least
// squares with each row scaled by 1 / measured.
struct NormalEquations {
  std::array<std::array<double, kFactorCount>, kFactorCount> ata{};
  std::array<double, kFactorCount> atb{};
};

NormalEquations normal_equations(const std::vector<TableRow>& rows,
                                 const std::vector<RowParts>& parts,
                                 const std::vector<size_t>& use) {
  constexpr int n = kFactorCount;
  NormalEquations e;
  for (size_t i : use) {
    const RowParts& p = parts[i];
    const double w = 1.0 / rows[i].measured_s;
    const double x[n] = {p.gemm * w,
                         p.attention * w,
                         p.memory * w,
                         p.kernels * w,
                         p.communication * w,
                         p.comm_calls * w,
                         w,
                         p.tp_hops * w};
    const double y = (rows[i].measured_s - p.idle) * w;
    for (size_t a = 0; a < n; ++a) {
      e.atb[a] += x[a] * y;
      for (size_t b = 0; b < n; ++b) e.ata[a][b] += x[a] * x[b];
    }
  }
  return e;
}

// Solves the augmented m x (m + 1) system in place: Gauss-Jordan with partial pivoting.
void gauss_jordan(std::vector<std::vector<double>>& A) {
  const size_t m = A.size();
  for (size_t c = 0; c < m; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < m; ++r) {
      if (std::abs(A[r][c]) > std::abs(A[piv][c])) piv = r;
    }
    std::swap(A[c], A[piv]);
    for (size_t r = 0; r < m; ++r) {
      if (r == c || A[c][c] == 0) continue;
      const double k = A[r][c] / A[c][c];
      for (size_t q = c; q <= m; ++q) A[r][q] -= k * A[c][q];
    }
  }
}

}  // namespace

Factors fit(const std::vector<TableRow>& rows, const std::vector<RowParts>& parts,
            const std::vector<size_t>& use) {
  constexpr int n = kFactorCount;
  const NormalEquations e = normal_equations(rows, parts, use);
  const auto& ata = e.ata;
  const auto& atb = e.atb;
  // Non-negative least squares (the factors are times and time scales): solve on the free
  // factors, pin the most negative one at 0, repeat. Factors no row exercises keep their default.
  const double prior[n] = {1, 1, 1, 0, 1, 0, 0, 0};
  std::array<bool, n> free{};
  for (size_t a = 0; a < n; ++a) free[a] = ata[a][a] > 0;
  Factors f;
  for (;;) {
    std::vector<size_t> idx;
    for (size_t a = 0; a < n; ++a) {
      if (free[a]) idx.push_back(a);
    }
    const size_t m = idx.size();
    std::vector<std::vector<double>> A(m, std::vector<double>(m + 1, 0.0));
    for (size_t r = 0; r < m; ++r) {
      for (size_t c = 0; c < m; ++c) A[r][c] = ata[idx[r]][idx[c]];
      A[r][m] = atb[idx[r]];
    }
    gauss_jordan(A);
    for (size_t a = 0; a < n; ++a) f.v[a] = ata[a][a] > 0 ? 0.0 : prior[a];
    int worst = -1;
    for (size_t r = 0; r < m; ++r) {
      const double v = A[r][r] != 0 ? A[r][m] / A[r][r] : 0.0;
      f.v[idx[r]] = v;
      if (v < 0 && (worst < 0 || v < f.v[static_cast<size_t>(worst)]))
        worst = static_cast<int>(idx[r]);
    }
    if (worst < 0) break;
    free[static_cast<size_t>(worst)] = false;
  }
  for (double& v : f.v) v = std::max(0.0, v);
  return f;
}

ErrorSummary errors(const std::vector<TableRow>& rows, const std::vector<RowParts>& parts,
                    const Factors& f, const std::vector<size_t>& use) {
  ErrorSummary s;
  std::vector<double> e;
  for (size_t i : use)
    e.push_back(std::abs(f.predict(parts[i]) - rows[i].measured_s) / rows[i].measured_s);
  s.rows = e.size();
  if (e.empty()) return s;
  double sum = 0;
  for (double x : e) sum += x;
  s.mape = 100 * sum / static_cast<double>(e.size());
  std::sort(e.begin(), e.end());
  s.median = 100 * e[e.size() / 2];
  s.worst = 100 * e.back();
  return s;
}

std::string parallelism_type(const TableRow& r) {
  std::string t;
  if (r.tp > 1) t += "tensor";
  if (r.pp > 1) t += std::string(t.empty() ? "" : "+") + "pipeline";
  if (r.dp > 1) t += std::string(t.empty() ? "" : "+") + "data";
  return t.empty() ? "single GPU" : t;
}

std::map<std::string, ErrorSummary> errors_by_parallelism(const std::vector<TableRow>& rows,
                                                          const std::vector<RowParts>& parts,
                                                          const Factors& f,
                                                          const std::vector<size_t>& use) {
  std::map<std::string, std::vector<size_t>> by_type;
  for (size_t i : use) by_type[parallelism_type(rows[i])].push_back(i);
  std::map<std::string, ErrorSummary> out;
  for (const auto& [type, idx] : by_type) out[type] = errors(rows, parts, f, idx);
  return out;
}

void split_half(const std::vector<RowParts>& parts, unsigned seed, std::vector<size_t>& train,
                std::vector<size_t>& test) {
  std::vector<size_t> ok;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].error.empty()) ok.push_back(i);
  }
  std::mt19937 rng(seed);
  std::shuffle(ok.begin(), ok.end(), rng);
  train.assign(ok.begin(), ok.begin() + static_cast<std::ptrdiff_t>(ok.size() / 2));
  test.assign(ok.begin() + static_cast<std::ptrdiff_t>(ok.size() / 2), ok.end());
  std::sort(train.begin(), train.end());
  std::sort(test.begin(), test.end());
}

void write_rows_csv(std::ostream& out, const std::vector<TableRow>& rows,
                    const std::vector<RowParts>& parts, const Factors& f,
                    const std::vector<size_t>& test) {
  std::vector<bool> in_test(rows.size(), false);
  for (size_t i : test) in_test[i] = true;
  out << "line,gpus,global_batch,micro_batch,hidden,heads,layers,seq,tp,dp,pp,parallelism,set,"
         "measured_ms,default_model_ms,predicted_ms,error_percent,error\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const TableRow& r = rows[i];
    out << r.line << "," << r.gpus << "," << r.global_batch << "," << r.micro_batch << ","
        << r.hidden << "," << r.heads << "," << r.layers << "," << r.seq << "," << r.tp << ","
        << r.dp << "," << r.pp << "," << parallelism_type(r) << "," << (in_test[i] ? "test" : "fit")
        << "," << r.measured_s * 1e3 << ",";
    if (parts[i].error.empty()) {
      const double p = f.predict(parts[i]);
      out << parts[i].simulated_s * 1e3 << "," << p * 1e3 << ","
          << 100 * (p - r.measured_s) / r.measured_s << ",\n";
    } else {
      out << ",,,\"" << parts[i].error << "\"\n";
    }
  }
}

}  // namespace cs::validate
