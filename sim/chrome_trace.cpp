#include "sim/chrome_trace.h"

#include <array>
#include <nlohmann/json.hpp>

namespace cs::sim {

void write_chrome_trace(std::ostream& out, const ir::TaskGraph& g, const Timeline& tl,
                        const std::string& process_prefix, int pid_offset) {
  using nlohmann::json;
  json events = json::array();
  for (ir::RankId r = 0; r < g.ranks(); ++r) {
    const int pid = static_cast<int>(r) + pid_offset;
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0},
                      {"args", {{"name", process_prefix + " " + std::to_string(g.cluster_rank(r))}}}});
    for (size_t s = 0; s < g.stream_names().size(); ++s) {
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", s},
                        {"args", {{"name", g.stream_names()[s]}}}});
    }
  }
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const ir::Task& task = g.task(t);
    if (task.kind == ir::TaskKind::memory) continue;
    const TaskTiming& tm = tl.tasks[t];
    json args = {{"phase", ir::to_string(task.phase)}};
    if (task.layer >= 0) args["layer"] = task.layer;
    if (task.micro_batch >= 0) args["micro_batch"] = task.micro_batch;
    if (task.kind == ir::TaskKind::compute) {
      const auto& op = g.compute(task);
      args["op"] = ir::to_string(op.op);
      args["gflop"] = op.flops.value * 1e-9;
      args["mbytes"] = static_cast<double>(op.bytes.count) * 1e-6;
    } else if (task.kind == ir::TaskKind::collective) {
      args["collective"] = ir::to_string(g.collective(task).type);
      args["bytes"] = g.collective(task).bytes.count;
      args["wait_us"] = (tm.start - tm.ready).us();
    }
    events.push_back({{"ph", "X"}, {"name", g.task_name(t)}, {"cat", ir::to_string(task.kind)},
                      {"pid", static_cast<int>(task.rank) + pid_offset}, {"tid", task.stream},
                      {"ts", tm.start.us()}, {"dur", (tm.end - tm.start).us()}, {"args", args}});
  }
  // Memory over time: one counter per rank whose series are the categories (Perfetto stacks them).
  std::vector<std::array<double, ir::kMemoryCategoryCount>> gib(g.ranks());
  for (auto& row : gib) row.fill(0.0);
  for (const MemorySample& m : tl.memory_samples) {
    auto& row = gib[m.rank];
    row[static_cast<size_t>(m.category)] = static_cast<double>(m.category_bytes) / (1 << 30);
    json args = json::object();
    for (int c = 0; c < ir::kMemoryCategoryCount; ++c) args[std::string(ir::to_string(static_cast<ir::MemoryCategory>(c)))] = row[static_cast<size_t>(c)];
    events.push_back({{"ph", "C"}, {"name", "memory GiB"}, {"pid", static_cast<int>(m.rank) + pid_offset},
                      {"ts", m.time.us()}, {"args", args}});
  }
  json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  out << doc.dump() << '\n';
}

}  // namespace cs::sim
