#include "sim/trace_selection.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace cs::sim {
namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

bool rank_in(const TraceOptions& o, ir::RankId cluster_rank) {
  if (o.ranks.empty()) return true;
  for (const auto& [lo, hi] : o.ranks) {
    if (cluster_rank >= lo && cluster_rank <= hi) return true;
  }
  return false;
}

}  // namespace

TraceSelection::TraceSelection(const ir::TaskGraph& g, const Timeline& tl, const TraceOptions& o)
    : g_(g), tl_(tl), o_(o), keep_rank_(g.ranks()) {
  for (ir::RankId r = 0; r < g.ranks(); ++r) keep_rank_[r] = rank_in(o, g.cluster_rank(r));
}

std::vector<uint8_t> TraceSelection::flow_roles() const {
  std::vector<uint8_t> role(g_.size(), kNoFlow);
  if (!o_.flows) return role;
  std::vector<ir::TaskId> send_of(g_.transfer_count(), UINT32_MAX),
      recv_of(g_.transfer_count(), UINT32_MAX);
  std::vector<uint32_t> offsets(g_.collective_count() + 1, 0);
  for (ir::TaskId t = 0; t < g_.size(); ++t) {
    const ir::Task& task = g_.task(t);
    if (task.kind == ir::TaskKind::send) send_of[task.payload] = t;
    if (task.kind == ir::TaskKind::recv) recv_of[task.payload] = t;
    if (task.kind == ir::TaskKind::collective && task_kept(t)) ++offsets[task.payload + 1];
  }
  for (ir::TransferId x = 0; x < g_.transfer_count(); ++x) {
    if (send_of[x] == UINT32_MAX || recv_of[x] == UINT32_MAX || !task_kept(send_of[x]) ||
        !task_kept(recv_of[x]))
      continue;
    role[send_of[x]] = kFlowOut;
    role[recv_of[x]] = kFlowIn;
  }
  for (size_t c = 0; c < g_.collective_count(); ++c) offsets[c + 1] += offsets[c];
  std::vector<ir::TaskId> members(offsets.back());
  std::vector<uint32_t> fill(offsets.begin(), offsets.end() - 1);
  for (ir::TaskId t = 0; t < g_.size(); ++t) {  // task order within each collective
    const ir::Task& task = g_.task(t);
    if (task.kind == ir::TaskKind::collective && task_kept(t)) members[fill[task.payload]++] = t;
  }
  for (size_t c = 0; c < g_.collective_count(); ++c) {
    auto* b = members.data() + offsets[c];
    auto* e = members.data() + offsets[c + 1];
    if (e - b < 2) continue;
    std::stable_sort(
        b, e, [&](ir::TaskId x, ir::TaskId y) { return tl_.tasks[x].start < tl_.tasks[y].start; });
    for (auto* p = b; p != e; ++p) role[*p] = (p != b ? kFlowIn : 0) | (p + 1 != e ? kFlowOut : 0);
  }
  return role;
}

void TraceSelection::for_each_memory_state(
    const std::function<void(ir::RankId, SimTime, const CategoryGiB&)>& at_window_start,
    const std::function<void(ir::RankId, SimTime, const CategoryGiB&, int category)>& f) const {
  std::vector<CategoryGiB> gib(g_.ranks());
  for (auto& row : gib) row.fill(0.0);
  auto apply = [&](const MemorySample& m) {
    gib[m.rank][static_cast<size_t>(m.category)] =
        static_cast<double>(m.category_bytes) / kBytesPerGiB;
  };
  if (o_.window) {
    for (const MemorySample& m : tl_.memory_samples) {
      if (m.time < o_.window->first) apply(m);
    }
    for (ir::RankId r = 0; r < g_.ranks(); ++r) {
      if (keep_rank_[r]) at_window_start(r, o_.window->first, gib[r]);
    }
  }
  for (const MemorySample& m : tl_.memory_samples) {
    if (!keep_rank_[m.rank] ||
        (o_.window && (m.time < o_.window->first || m.time > o_.window->second)))
      continue;
    apply(m);
    f(m.rank, m.time, gib[m.rank], static_cast<int>(m.category));
  }
}

std::vector<std::string_view> TraceSelection::link_kinds() const {
  std::vector<std::string_view> kinds;
  if (!o_.costs || !o_.links || o_.costs->link_count() == 0) return kinds;
  for (size_t l = 0; l < o_.links->size(); ++l) {
    if (l >= tl_.links.bytes.size() || tl_.links.bytes[l] <= 0) continue;
    const std::string_view kind = (*o_.links)[l].kind;
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  }
  // Kinds in name order, so the output does not depend on link numbering.
  std::sort(kinds.begin(), kinds.end());
  return kinds;
}

// Each communication's utilisation of each link kind, as a rise at its start and a fall at its end,
// in time order.
std::vector<TraceSelection::LinkDelta> TraceSelection::link_deltas(
    const std::vector<std::string_view>& kinds) const {
  const std::vector<LinkInfo>& links = *o_.links;
  std::vector<int> kind_of(links.size(), -1);
  std::vector<double> carrying(kinds.size(), 0.0);
  for (size_t l = 0; l < links.size(); ++l) {
    if (l >= tl_.links.bytes.size() || tl_.links.bytes[l] <= 0) continue;
    kind_of[l] = static_cast<int>(std::lower_bound(kinds.begin(), kinds.end(), links[l].kind) -
                                  kinds.begin());
    carrying[static_cast<size_t>(kind_of[l])] += 1;
  }
  std::vector<LinkDelta> deltas;
  std::vector<double> busy(kinds.size());
  auto add = [&](const cost::CommCost& cost, double bytes, SimTime start, SimTime end) {
    if (!cost.plan || end <= start) return;
    std::fill(busy.begin(), busy.end(), 0.0);
    for (const cost::LinkPhase& ph : cost.plan->phases) {
      const double units = bytes * ph.units_per_byte;
      for (const cost::LinkLoad& l : ph.loads) {
        if (l.link >= kind_of.size() || kind_of[l.link] < 0) continue;
        const double capacity = o_.costs->link_capacity(l.link);
        if (capacity > 0) busy[static_cast<size_t>(kind_of[l.link])] += units * l.weight / capacity;
      }
    }
    for (size_t k = 0; k < kinds.size(); ++k) {
      if (busy[k] <= 0) continue;
      const double u = busy[k] / (end - start).seconds() / carrying[k];
      deltas.push_back({start, static_cast<uint32_t>(k), u});
      deltas.push_back({end, static_cast<uint32_t>(k), -u});
    }
  };
  // A collective spans its members' earliest start to latest end.
  std::vector<SimTime> start_of(g_.collective_count(), SimTime{INT64_MAX}),
      end_of(g_.collective_count(), SimTime{});
  std::vector<char> seen(g_.collective_count(), 0);
  for (ir::TaskId t = 0; t < g_.size(); ++t) {
    const ir::Task& task = g_.task(t);
    if (task.kind == ir::TaskKind::collective) {
      start_of[task.payload] = std::min(start_of[task.payload], tl_.tasks[t].start);
      end_of[task.payload] = std::max(end_of[task.payload], tl_.tasks[t].end);
      seen[task.payload] = 1;
    } else if (task.kind == ir::TaskKind::send) {
      const auto& tr = g_.transfer(task);
      add(o_.costs->transfer(tr), static_cast<double>(tr.bytes.count), tl_.tasks[t].start,
          tl_.tasks[t].end);
    }
  }
  for (size_t c = 0; c < g_.collective_count(); ++c) {
    if (!seen[c]) continue;
    const auto& call = g_.collective_call(static_cast<ir::CollectiveId>(c));
    add(o_.costs->collective(call, g_.group_ranks(call.group)),
        static_cast<double>(call.bytes.count), start_of[c], end_of[c]);
  }
  std::stable_sort(deltas.begin(), deltas.end(),
                   [](const LinkDelta& a, const LinkDelta& b) { return a.at < b.at; });
  return deltas;
}

void TraceSelection::for_each_link_level(
    const std::function<void(SimTime, const std::vector<double>&)>& f) const {
  const std::vector<std::string_view> kinds = link_kinds();
  if (kinds.empty()) return;
  const std::vector<LinkDelta> deltas = link_deltas(kinds);
  std::vector<double> level(kinds.size(), 0.0), percent(kinds.size(), 0.0);
  auto report = [&](SimTime at) {
    for (size_t k = 0; k < kinds.size(); ++k)
      percent[k] = std::round(std::max(0.0, 100.0 * level[k]) * 1e4) / 1e4;
    f(at, percent);
  };
  bool started = !o_.window;
  for (size_t i = 0; i < deltas.size();) {
    const SimTime at = deltas[i].at;
    if (!started && at >= o_.window->first) {
      report(o_.window->first);
      started = true;
    }
    for (; i < deltas.size() && deltas[i].at == at; ++i)
      level[deltas[i].kind] += deltas[i].utilisation;
    if (o_.window && (at < o_.window->first || at > o_.window->second)) continue;
    report(at);
  }
}

}  // namespace cs::sim
