#include "validate/kineto.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/limits.h"
#include "common/text_file.h"
#include "sim/intervals.h"

namespace cs::validate {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

// Exposed communication: |comm U compute| - |compute|, in the unit of the intervals.
int64_t exposed(std::vector<sim::Interval> comm, const std::vector<sim::Interval>& compute) {
  const auto c = sim::merge_intervals(compute);
  comm.insert(comm.end(), compute.begin(), compute.end());
  return sim::covered_length(sim::merge_intervals(std::move(comm))) - sim::covered_length(c);
}

// deviceProperties[0].name and distributedInfo.{rank, world_size}, where the trace has them
// (torch.profiler writes both on a distributed run); a world size beyond 131,072 GPUs, the most
// a scenario may have, or a rank outside it is refused.
void read_run_facts(const nlohmann::json& j, const std::string& name, KinetoTrace& t) {
  if (!j.is_object()) return;
  if (j.contains("deviceProperties") && j["deviceProperties"].is_array() &&
      !j["deviceProperties"].empty() && j["deviceProperties"][0].is_object()) {
    const nlohmann::json& d = j["deviceProperties"][0];
    if (d.contains("name") && d["name"].is_string())
      t.gpu_name = d["name"].get<std::string>().substr(0, 200);
  }
  if (!j.contains("distributedInfo") || !j["distributedInfo"].is_object()) return;
  const nlohmann::json& info = j["distributedInfo"];
  auto whole = [&](const char* key, int64_t lo, int64_t hi) -> int64_t {
    if (!info.contains(key)) return -1;
    const nlohmann::json& v = info[key];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      throw UserError(name + ": distributedInfo." + key + " must be a whole number from " +
                      std::to_string(lo) + " to " + std::to_string(hi));
    return v.get<int64_t>();
  };
  const int64_t world = whole("world_size", 1, limits::kMaxGpus);
  t.world_size = world > 0 ? static_cast<int>(world) : 0;
  t.rank = static_cast<int>(whole("rank", 0, world > 0 ? world - 1 : limits::kMaxGpus - 1));
}

constexpr double kMaxUs = 1e12;  // 11 days: the longest duration read
// Timestamps: microseconds from the profiler's origin (Kineto's base time, or the Unix epoch in
// older traces: ~1.7e15 us in 2024). Beyond 4e15 us (the epoch plus 127 years) the breakdown's
// nanoseconds approach 64 bits (1e17 us wrapped them and gave zero exposed communication) and a
// double's step passes 0.5 us.
constexpr double kMaxTimestampUs = 4e15;
// The most a trace may inflate to: 512 MiB, which the parse holds in about 4 GB, half of an 8 GB
// machine. The whole text is parsed into nlohmann's tree, about 7.5 bytes of memory per byte of
// trace at the peak (measured 2026-11-27: a 62 MB trace of kernels and CPU operators took 464 MB,
// 94 MB of kernel events alone 653 MB: `validate --kineto`'s maximum resident size), so the 1 GiB
// read before needed ~8 GB. A PyTorch profiler trace of a few steps of a large model is tens to
// hundreds of MB; /dev/zero or a gzip bomb was read until std::bad_alloc.
constexpr size_t kMaxTraceBytes = size_t{512} << 20;

// An event's "dur" (0 to 1e12 us) or "ts" (within kMaxTimestampUs of the origin), in microseconds;
// `where` names the event in errors.
double event_us(const nlohmann::json& e, const char* key, const std::string& where) {
  if (!e.contains(key) || !e[key].is_number())
    throw UserError(where + ": missing \"" + key + "\" (a number of microseconds)");
  const double v = e[key].get<double>();
  const bool ts = key == std::string("ts");
  if (!std::isfinite(v) || v < (ts ? -kMaxTimestampUs : 0) || v > (ts ? kMaxTimestampUs : kMaxUs)) {
    std::ostringstream m;
    m << where << ": " << key << " " << v << " is out of range: "
      << (ts ? "from -4e15 to 4e15 us (the Unix epoch plus 127 years; beyond, nanosecond times "
               "overflow 64 bits)"
             : "from 0 to 1e12 us (11 days)");
    throw UserError(m.str());
  }
  return v;
}

}  // namespace

std::string_view to_string(KernelClass c) {
  switch (c) {
    case KernelClass::gemm:
      return "gemm";
    case KernelClass::attention:
      return "attention";
    case KernelClass::memory_bound:
      return "memory_bound";
    case KernelClass::nccl:
      return "nccl";
  }
  return "?";
}

KernelClass classify_kernel(std::string_view name) {
  const std::string n = lower(name);
  if (contains(n, "nccl")) return KernelClass::nccl;
  // Before gemm: FlashAttention's and cuDNN's fused attention kernels can name their GEMMs.
  if (contains(n, "flash") || contains(n, "fmha") || contains(n, "attention"))
    return KernelClass::attention;
  if (contains(n, "gemm") || contains(n, "cutlass") || contains(n, "xmma") ||
      contains(n, "nvjet") || n.rfind("ampere_", 0) == 0 || n.rfind("hopper_", 0) == 0 ||
      n.rfind("volta_", 0) == 0 || n.rfind("turing_", 0) == 0 || n.rfind("sm80_", 0) == 0 ||
      n.rfind("sm90_", 0) == 0) {
    return KernelClass::gemm;
  }
  return KernelClass::memory_bound;
}

std::string nccl_collective(std::string_view name) {
  const std::string n = lower(name);
  if (contains(n, "allreduce")) return "all_reduce";
  if (contains(n, "allgather")) return "all_gather";
  if (contains(n, "reducescatter")) return "reduce_scatter";
  if (contains(n, "broadcast")) return "broadcast";
  if (contains(n, "alltoall")) return "all_to_all";
  if (contains(n, "sendrecv") || contains(n, "send") || contains(n, "recv")) return "send_recv";
  return "other";
}

KinetoTrace read_kineto_trace(const std::string& path) {
  const std::string too_large = path + ": the profiler trace is larger than " +
                                std::to_string(kMaxTraceBytes >> 20) +
                                " MiB (inflated); not read (parsing takes about 7.5 bytes of "
                                "memory per byte)";
  // A file past the bound is refused unread (a gzip file inflates to more still).
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) &&
      std::filesystem::file_size(path, ec) > kMaxTraceBytes)
    throw UserError(too_large);
  // zlib reads a plain file as it is and a gzip one inflated: torch.profiler's
  // tensorboard_trace_handler writes *.pt.trace.json.gz, export_chrome_trace plain JSON.
  // A folder was read as "a damaged gzip file?"; a named pipe without a writer waited forever.
  const int fd = open_for_reading(path, "profiler trace");
  gzFile f = gzdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    throw UserError(path + ": cannot open the profiler trace");
  }
  std::string text;
  char buf[1 << 16];
  int n = 0;
  bool larger = false;  // stops before the text passes the bound (its next doubling: 1 GiB)
  while (!larger && (n = gzread(f, buf, sizeof buf)) > 0) {
    larger = text.size() + static_cast<size_t>(n) > kMaxTraceBytes;
    if (!larger) text.append(buf, static_cast<size_t>(n));
  }
  const bool failed = n < 0;
  gzclose(f);
  if (larger) throw UserError(too_large);
  if (failed) throw UserError(path + ": cannot read the profiler trace (a damaged gzip file?)");
  return parse_kineto_trace(text, path);
}

namespace {

// A GPU event as a kernel: its class, device (args.device, else the pid Kineto gives a GPU's
// events: the device index) and stream.
KinetoKernel read_kernel(const nlohmann::json& e, const std::string& cat,
                         const std::string& ev_name, double dur, const std::string& where) {
  KinetoKernel k;
  k.name = ev_name;
  k.start_us = event_us(e, "ts", where);
  k.dur_us = dur;
  const nlohmann::json* args = e.contains("args") && e["args"].is_object() ? &e["args"] : nullptr;
  auto integer = [&](const char* key, int64_t max) -> std::optional<int64_t> {
    if (!args || !args->contains(key)) return std::nullopt;
    const nlohmann::json& v = (*args)[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > max) {
      throw UserError(where + ": args." + key + " must be a whole number from 0 to " +
                      std::to_string(max));
    }
    return v.get<int64_t>();
  };
  if (const auto d = integer("device", 1 << 16))
    k.device = static_cast<int>(*d);
  else if (e.contains("pid") && e["pid"].is_number_integer() && e["pid"].get<int64_t>() >= 0 &&
           e["pid"].get<int64_t>() < (1 << 16))
    k.device = e["pid"].get<int>();
  if (const auto s = integer("stream", int64_t{1} << 40)) k.stream = *s;
  k.cls = cat == "kernel" ? classify_kernel(k.name) : KernelClass::memory_bound;
  if (k.cls == KernelClass::nccl) k.collective = nccl_collective(k.name);
  return k;
}

}  // namespace

KinetoTrace parse_kineto_trace(const std::string& text, const std::string& name) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e6816
    throw UserError(name + ": not JSON (" + e.what() + ")");
  }
  const nlohmann::json* events = nullptr;
  if (j.is_object() && j.contains("traceEvents") && j["traceEvents"].is_array())
    events = &j["traceEvents"];
  else if (j.is_array())
    events = &j;
  if (!events)
    throw UserError(name +
                    ": expected a Chrome trace: an object with a traceEvents array "
                    "(torch.profiler's export_chrome_trace)");
  KinetoTrace t;
  t.file = name;
  read_run_facts(j, name, t);
  for (size_t i = 0; i < events->size(); ++i) {
    const nlohmann::json& e = (*events)[i];
    if (!e.is_object()) continue;
    const std::string cat =
        e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
    const std::string ev_name =
        e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    const bool gpu = cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
    const bool step = ev_name.rfind("ProfilerStep#", 0) == 0 && cat != "gpu_user_annotation";
    if (!gpu && !step) continue;
    const std::string where = name + ": traceEvents[" + std::to_string(i) + "] ('" + ev_name + "')";
    const double dur = event_us(e, "dur", where);
    if (step) {
      // A step of no time has no error to print ("+0.0%" was printed against it).
      if (dur <= 0) throw UserError(where + ": a profiler step of 0 us (dur); a step takes time");
      t.step_us.push_back(dur);
      continue;
    }
    t.kernels.push_back(read_kernel(e, cat, ev_name, dur, where));
  }
  if (t.kernels.empty())
    throw UserError(name +
                    ": no GPU kernels (events with \"cat\": \"kernel\"); was the profiler run with "
                    "ProfilerActivity.CUDA?");
  for (const auto& k : t.kernels) t.devices.push_back(k.device);
  std::sort(t.devices.begin(), t.devices.end());
  t.devices.erase(std::unique(t.devices.begin(), t.devices.end()), t.devices.end());
  return t;
}

StepBreakdown measured_breakdown(const KinetoTrace& trace, int device) {
  StepBreakdown b;
  std::vector<sim::Interval> comm, compute;
  double first = 0, last = 0;
  bool any = false;
  // Nanoseconds as integers for the interval sums (Kineto's ts carry three decimals of a us).
  auto ns = [](double us) { return static_cast<int64_t>(std::llround(us * 1e3)); };
  for (const auto& k : trace.kernels) {
    if (k.device != device) continue;
    b.by_class[std::string(to_string(k.cls))] += k.dur_us;
    const sim::Interval iv{ns(k.start_us), ns(k.start_us + k.dur_us)};
    if (k.cls == KernelClass::nccl) {
      b.by_collective[k.collective] += k.dur_us;
      b.communication_us += k.dur_us;
      comm.push_back(iv);
    } else {
      compute.push_back(iv);
    }
    first = any ? std::min(first, k.start_us) : k.start_us;
    last = any ? std::max(last, k.start_us + k.dur_us) : k.start_us + k.dur_us;
    any = true;
  }
  if (!any) throw UserError(trace.file + ": no kernels on device " + std::to_string(device));
  b.exposed_us = static_cast<double>(exposed(comm, compute)) * 1e-3;
  if (!trace.step_us.empty()) {
    std::vector<double> s = trace.step_us;
    std::sort(s.begin(), s.end());
    b.steps = static_cast<int>(s.size());
    b.step_us = s.size() % 2 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2;
    b.step_from =
        "median of " + std::to_string(s.size()) + " ProfilerStep" + (s.size() == 1 ? "" : "s");
  } else {
    b.step_us = last - first;
    b.step_from = "the GPU's span, first kernel to last (no ProfilerStep annotations)";
  }
  // Per step: the kernels of every profiled step divided by their number.
  const double n = b.steps;
  for (auto& [k, v] : b.by_class) v /= n;
  for (auto& [k, v] : b.by_collective) v /= n;
  b.communication_us /= n;
  b.exposed_us /= n;
  return b;
}

StepBreakdown predicted_breakdown(const ir::TaskGraph& g, const sim::Timeline& tl, ir::RankId rank,
                                  double step_us) {
  StepBreakdown b;
  b.step_us = step_us;
  b.step_from = "simulated";
  std::vector<sim::Interval> comm, compute;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const ir::Task& task = g.task(t);
    if (task.rank != rank) continue;
    const auto& tm = tl.tasks[t];
    const double us = static_cast<double>((tm.end - tm.start).ps) * 1e-6;
    const sim::Interval iv{tm.start.ps, tm.end.ps};
    if (task.kind == ir::TaskKind::compute) {
      const ir::OpClass op = g.compute(task).op;
      const KernelClass c = op == ir::OpClass::gemm        ? KernelClass::gemm
                            : op == ir::OpClass::attention ? KernelClass::attention
                                                           : KernelClass::memory_bound;
      b.by_class[std::string(to_string(c))] += us;
      compute.push_back(iv);
    } else if (task.kind == ir::TaskKind::collective || task.kind == ir::TaskKind::send ||
               task.kind == ir::TaskKind::recv) {
      const std::string what = task.kind == ir::TaskKind::collective
                                   ? std::string(ir::to_string(g.collective(task).type))
                                   : "send_recv";
      b.by_class["nccl"] += us;
      b.by_collective[what] += us;
      b.communication_us += us;
      comm.push_back(iv);
    }
  }
  b.exposed_us = static_cast<double>(exposed(comm, compute)) * 1e-6;
  return b;
}

}  // namespace cs::validate
