#include "sim/report.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/intervals.h"

namespace cs::sim {
namespace {

void add_link_report(Report& r, const Timeline& tl, const WorkloadFacts& facts) {
  if (!facts.links) return;
  const std::vector<LinkInfo>& info = *facts.links;
  const double step = r.step_time.seconds();
  auto utilisation = [&](uint32_t l) { return step > 0 ? tl.links.busy_seconds[l] / step : 0.0; };
  // Busiest first, ties in link order. The keys are sorted and each entry (two strings) built once
  // in place: at 131,072 GPUs there are a million of them.
  std::vector<std::pair<double, uint32_t>> order;
  for (uint32_t l = 0; l < tl.links.bytes.size() && l < info.size(); ++l) {
    if (tl.links.bytes[l] > 0) order.push_back({utilisation(l), l});
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  r.links.reserve(order.size());
  for (const auto& [u, l] : order)
    r.links.push_back({l, info[l].kind, tl.links.bytes[l], tl.links.busy_seconds[l], u});
  r.link_name =
      facts.link_name ? facts.link_name : [](uint32_t l) { return "link " + std::to_string(l); };
  // Per kind, summed in link order (the order sums were always taken in). A few kinds over a
  // million links: each kind's summary is found once by name, then by its view.
  std::vector<std::pair<std::string_view, LinkKindSummary*>> kinds;
  auto summary_of = [&](std::string_view kind) -> LinkKindSummary& {
    for (const auto& [name, s] : kinds) {
      if (name == kind) return *s;
    }
    return *kinds.emplace_back(kind, &r.link_kinds[std::string(kind)]).second;
  };
  for (uint32_t l = 0; l < tl.links.bytes.size() && l < info.size(); ++l) {
    if (tl.links.bytes[l] <= 0) continue;
    LinkKindSummary& k = summary_of(info[l].kind);
    ++k.links;
    k.bytes += tl.links.bytes[l];
    k.mean_utilisation += utilisation(l);
    k.max_utilisation = std::max(k.max_utilisation, utilisation(l));
  }
  for (auto& [kind, k] : r.link_kinds) k.mean_utilisation /= k.links;
}

}  // namespace

Report make_report(const ir::TaskGraph& g, const Timeline& tl, const WorkloadFacts& facts) {
  Report r;
  r.tasks = g.size();
  r.step_time = tl.makespan;
  const double secs = tl.makespan.seconds();
  if (secs > 0) {
    r.tokens_per_second = facts.tokens_per_step / secs;
    r.samples_per_second = facts.samples_per_step / secs;
    if (facts.peak_flops_per_gpu.value > 0)
      r.mfu = facts.model_flops_per_step.value /
              (secs * g.cluster_size() * facts.peak_flops_per_gpu.value);
  }
  std::vector<CoverBuilder> compute(g.ranks()), comm(g.ranks());
  r.ranks.assign(g.ranks(), RankReport{});
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const ir::Task& task = g.task(t);
    const TaskTiming& tm = tl.tasks[t];
    switch (task.kind) {
      case ir::TaskKind::compute:
        compute[task.rank].add(tm.start.ps, tm.end.ps);
        break;
      case ir::TaskKind::collective: {
        comm[task.rank].add(tm.start.ps, tm.end.ps);
        r.ranks[task.rank].peer_wait += tm.start - tm.ready;
        if (task.rank == 0) {
          const auto& call = g.collective(task);
          auto& stat = r.collectives[std::string(ir::to_string(call.type))];
          ++stat.calls;
          stat.bytes += call.bytes;
          stat.time += tm.end - tm.start;
        }
        break;
      }
      case ir::TaskKind::send:
        comm[task.rank].add(tm.start.ps, tm.end.ps);
        r.ranks[task.rank].peer_wait += tm.start - tm.ready;
        break;
      case ir::TaskKind::recv:  // posted ahead on its own stream: its wait is not lost time
        comm[task.rank].add(tm.start.ps, tm.end.ps);
        break;
      default:
        break;
    }
  }
  r.memory_capacity = facts.memory_capacity;
  const auto& stage_of = facts.stage_of_rank;
  const int stage_count =
      stage_of.empty() ? 1 : *std::max_element(stage_of.begin(), stage_of.end()) + 1;
  r.stages.assign(static_cast<size_t>(stage_count), StageReport{});
  std::vector<int64_t> ranks_in_stage(static_cast<size_t>(stage_count), 0);
  for (ir::RankId k = 0; k < g.ranks(); ++k) {
    RankReport& rr = r.ranks[k];
    rr.cluster_rank = g.cluster_rank(k);
    rr.stage = k < stage_of.size() ? stage_of[k] : 0;
    const std::vector<Interval> compute_cover = compute[k].take(), comm_cover = comm[k].take();
    const int64_t c = covered_length(compute_cover);
    const int64_t m = covered_length(comm_cover);
    const int64_t busy = c + m - overlap_length(compute_cover, comm_cover);
    rr.compute = {c};
    rr.communication = {m};
    rr.exposed_communication = {busy - c};
    rr.idle = {tl.makespan.ps - busy};
    rr.overlap_percent =
        m > 0 ? 100.0 * (1.0 - static_cast<double>(busy - c) / static_cast<double>(m)) : 100.0;
    rr.memory = tl.memory[k];
    if (rr.memory.peak > r.peak_memory) {
      r.peak_memory = rr.memory.peak;
      r.peak_index = k;
    }
    r.stages[static_cast<size_t>(rr.stage)].idle += rr.idle;
    ++ranks_in_stage[static_cast<size_t>(rr.stage)];
  }
  for (size_t st = 0; st < r.stages.size(); ++st) {
    if (ranks_in_stage[st] > 0) r.stages[st].idle = {r.stages[st].idle.ps / ranks_in_stage[st]};
  }
  r.fits = facts.memory_capacity.count == 0 || r.peak_memory <= facts.memory_capacity.count;
  add_link_report(r, tl, facts);
  return r;
}

void set_step_time(Report& r, SimTime step_time) {
  if (step_time.ps <= 0 || r.step_time.ps <= 0) return;
  const double scale = r.step_time.seconds() / step_time.seconds();
  r.step_time = step_time;
  r.tokens_per_second *= scale;
  r.samples_per_second *= scale;
  r.mfu *= scale;
}

MeanRankTimes mean_rank_times(const Report& r) {
  MeanRankTimes m;
  if (r.ranks.empty()) return m;
  for (const auto& rr : r.ranks) {
    m.compute += rr.compute;
    m.exposed_communication += rr.exposed_communication;
    m.idle += rr.idle;
  }
  const auto n = static_cast<int64_t>(r.ranks.size());
  return {{m.compute.ps / n}, {m.exposed_communication.ps / n}, {m.idle.ps / n}};
}

}  // namespace cs::sim
