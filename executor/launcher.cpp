// Starts one process per rank (like torchrun), waits for them with a deadline, merges results.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "common/error.h"
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

using Clock = std::chrono::steady_clock;

// How long the ranks may take to start (exec this program, read the scenario, build the graph)
// before their collectives' timeout applies. Counted against a 2-s collective timeout, a start
// slowed by a loaded machine made a peer's first collective give up first, and the fault under
// test was reported as "stopped" (issue 34).
constexpr std::chrono::seconds kStartAllowance{120};

std::string ready_file(const std::string& dir, int rank) {
  return dir + "/rank" + std::to_string(rank) + ".ready";
}

// The whole run's allowance once every rank has started: the timeout per step, plus two; it
// saturates (an hour's timeout times 2^31 steps overflows 64-bit milliseconds) at 10^15 ms.
std::chrono::milliseconds run_allowance(const LaunchOptions& o) {
  const double ms = static_cast<double>(o.timeout.count()) *
                    (static_cast<double>(o.warmup) + static_cast<double>(o.steps) + 2);
  return std::chrono::milliseconds(static_cast<int64_t>(std::min(ms, 1e15)));
}

std::string seconds_text(std::chrono::milliseconds d) {
  return std::to_string(d.count() / 1000.0).substr(0, 4) + " s";
}

// The argument list of rank `r`'s process.
std::vector<std::string> rank_argv(const LaunchOptions& o, int r, const std::string& dir) {
  std::vector<std::string> argv{o.program, "execute-rank"};
  argv.insert(argv.end(), o.args.begin(), o.args.end());
  argv.insert(argv.end(), {"--rank", std::to_string(r), "--dir", dir, "--warmup",
                           std::to_string(o.warmup), "--steps", std::to_string(o.steps),
                           "--timeout-ms", std::to_string(o.timeout.count())});
  const Faults& fl = o.faults;
  if (!fl.failing_task.empty())
    argv.insert(argv.end(), {"--inject-kernel-failure", fl.failing_task, "--inject-rank",
                             std::to_string(fl.failing_rank)});
  if (fl.memory_limit > 0)
    argv.insert(argv.end(), {"--memory-limit", std::to_string(fl.memory_limit)});
  if (!fl.skipped_collective.empty())
    argv.insert(argv.end(), {"--skip-collective", fl.skipped_collective, "--skip-rank",
                             std::to_string(fl.skipping_rank)});
  return argv;
}

// The rank processes of one `launch`: started, waited for under the deadlines, and never left
// behind. Each rank dies with this process (PR_SET_PDEATHSIG: a parent killed by SIGKILL cannot
// clean up), and the destructor kills and reaps whatever still runs when `launch` leaves early.
class RankProcesses {
 public:
  RankProcesses(const LaunchOptions& o, std::string dir) : o_(o), dir_(std::move(dir)) {}
  RankProcesses(const RankProcesses&) = delete;
  RankProcesses& operator=(const RankProcesses&) = delete;
  ~RankProcesses() { stop_all(""); }

  void start(int world) {
    const pid_t parent = getpid();
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> argv = rank_argv(o_, r, dir_);
      const std::string log = dir_ + "/rank" + std::to_string(r) + ".log";
      const pid_t pid = fork();
      if (pid < 0) throw ExecutionError("fork failed for rank " + std::to_string(r));
      if (pid == 0) exec_rank(argv, log, parent);
      ranks_.push_back({pid, -1, ""});
    }
    started_ = Clock::now();
  }

  // Waits until every rank has exited, or stops the rest: when not every rank started within the
  // allowance, when the run passed its deadline (the timeout per step, plus two, from the moment
  // every rank had started), or one collective timeout (plus 2 s to report) after a rank failed.
  void wait() {
    const auto start_deadline = started_ + kStartAllowance + o_.timeout;
    std::optional<Clock::time_point> deadline;
    while (running() > 0) {
      reap();
      const auto now = Clock::now();
      if (!deadline && all_ready()) deadline = now + run_allowance(o_);
      if (first_failure_ && now > first_failure_->second + o_.timeout + std::chrono::seconds(2)) {
        stop_all("stopped after rank " + std::to_string(first_failure_->first) + " failed");
      } else if (deadline && now > *deadline) {
        stop_all("stopped: the run passed its deadline of " + seconds_text(run_allowance(o_)) +
                 " (the timeout of " + seconds_text(o_.timeout) + " per step, plus two)");
      } else if (!deadline && now > start_deadline) {
        stop_all("stopped: not every rank had started after " +
                 std::to_string(kStartAllowance.count()) + " s");
      }
      if (running() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  // Every failed rank's message, the first to fail first (the cause; the others' failures are
  // mostly its consequences), then in rank order. Empty when every rank succeeded.
  std::string errors() const {
    std::string first, rest;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (ranks_[r].status == 0) continue;
      std::string& into = first_failure_ && first_failure_->first == r ? first : rest;
      into += "rank " + std::to_string(r) + ": " + message_of(r) + "\n";
    }
    return first + rest;
  }

 private:
  struct Rank {
    pid_t pid;
    int status;          // exit status, 128 + signal, or -1 while running
    std::string killed;  // why `launch` stopped it (empty: it exited by itself)
  };

  // In the child: the rank's output to its log, death with the parent, then this program again.
  [[noreturn]] static void exec_rank(std::vector<std::string>& argv, const std::string& log,
                                     pid_t parent) {
    // The parent may have died between fork and prctl: then nobody would send the signal.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
    // One BLAS thread per rank: the ranks share the machine's cores.
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    if (FILE* f = std::freopen(log.c_str(), "w", stdout)) (void)f;
    if (FILE* f = std::freopen(log.c_str(), "a", stderr)) (void)f;
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(argv[0].c_str(), cargv.data());
    _exit(127);
  }

  size_t running() const {
    return static_cast<size_t>(
        std::count_if(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.status == -1; }));
  }

  void reap() {
    for (size_t r = 0; r < ranks_.size(); ++r) {
      int st = 0;
      if (ranks_[r].status != -1 || waitpid(ranks_[r].pid, &st, WNOHANG) != ranks_[r].pid) continue;
      ranks_[r].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (ranks_[r].status != 0 && !first_failure_) first_failure_.emplace(r, Clock::now());
    }
  }

  bool all_ready() const {
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (!std::filesystem::exists(ready_file(dir_, static_cast<int>(r)))) return false;
    }
    return true;
  }

  void stop_all(const std::string& why) {
    for (Rank& r : ranks_) {
      if (r.status == -1) kill(r.pid, SIGKILL);
    }
    for (Rank& r : ranks_) {
      if (r.status != -1) continue;
      waitpid(r.pid, nullptr, 0);
      r.status = 128 + SIGKILL;
      r.killed = why;
    }
  }

  std::string message_of(size_t r) const {
    const std::string base = dir_ + "/rank" + std::to_string(r);
    std::string msg = read_text(base + ".error");
    if (!msg.empty()) return msg;
    msg = !ranks_[r].killed.empty() ? ranks_[r].killed
                                    : "exited with status " + std::to_string(ranks_[r].status);
    const std::string log = read_text(base + ".log");
    if (!log.empty()) msg += "; its output: " + log;
    return msg;
  }

  const LaunchOptions& o_;
  std::string dir_;
  std::vector<Rank> ranks_;
  Clock::time_point started_;
  std::optional<std::pair<size_t, Clock::time_point>> first_failure_;  // rank, when
};

}  // namespace

Measured launch(const ir::TaskGraph& graph, const LaunchOptions& o) {
  require_cpu_backend(o.program);
  const int world = static_cast<int>(graph.ranks());
  if (graph.ranks() > static_cast<size_t>(kMaxForkedRanks)) {
    throw UserError("execute: the scenario has " + std::to_string(graph.ranks()) +
                    " ranks; at most " + std::to_string(kMaxForkedRanks) +
                    " are started as processes on this machine (each holds the whole task graph "
                    "and a Gloo connection to every peer); start more with a cluster launcher "
                    "(mpirun, srun: --launcher)");
  }
  char tmpl[] = "/tmp/clustersim-exec-XXXXXX";
  if (!mkdtemp(tmpl)) throw ExecutionError("cannot create a rendezvous directory under /tmp");
  const std::string dir = tmpl;
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove_dir{dir};
  std::filesystem::create_directory(dir + "/store");  // Gloo's FileStore rendezvous
  std::string errors;
  {
    RankProcesses ranks(o, dir);  // declared after remove_dir: the ranks are gone before the files
    ranks.start(world);
    ranks.wait();
    errors = ranks.errors();
  }
  if (!errors.empty()) {
    errors.pop_back();
    throw ExecutionError(errors);
  }
  Measured m = merge_results(graph, dir);
  m.device = "cpu: " + std::to_string(world) + " processes on " +
             std::to_string(std::thread::hardware_concurrency()) +
             " cores, OpenBLAS sgemm, Gloo TCP on loopback";
  return m;
}

int run_forked_rank(const ir::TaskGraph& graph, const RankOptions& o) {
  // Ready once the graph is built: the collectives' timeout starts when every rank is.
  const int world = static_cast<int>(graph.ranks());
  { std::ofstream(ready_file(o.dir, o.rank)) << "ready\n"; }
  const auto give_up = Clock::now() + kStartAllowance;
  for (int r = 0; r < world; ++r) {
    while (!std::filesystem::exists(ready_file(o.dir, r))) {
      if (Clock::now() > give_up) {
        std::ofstream(o.dir + "/rank" + std::to_string(o.rank) + ".error")
            << "rank " << r << " had not started after " << kStartAllowance.count() << " s\n";
        return kExitExecutionFailed;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return run_cpu_rank(graph, o);
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
  // Rank 0 finished its last step, and collectives tie the ranks step by step, so every peer is
  // at most about a step behind: wait one timeout plus twice rank 0's slowest step. (A timeout per
  // step made a job whose rank died after its last collective fail after 33 s under --timeout 5.)
  int64_t slowest_ns = 0;
  for (const auto& [start, end] : read_rank(base + ".result").steps)
    slowest_ns = std::max(slowest_ns, end - start);
  return collect_launched(graph, o.dir,
                          o.timeout + std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::nanoseconds(2 * slowest_ns)));
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
