#include "reports/bottleneck.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "sim/intervals.h"

namespace cs::reports {
namespace {

using sim::Interval;

const char* parallelism_of(const std::string& stream, ir::TaskKind kind, const ir::TaskGraph& g,
                           const ir::Task& task) {
  const std::string_view prefix = std::string_view(stream).substr(0, stream.find('.'));
  if (prefix == "dp") return "data-parallel";
  if (prefix == "pp") return "pipeline";
  if (prefix == "cp") return "context-parallel";
  if (prefix == "ep") return "expert-parallel";
  if (kind == ir::TaskKind::collective) {
    // Ulysses' all-to-alls (attention_core.cpp) are named "...cp_all_to_all".
    if (g.name(task.name).find(".cp_") != std::string::npos) return "context-parallel";
    return g.collective(task).type == ir::CollectiveType::all_to_all ? "expert-parallel"
                                                                     : "tensor-parallel";
  }
  return "point-to-point";
}

// The kind of the link with the most busy time in the plan ("" without one). Busy time is
// bytes x units_per_byte x weight / capacity; the bytes are common to every load, so the answer
// depends on the plan alone and is kept per plan (a 131,072-GPU ring has a million loads, and
// every layer's collective on a group shares its plan).
class LimitingKinds {
 public:
  LimitingKinds(const cost::CostModel& costs, const std::vector<sim::LinkInfo>& links)
      : links_(links), capacity_(links.size()) {
    for (uint32_t l = 0; l < capacity_.size(); ++l) capacity_[l] = costs.link_capacity(l);
  }

  const std::string& of(const cost::LinkPlan* plan, double bytes) {
    static const std::string none;
    if (!plan || !(bytes > 0)) return none;
    auto [it, added] = kinds_.try_emplace(plan);
    if (added) it->second = limiting(*plan);
    return it->second;
  }

 private:
  std::string limiting(const cost::LinkPlan& plan) const {
    double best = 0;
    std::string kind;
    for (const cost::LinkPhase& ph : plan.phases) {
      for (const cost::LinkLoad& l : ph.loads) {
        if (l.link >= capacity_.size() || capacity_[l.link] <= 0) continue;
        const double busy_per_byte = ph.units_per_byte * l.weight / capacity_[l.link];
        if (busy_per_byte > best) {
          best = busy_per_byte;
          kind = links_[l.link].kind;
        }
      }
    }
    return kind;
  }

  const std::vector<sim::LinkInfo>& links_;
  std::vector<double> capacity_;
  std::unordered_map<const cost::LinkPlan*, std::string> kinds_;
};

std::string pct(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, share < 0.1 && share > 0 ? "%.1f%%" : "%.0f%%", 100.0 * share);
  return buf;
}

std::string ms(SimTime t) { return format_time(t); }

std::string describe(const ExposedComm& c) {
  std::string s = c.parallelism + " " + c.operation;
  if (!c.link_kind.empty())
    s += (is_network_link(c.link_kind) ? " over " : " on ") + link_kind_title(c.link_kind);
  return s;
}

}  // namespace

std::string link_kind_title(const std::string& kind) {
  if (kind == "nvlink") return "NVLink";
  if (kind == "infiniband") return "InfiniBand";
  if (kind == "pcie") return "PCIe";
  if (kind == "ethernet") return "Ethernet";
  return kind;
}

bool is_network_link(const std::string& kind) { return kind == "infiniband" || kind == "ethernet"; }

BottleneckFigures bottleneck_figures(const ir::TaskGraph& g, const sim::Timeline& tl,
                                     const sim::Report& report, const cost::CostModel* costs,
                                     const std::vector<sim::LinkInfo>* links) {
  BottleneckFigures f;
  f.step_time = report.step_time;
  f.link_kinds = report.link_kinds;
  f.critical_path = sim::critical_path(g, tl).time;
  if (g.ranks() == 0) return f;

  std::vector<std::vector<Interval>> compute(g.ranks());
  {
    std::vector<sim::CoverBuilder> covers(g.ranks());
    for (ir::TaskId t = 0; t < g.size(); ++t) {
      if (g.task(t).kind == ir::TaskKind::compute)
        covers[g.task(t).rank].add(tl.tasks[t].start.ps, tl.tasks[t].end.ps);
    }
    for (ir::RankId r = 0; r < g.ranks(); ++r) compute[r] = covers[r].take();
  }

  const bool with_links = costs && links;
  std::optional<LimitingKinds> limiting;
  if (with_links) limiting.emplace(*costs, *links);
  // Per collective call: its plan's lookup hashes the group's ranks, once is enough.
  std::vector<const std::string*> collective_kind(with_links ? g.collective_count() : 0);
  // Keyed by views of strings that outlive the loop (literals, the graph's, LimitingKinds'): no
  // allocation per call (a million exposed calls at 16,384 GPUs).
  std::map<std::tuple<std::string_view, std::string_view, std::string_view>, int64_t> exposed;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const ir::Task& task = g.task(t);
    if (task.kind != ir::TaskKind::collective && task.kind != ir::TaskKind::send &&
        task.kind != ir::TaskKind::recv)
      continue;
    const int64_t e =
        sim::uncovered_length(compute[task.rank], tl.tasks[t].start.ps, tl.tasks[t].end.ps);
    if (e <= 0) continue;
    std::string_view op, kind;
    if (task.kind == ir::TaskKind::collective) {
      op = ir::to_string(g.collective(task).type);
      if (with_links) {
        const std::string*& known = collective_kind[task.payload];
        if (!known) {
          const auto& call = g.collective(task);
          known = &limiting->of(costs->collective(call, g.group_ranks(call.group)).plan,
                                static_cast<double>(call.bytes.count));
        }
        kind = *known;
      }
    } else {
      op = "send/recv";
      if (with_links)
        kind = limiting->of(costs->transfer(g.transfer(task)).plan,
                            static_cast<double>(g.transfer(task).bytes.count));
    }
    exposed[{parallelism_of(g.stream_names()[task.stream], task.kind, g, task), op, kind}] += e;
  }
  for (const auto& [key, ps] : exposed) {
    f.communication.push_back({std::string(std::get<0>(key)),
                               std::string(std::get<1>(key)),
                               std::string(std::get<2>(key)),
                               {ps / static_cast<int64_t>(g.ranks())}});
  }
  std::stable_sort(
      f.communication.begin(), f.communication.end(),
      [](const ExposedComm& a, const ExposedComm& b) { return a.exposed > b.exposed; });
  return f;
}

std::vector<std::string> explain_bottleneck(const BottleneckFigures& f) {
  std::vector<std::string> out;
  using sim::PathClass;
  auto at = [&](PathClass c) { return f.critical_path[static_cast<size_t>(c)]; };
  SimTime total;
  for (SimTime t : f.critical_path) total += t;
  if (total.ps <= 0) return {"no critical path: the step is empty"};
  auto share = [&](SimTime t) { return static_cast<double>(t.ps) / static_cast<double>(total.ps); };
  const SimTime compute =
      at(PathClass::gemm) + at(PathClass::attention) + at(PathClass::memory_bound);
  const SimTime comm = at(PathClass::communication);
  const SimTime idle = at(PathClass::idle);
  const SimTime host = at(PathClass::host);
  const ExposedComm* top = f.communication.empty() ? nullptr : &f.communication.front();
  const double step_ps = static_cast<double>(std::max<int64_t>(f.step_time.ps, 1));

  if (host >= compute && host >= comm && host >= idle) {
    out.push_back("step bound by the host: " + pct(share(host)) +
                  " of the critical path is the GPU waiting for kernels to be issued (the "
                  "stack's dispatch time per kernel); fewer, larger kernels shorten it (a larger "
                  "micro-batch, torch.compile, CUDA graphs)");
  } else if (comm >= compute && comm >= idle) {
    std::string s = "step bound by communication: " + pct(share(comm)) + " of the critical path";
    if (top)
      s += "; most exposed: " + describe(*top) + ", " + ms(top->exposed) +
           " per rank with no compute under it (" +
           pct(static_cast<double>(top->exposed.ps) / step_ps) + " of the step)";
    out.push_back(s);
  } else if (idle >= compute) {
    out.push_back("step bound by waiting: " + pct(share(idle)) +
                  " of the critical path is idle (pipeline bubble, or ranks waiting for peers); "
                  "more micro-batches or fewer stages shorten it");
  } else {
    out.push_back("step bound by compute: " + pct(share(compute)) +
                  " of the critical path (GEMMs " + pct(share(at(PathClass::gemm))) +
                  ", attention " + pct(share(at(PathClass::attention))) +
                  ", memory-bound kernels " + pct(share(at(PathClass::memory_bound))) + ")");
    if (share(host) >= kMentionShare) {
      out.push_back("the GPU waits " + pct(share(host)) +
                    " of the critical path for its host to issue kernels (the stack's dispatch "
                    "time per kernel)");
    }
    if (top && share(comm) >= kMentionShare) {
      out.push_back("communication is " + pct(share(comm)) +
                    " of the critical path; most exposed: " + describe(*top) + ", " +
                    ms(top->exposed) + " per rank (" +
                    pct(static_cast<double>(top->exposed.ps) / step_ps) + " of the step)");
    }
  }
  for (const auto& [kind, k] : f.link_kinds) {
    if (!is_network_link(kind)) continue;
    SimTime over_it;
    for (const auto& c : f.communication) {
      if (c.link_kind == kind) over_it += c.exposed;
    }
    const double exposed_share = static_cast<double>(over_it.ps) / step_ps;
    std::string s = link_kind_title(kind) + " links at " + pct(k.mean_utilisation) + " (busiest " +
                    pct(k.max_utilisation) + ")";
    if (k.max_utilisation < kBusyLink && exposed_share < kExposedShare) {
      s += ", and communication limited by them is exposed for " + pct(exposed_share) +
           " of the step: more " + link_kind_title(kind) + " bandwidth will not help";
    } else {
      s += "; communication limited by them is exposed for " + pct(exposed_share) +
           " of the step (" + ms(over_it) + "): more " + link_kind_title(kind) +
           " bandwidth would shorten the step by up to that";
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace cs::reports
