// Starts one process per rank (like torchrun), waits for them with a deadline, merges results.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "executor/executor.h"

namespace cs::exec {
namespace {

struct RankFile {
  std::vector<std::pair<int64_t, int64_t>> steps;
  int64_t warmup_end = 0;
  std::vector<std::tuple<ir::TaskId, size_t, int64_t, int64_t>>
      tasks;  // task, measured step, start, end
  int64_t peak = 0, peak_time = 0;
  std::array<int64_t, ir::kMemoryCategoryCount> at_peak{};
  std::string params, grads;
  std::string device;     // what ran it, when the rank says (the cuda backend does)
  bool relative = false;  // each step's times count from that step's own start (cuda ranks)
};

RankFile read_rank(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw ExecutionError("missing result file " + path);
  RankFile r;
  std::string word;
  while (f >> word) {
    if (word == "steps") {
      size_t n;
      f >> n;
    } else if (word == "warmup_end") {
      f >> r.warmup_end;
    } else if (word == "step") {
      size_t i;
      int64_t a, b;
      f >> i >> a >> b;
      r.steps.emplace_back(a, b);
    } else if (word == "task") {
      ir::TaskId t;
      size_t step;
      int64_t a, b;
      f >> t >> step >> a >> b;
      r.tasks.emplace_back(t, step, a, b);
    } else if (word == "peak") {
      f >> r.peak >> r.peak_time;
      for (auto& v : r.at_peak) f >> v;
    } else if (word == "params") {
      f >> r.params;
    } else if (word == "grads") {
      f >> r.grads;
    } else if (word == "relative") {
      f >> r.relative;
    } else if (word == "device") {
      std::getline(f >> std::ws, r.device);
    }
  }
  return r;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Measured launch(const ir::TaskGraph& graph, const LaunchOptions& o) {
  require_cpu_backend(o.program);
  const int world = static_cast<int>(graph.ranks());
  char tmpl[] = "/tmp/clustersim-exec-XXXXXX";
  if (!mkdtemp(tmpl)) throw ExecutionError("cannot create a rendezvous directory under /tmp");
  const std::string dir = tmpl;
  std::filesystem::create_directory(dir + "/store");  // Gloo's FileStore rendezvous
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> argv{o.program, "execute-rank"};
    argv.insert(argv.end(), o.args.begin(), o.args.end());
    for (const std::string& a : {std::string("--rank"), std::to_string(r), std::string("--dir"),
                                 dir, std::string("--warmup"), std::to_string(o.warmup),
                                 std::string("--steps"), std::to_string(o.steps),
                                 std::string("--timeout-ms"), std::to_string(o.timeout.count())}) {
      argv.push_back(a);
    }
    const Faults& fl = o.faults;
    if (!fl.failing_task.empty())
      argv.insert(argv.end(), {"--inject-kernel-failure", fl.failing_task, "--inject-rank",
                               std::to_string(fl.failing_rank)});
    if (fl.memory_limit > 0)
      argv.insert(argv.end(), {"--memory-limit", std::to_string(fl.memory_limit)});
    if (!fl.skipped_collective.empty())
      argv.insert(argv.end(), {"--skip-collective", fl.skipped_collective, "--skip-rank",
                               std::to_string(fl.skipping_rank)});
    const pid_t pid = fork();
    if (pid < 0) throw ExecutionError("fork failed");
    if (pid == 0) {
      // One BLAS thread per rank: the ranks share the machine's cores.
      setenv("OPENBLAS_NUM_THREADS", "1", 1);
      const std::string log = dir + "/rank" + std::to_string(r) + ".log";
      if (FILE* f = std::freopen(log.c_str(), "w", stdout)) (void)f;
      if (FILE* f = std::freopen(log.c_str(), "a", stderr)) (void)f;
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execv(o.program.c_str(), cargv.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  // Wait. A rank that fails makes the others fail or time out soon after; past the deadline all
  // remaining ranks are killed.
  const auto deadline = std::chrono::steady_clock::now() + o.timeout * (o.warmup + o.steps + 2);
  std::vector<int> status(pids.size(), -1);
  std::optional<std::chrono::steady_clock::time_point> first_failure;
  size_t running = pids.size();
  bool killed = false;
  while (running > 0) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (status[r] != -1) continue;
      int st = 0;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        --running;
        if (status[r] != 0 && !first_failure) first_failure = std::chrono::steady_clock::now();
      }
    }
    const auto now = std::chrono::steady_clock::now();
    // After a failure, give the peers one collective timeout to notice and report, then stop them.
    if (running > 0 && (now > deadline || (first_failure && now > *first_failure + o.timeout +
                                                                      std::chrono::seconds(2)))) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (status[r] == -1) kill(pids[r], SIGKILL);
      }
      killed = true;
      for (size_t r = 0; r < pids.size(); ++r) {
        if (status[r] == -1) {
          waitpid(pids[r], nullptr, 0);
          status[r] = 128 + SIGKILL;
        }
      }
      running = 0;
    }
    if (running > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string errors;
  for (size_t r = 0; r < pids.size(); ++r) {
    if (status[r] == 0) continue;
    const std::string base = dir + "/rank" + std::to_string(r);
    std::string msg = read_text(base + ".error");
    if (msg.empty()) {
      msg = status[r] == 128 + SIGKILL && killed
                ? "stopped (a peer failed or the run passed its deadline)"
                : "exited with status " + std::to_string(status[r]);
      const std::string log = read_text(base + ".log");
      if (!log.empty()) msg += "; its output: " + log;
    }
    errors += "rank " + std::to_string(r) + ": " + msg + "\n";
  }
  if (!errors.empty()) {
    std::filesystem::remove_all(dir);
    errors.pop_back();
    throw ExecutionError(errors);
  }
  Measured m;
  try {
    m = merge_results(graph, dir);
  } catch (...) {
    std::filesystem::remove_all(dir);
    throw;
  }
  std::filesystem::remove_all(dir);

  m.device = "cpu: " + std::to_string(world) + " processes on " +
             std::to_string(std::thread::hardware_concurrency()) +
             " cores, OpenBLAS sgemm, Gloo TCP on loopback";
  return m;
}

Measured merge_results(const ir::TaskGraph& graph, const std::string& dir) {
  Measured m;
  const int world = static_cast<int>(graph.ranks());
  std::vector<RankFile> ranks;
  for (int r = 0; r < world; ++r)
    ranks.push_back(read_rank(dir + "/rank" + std::to_string(r) + ".result"));
  const bool relative = ranks[0].relative;
  for (const auto& r : ranks) {
    if (r.relative != relative || r.steps.size() != ranks[0].steps.size())
      throw ExecutionError("the ranks' result files disagree on their steps or clock (" + dir +
                           ")");
  }
  // Step times across ranks (one monotonic clock on one machine): the period, from the moment the
  // last rank ended the step before to the moment the last rank ends this one. Ranks start a step
  // as soon as they end the last (no barrier, as in training), so one step's spans overlap the
  // next's by the skew between ranks; the period is what tokens/s is made of. The first measured
  // step counts from the end of the warm-up (from its own start without one).
  const size_t steps = ranks[0].steps.size();
  int64_t previous_end = 0;
  for (const auto& r : ranks) previous_end = std::max(previous_end, r.warmup_end);
  const bool warmed_up =
      std::all_of(ranks.begin(), ranks.end(), [](const RankFile& r) { return r.warmup_end > 0; });
  // Ranks that count each step from its own start (the cuda backend's events) give the slowest
  // rank's span as the step time.
  for (size_t i = 0; i < steps && relative; ++i) {
    int64_t longest = 0;
    for (const auto& r : ranks) longest = std::max(longest, r.steps[i].second - r.steps[i].first);
    m.step_times.push_back(SimTime{longest * 1000});
  }
  for (size_t i = 0; i < steps && !relative; ++i) {
    int64_t a = INT64_MAX, b = 0;
    for (const auto& r : ranks) {
      a = std::min(a, r.steps[i].first);
      b = std::max(b, r.steps[i].second);
    }
    const int64_t from = i > 0 || warmed_up ? previous_end : a;
    m.step_times.push_back(SimTime{(b - from) * 1000});
    previous_end = b;
  }
  std::vector<SimTime> sorted = m.step_times;
  std::sort(sorted.begin(), sorted.end());
  m.median_step = sorted.empty() ? SimTime{} : sorted[sorted.size() / 2];
  m.fastest_step = sorted.empty() ? SimTime{} : sorted.front();
  // The median measured step as a Timeline, from its earliest start.
  const size_t chosen = static_cast<size_t>(
      std::find(m.step_times.begin(), m.step_times.end(), m.median_step) - m.step_times.begin());
  int64_t origin = INT64_MAX;
  for (const auto& r : ranks) origin = std::min(origin, relative ? 0 : r.steps.at(chosen).first);
  // Every task must be reported exactly once, by its own rank.
  constexpr SimTime kUnset{-1};
  m.timeline.tasks.assign(graph.size(), sim::TaskTiming{kUnset, kUnset, kUnset});
  m.timeline.memory.assign(graph.ranks(), sim::RankMemory{});
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& [t, step, a, b] : ranks[r].tasks) {
      if (step != chosen) continue;
      if (t >= graph.size() || graph.task(t).rank != r || m.timeline.tasks[t].start != kUnset) {
        throw ExecutionError("rank " + std::to_string(r) + " reported task " + std::to_string(t) +
                             " that is not its own or twice");
      }
      const SimTime start{(a - origin) * 1000}, end{(b - origin) * 1000};
      m.timeline.tasks[t] = {start, start, end};
      m.timeline.makespan = std::max(m.timeline.makespan, end);
    }
    sim::RankMemory& mem = m.timeline.memory[r];
    mem.peak = ranks[r].peak;
    mem.peak_time = SimTime{std::max<int64_t>(ranks[r].peak_time, 0) * 1000};
    mem.at_peak = ranks[r].at_peak;
    m.parameter_hashes.push_back(ranks[r].params);
  }
  for (ir::TaskId t = 0; t < graph.size(); ++t) {
    if (m.timeline.tasks[t].start == kUnset)
      throw ExecutionError("task '" + graph.task_name(t) + "' on rank " +
                           std::to_string(graph.task(t).rank) + " never ran");
  }
  m.gradients_differed = ranks.size() > 1 && ranks[0].grads != ranks[1].grads;
  m.device = ranks[0].device.empty() ? "cpu: " + std::to_string(world) + " processes on " +
                                           std::to_string(std::thread::hardware_concurrency()) +
                                           " cores, OpenBLAS sgemm, Gloo TCP"
                                     : ranks[0].device;
  return m;
}

std::optional<Measured> run_launched_cpu(const ir::TaskGraph& graph, const RankOptions& o) {
  const std::string base = o.dir + "/rank" + std::to_string(o.rank);
  std::filesystem::create_directories(o.dir + "/store");
  // A result or error left by an earlier run in the same directory must not be read as this one's.
  std::filesystem::remove(base + ".result");
  std::filesystem::remove(base + ".error");
  if (run_cpu_rank(graph, o) != 0)
    throw ExecutionError("rank " + std::to_string(o.rank) + ": " + read_text(base + ".error"));
  if (o.rank != 0) return std::nullopt;
  // Rank 0 finished its last step, so every peer is at most a step behind.
  return collect_launched(graph, o.dir, o.timeout * (o.warmup + o.steps + 2));
}

Measured collect_launched(const ir::TaskGraph& graph, const std::string& dir,
                          std::chrono::milliseconds wait) {
  const int world = static_cast<int>(graph.ranks());
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::string errors;
  for (int r = 1; r < world; ++r) {
    const std::string peer = dir + "/rank" + std::to_string(r);
    for (;;) {
      if (std::filesystem::exists(peer + ".result")) break;
      if (std::filesystem::exists(peer + ".error")) {
        std::this_thread::sleep_for(
            std::chrono::milliseconds(20));  // written in one go, but let it land
        errors += "rank " + std::to_string(r) + ": " + read_text(peer + ".error") + "\n";
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        errors += "rank " + std::to_string(r) + ": wrote no result in " + peer +
                  ".result before the deadline (is " + dir +
                  " shared by every node, and did the launcher start all " + std::to_string(world) +
                  " ranks?)\n";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (!errors.empty()) {
    errors.pop_back();
    throw ExecutionError(errors);
  }
  Measured m = merge_results(graph, dir);
  for (int r = 0; r < world; ++r)
    std::filesystem::remove(dir + "/rank" + std::to_string(r) + ".result");
  std::filesystem::remove_all(dir + "/store");
  std::filesystem::remove(dir + "/nccl.id");
  return m;
}

}  // namespace cs::exec
