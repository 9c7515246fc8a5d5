#include "planner/planner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "common/parallel.h"
#include "driver/simulation.h"
#include "models/model_work.h"
#include "strategies/training_step.h"

namespace cs::planner {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

// A reason class for counting: the message with its numbers blanked, so "tp 16 must divide ..."
// and "tp 32 must divide ..." count together.
std::string reason_class(const std::string& message) {
  std::string out;
  bool in_number = false;
  for (char c : message) {
    const bool digit = c >= '0' && c <= '9';
    if (digit && !in_number) out += '#';
    if (!digit) out += c;
    in_number = digit;
  }
  return out;
}

std::string bytes_label(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lldMiB", static_cast<long long>(b.count >> 20));
  return buf;
}

// Per-rank means over the simulated ranks, and the largest stage bubble.
Evaluation summarise(const driver::SimulationResult& r, size_t candidate, bool detailed) {
  Evaluation e;
  e.candidate = candidate;
  e.detailed = detailed;
  e.step_time = r.report.step_time;
  e.tokens_per_second = r.report.tokens_per_second;
  e.mfu = r.report.mfu;
  e.peak_memory = r.report.peak_memory;
  e.at_peak = r.report.ranks[r.report.peak_index].memory.at_peak;
  e.fits = r.report.fits;
  for (size_t st = 0; st < r.report.stages.size(); ++st) e.bubble = std::max(e.bubble, r.report.bubble_fraction(st));
  const sim::MeanRankTimes mean = sim::mean_rank_times(r.report);
  e.compute = mean.compute;
  e.exposed_communication = mean.exposed_communication;
  e.idle = mean.idle;
  return e;
}

// Linear extrapolation in the micro-batch count from runs at m1 and m2 to m. Memory grows with m
// only under GPipe (every micro-batch's activations live until the backward pass); other
// schedules cap what is in flight, and the run at m2 has reached the cap.
Evaluation extrapolate(const Evaluation& a, const Evaluation& b, int64_t m1, int64_t m2, int64_t m, bool memory_grows, double tokens,
                       double model_flops, double gpus, double peak_flops, int64_t capacity) {
  const double f = static_cast<double>(m - m1) / static_cast<double>(m2 - m1);
  auto lerp_ps = [&](SimTime x, SimTime y) { return SimTime{x.ps + static_cast<int64_t>(static_cast<double>(y.ps - x.ps) * f)}; };
  Evaluation e = b;
  e.step_time = lerp_ps(a.step_time, b.step_time);
  e.compute = lerp_ps(a.compute, b.compute);
  e.exposed_communication = lerp_ps(a.exposed_communication, b.exposed_communication);
  e.idle = lerp_ps(a.idle, b.idle);
  if (memory_grows) {
    e.peak_memory = a.peak_memory + static_cast<int64_t>(static_cast<double>(b.peak_memory - a.peak_memory) * f);
    for (size_t c = 0; c < e.at_peak.size(); ++c) {
      e.at_peak[c] = a.at_peak[c] + static_cast<int64_t>(static_cast<double>(b.at_peak[c] - a.at_peak[c]) * f);
    }
  }
  const double bubble_idle_a = a.bubble * a.step_time.seconds(), bubble_idle_b = b.bubble * b.step_time.seconds();
  e.bubble = (bubble_idle_a + (bubble_idle_b - bubble_idle_a) * f) / e.step_time.seconds();
  e.tokens_per_second = tokens / e.step_time.seconds();
  e.mfu = model_flops / (e.step_time.seconds() * gpus * peak_flops);
  e.fits = capacity == 0 || e.peak_memory <= capacity;
  e.detailed = false;
  return e;
}

bool better(const Evaluation& a, const Evaluation& b, Objective o) {
  if (o == Objective::memory) {
    if (a.peak_memory != b.peak_memory) return a.peak_memory < b.peak_memory;
    if (a.step_time != b.step_time) return a.step_time < b.step_time;
  } else {
    if (a.step_time != b.step_time) return a.step_time < b.step_time;
    if (a.peak_memory != b.peak_memory) return a.peak_memory < b.peak_memory;
  }
  return a.candidate < b.candidate;
}

// parallel_for with progress reports (one call at a time, from the workers).
template <typename F>
void parallel_for_reporting(size_t n, unsigned threads, const char* stage, const PlanOptions& o, F&& f) {
  std::atomic<size_t> done{0};
  std::mutex progress_mutex;
  parallel_for(n, threads, [&](size_t i) {
    f(i);
    const size_t d = ++done;
    if (o.progress) {
      std::lock_guard lock(progress_mutex);
      o.progress(stage, d, n);
    }
  });
}

}  // namespace

size_t PlanResult::out_of_memory() const {
  return static_cast<size_t>(std::count_if(evaluations.begin(), evaluations.end(), [](const Evaluation& e) { return e.error.empty() && !e.fits; }));
}

size_t PlanResult::failed() const {
  return static_cast<size_t>(std::count_if(evaluations.begin(), evaluations.end(), [](const Evaluation& e) { return !e.error.empty(); }));
}

std::map<std::string, size_t> PlanResult::pruned_reasons() const {
  std::map<std::string, size_t> out;
  for (const Pruned& p : pruned) ++out[p.reason];
  return out;
}

std::string Candidate::describe() const {
  std::string s = "tp" + std::to_string(layout.tp) + " pp" + std::to_string(layout.pp) + " dp" + std::to_string(layout.dp);
  if (layout.dp > 1) s += " " + std::string(strategy::to_string(layout.data_parallel));
  s += " mb" + std::to_string(training.micro_batch);
  if (layout.pp > 1) {
    s += " " + std::string(strategy::to_string(layout.schedule));
    if (layout.schedule == strategy::PipelineSchedule::interleaved) s += "(v" + std::to_string(layout.virtual_stages) + ")";
  }
  s += " rc:" + std::string(model::to_string(training.recompute));
  const bool bucketed = layout.dp > 1 && (layout.data_parallel == strategy::DataParallel::ddp || layout.data_parallel == strategy::DataParallel::zero1 ||
                                          layout.data_parallel == strategy::DataParallel::zero2);
  if (bucketed) s += " b:" + bytes_label(layout.bucket_size);
  return s;
}

scenario::Scenario with_candidate(const scenario::Scenario& base, const Candidate& c) {
  scenario::Scenario s = base;
  s.layout = c.layout;
  s.training = c.training;
  s.fidelity = cost::NetworkFidelity::analytic;  // representative ranks need it
  return s;
}

Enumeration enumerate_layouts(const scenario::Scenario& base, const PlanSpace& space) {
  using strategy::DataParallel;
  using strategy::PipelineSchedule;
  Enumeration e;
  for (int tp : divisors(base.gpus)) {
    for (int pp : divisors(base.gpus / tp)) {
      const int dp = base.gpus / (tp * pp);
      std::vector<DataParallel> flavours{DataParallel::ddp};
      if (dp > 1) {
        flavours.push_back(DataParallel::zero1);
        if (pp == 1) {
          for (auto d : {DataParallel::zero2, DataParallel::fsdp_shard_grad_op, DataParallel::fsdp_full_shard}) flavours.push_back(d);
        }
      }
      std::vector<std::pair<PipelineSchedule, int>> schedules{{PipelineSchedule::one_f_one_b, 1}};
      if (pp > 1) {
        schedules.insert(schedules.begin(), {PipelineSchedule::gpipe, 1});
        for (int v = 2; v <= space.max_virtual_stages; ++v) schedules.emplace_back(PipelineSchedule::interleaved, v);
      }
      for (DataParallel d : flavours) {
        const bool bucketed = dp > 1 && (d == DataParallel::ddp || d == DataParallel::zero1 || d == DataParallel::zero2);
        const std::vector<Bytes> buckets = bucketed ? space.bucket_sizes : std::vector<Bytes>{base.layout.bucket_size};
        for (int64_t mb : space.micro_batches) {
          for (const auto& [schedule, v] : schedules) {
            for (model::Recompute rc : space.recompute) {
              for (Bytes bucket : buckets) {
                ++e.considered;
                Candidate c;
                c.layout = base.layout;
                c.layout.tp = tp;
                c.layout.pp = pp;
                c.layout.dp = dp;
                c.layout.data_parallel = d;
                c.layout.bucket_size = bucket;
                c.layout.sequence_parallel = tp > 1;
                c.layout.schedule = schedule;
                c.layout.virtual_stages = v;
                c.training = base.training;
                c.training.micro_batch = mb;
                c.training.recompute = rc;
                try {
                  strategy::validate(c.layout, c.training, base.model, base.gpus);
                  e.candidates.push_back(c);
                } catch (const UserError& err) {
                  ++e.invalid[reason_class(err.what())];
                }
              }
            }
          }
        }
      }
    }
  }
  return e;
}

MemoryBound memory_lower_bound(const scenario::Scenario& base, const Candidate& c) {
  const auto& l = c.layout;
  const model::PrecisionInfo prec = model::precision_info(c.training.precision);
  // The busiest stage holds at least the average share of parameters; TP splits at most all.
  const int64_t params = model::parameter_count(base.model) / (static_cast<int64_t>(l.tp) * l.pp);
  const strategy::ModelState ms = strategy::model_state_per_rank(params, prec, l.dp > 1 ? l.data_parallel : strategy::DataParallel::ddp, l.dp);
  model::WorkShape shape;
  shape.micro_batch = c.training.micro_batch;
  shape.seq = c.training.seq_len;
  shape.tp = l.tp;
  shape.sequence_parallel = l.sequence_parallel;
  shape.precision = c.training.precision;
  shape.attention = c.training.attention;
  shape.recompute = c.training.recompute;
  // The first stage keeps the activations of the micro-batches in flight: all m under GPipe, p
  // under 1F1B (p - 1 warm-up forwards and the current one), at least p interleaved, 1 without a
  // pipeline.
  const int64_t layers = (base.model.layers + l.pp - 1) / l.pp;
  const int64_t m = c.training.accumulation(l);
  int64_t in_flight = 1;
  if (l.pp > 1) in_flight = l.schedule == strategy::PipelineSchedule::gpipe ? m : std::min<int64_t>(l.pp, m);
  MemoryBound b;
  b.parameters = ms.parameters;
  b.gradients = ms.gradients;
  b.optimizer_state = ms.optimizer_state;
  b.activations = model::activation_bytes_per_layer(base.model, shape).count * layers * in_flight;
  return b;
}

PlanResult plan(const scenario::Scenario& base, const PlanSpace& space, const PlanOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  PlanResult r;
  r.enumeration = enumerate_layouts(base, space);
  const auto& cands = r.enumeration.candidates;
  const cost::DeviceSpec& device = cost::find_device(base.gpu);
  const int64_t capacity = device.memory_capacity.count;
  const double peak_flops = device.peak(model::precision_info(base.training.precision).compute).value;

  std::vector<size_t> survivors;
  for (size_t i = 0; i < cands.size(); ++i) {
    const MemoryBound b = memory_lower_bound(base, cands[i]);
    if (b.total() <= capacity) {
      survivors.push_back(i);
      continue;
    }
    const bool state_alone = b.total() - b.activations > capacity;
    r.pruned.push_back({i, b, state_alone ? "model state alone exceeds memory" : "model state + activations of the micro-batches in flight exceed memory"});
  }

  const unsigned threads = options.threads;
  // One cluster and cost model for all candidates: collective plans are cached across them.
  scenario::Scenario analytic = base;
  analytic.fidelity = cost::NetworkFidelity::analytic;
  const driver::Platform platform(analytic);
  std::vector<Evaluation> fast(survivors.size());
  auto evaluate_fast = [&](size_t k) {
    const Candidate& c = cands[survivors[k]];
    scenario::Scenario s = with_candidate(base, c);
    const int64_t m = c.training.accumulation(c.layout);
    const auto [m1, m2] = driver::short_run_counts(c.layout);
    const driver::SimulateOptions opts{false, false, driver::RankMode::representative, false};
    if (m <= m2) {
      fast[k] = summarise(driver::simulate(s, opts, &platform), survivors[k], false);
      return;
    }
    const int64_t per_micro = c.training.micro_batch * c.layout.dp;
    s.training.global_batch = per_micro * m1;
    const auto r1 = driver::simulate(s, opts, &platform);
    s.training.global_batch = per_micro * m2;
    const auto r2 = driver::simulate(s, opts, &platform);
    const double tokens = static_cast<double>(c.training.global_batch * c.training.seq_len);
    const double flops = r2.step.model_flops_per_step.value * static_cast<double>(m) / static_cast<double>(m2);
    const bool memory_grows = c.layout.pp > 1 && c.layout.schedule == strategy::PipelineSchedule::gpipe;
    fast[k] = extrapolate(summarise(r1, survivors[k], false), summarise(r2, survivors[k], false), m1, m2, m, memory_grows, tokens, flops,
                          static_cast<double>(base.gpus), peak_flops, capacity);
  };
  parallel_for_reporting(survivors.size(), threads, "fast", options, [&](size_t k) {
    try {
      evaluate_fast(k);
    } catch (const std::exception& e) {  // a worker thread must not throw: record and move on
      fast[k] = Evaluation{};
      fast[k].candidate = survivors[k];
      fast[k].error = e.what();
    }
  });

  // The best fast candidates that fit get the detailed level.
  std::vector<size_t> order(fast.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool ok_a = fast[a].fits && fast[a].error.empty(), ok_b = fast[b].fits && fast[b].error.empty();
    if (ok_a != ok_b) return ok_a;
    return better(fast[a], fast[b], options.objective);
  });
  std::vector<size_t> to_detail;
  for (size_t k : order) {
    if (to_detail.size() >= options.detailed || !fast[k].fits || !fast[k].error.empty()) break;
    to_detail.push_back(k);
  }
  parallel_for_reporting(to_detail.size(), threads, "detailed", options, [&](size_t j) {
    const size_t k = to_detail[j];
    try {
      const scenario::Scenario s = with_candidate(base, cands[survivors[k]]);
      fast[k] = summarise(driver::simulate(s, {false, false, driver::RankMode::automatic, false}, &platform), survivors[k], true);
    } catch (const std::exception& e) {
      fast[k].error = e.what();
    }
  });

  r.evaluations = std::move(fast);
  for (size_t k = 0; k < r.evaluations.size(); ++k) {
    if (r.evaluations[k].error.empty() && r.evaluations[k].fits) r.ranked.push_back(k);
  }
  // Detailed results first (they are the better-founded figures), each group by the objective.
  std::sort(r.ranked.begin(), r.ranked.end(), [&](size_t a, size_t b) {
    const Evaluation &x = r.evaluations[a], &y = r.evaluations[b];
    if (x.detailed != y.detailed) return x.detailed;
    return better(x, y, options.objective);
  });
  // Pareto frontier of throughput against memory over everything that fits: sweep by memory,
  // keep each point faster than all leaner ones.
  std::vector<size_t> by_memory = r.ranked;
  std::sort(by_memory.begin(), by_memory.end(), [&](size_t a, size_t b) {
    return better(r.evaluations[a], r.evaluations[b], Objective::memory);
  });
  double best_tokens = -1;
  for (size_t k : by_memory) {
    if (r.evaluations[k].tokens_per_second > best_tokens) {
      r.pareto.push_back(k);
      best_tokens = r.evaluations[k].tokens_per_second;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace cs::planner
