#include "driver/simulation_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cost_models/device_spec.h"
#include "models/layers/lora.h"
#include "reports/bottleneck.h"
#include "reports/html_report.h"
#include "strategies/data_parallel/flavour.h"
#include "training_run/forecast.h"

namespace cs::driver {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string layout_line(const scenario::Scenario& s, const strategy::StepGraph& step) {
  const auto& l = s.layout;
  std::string cp;
  if (l.cp > 1) {
    cp = " x CP " + std::to_string(l.cp);
    if (l.cp_comm == model::CpComm::a2a) cp += " (all-to-all)";
    if (l.cp_comm == model::CpComm::a2a_p2p)
      cp += " (all-to-all over " + std::to_string(l.cp_a2a) + ", ring over " +
            std::to_string(l.cp / l.cp_a2a) + ")";
  }
  std::string out = "TP " + std::to_string(l.tp) + cp + " x PP " + std::to_string(l.pp) + " x DP " +
                    std::to_string(l.dp);
  if (l.ep > 1 || l.etp > 1) {
    out +=
        " (EP " + std::to_string(l.ep) + (l.etp > 1 ? ", ETP " + std::to_string(l.etp) : "") + ")";
  }
  if (l.tp > 1 && l.sequence_parallel) out += ", sequence parallel";
  if (l.pp > 1) {
    out += ", " + std::string(strategy::to_string(l.schedule));
    if (l.virtual_stages > 1) out += " (" + std::to_string(l.virtual_stages) + " chunks per stage)";
    if (const std::string split = strategy::stage_split_string(l, s.model.layers); !split.empty())
      out += ", " + split;
  }
  if (l.dp > 1 || strategy::is_fsdp(l.data_parallel)) {
    const strategy::DataParallelFlavour& flavour = strategy::data_parallel_flavour(l.data_parallel);
    out += ", " + std::string(flavour.name) + flavour.units_description(l, step.buckets.size());
  }
  if (l.gpus() > 1) out += ", placement " + strategy::order_string(l);
  return out;
}

}  // namespace

std::vector<std::string> bottleneck_lines(const driver::SimulationResult& r,
                                          const driver::Platform* platform) {
  return reports::explain_bottleneck(reports::bottleneck_figures(
      r.step.graph, r.timeline, r.report, platform ? &platform->costs() : nullptr,
      platform ? &platform->links() : nullptr));
}

namespace {

// The scenario, model, cluster, profile, layout, training set-up, stack and graph.
void print_setup(std::ostream& out, const driver::SimulationResult& r) {
  const auto& s = r.scenario;
  const auto& rep = r.report;
  const auto& dev = driver::device_of(s);
  out << "scenario    " << s.name << "\n";
  out << "model       " << s.model.name << ": "
      << fmt("%.1fM", static_cast<double>(r.step.parameters) * 1e-6) << " parameters, "
      << s.model.layers << " layers, hidden " << s.model.hidden << "\n";
  out << "cluster     " << s.cluster_name << ": " << s.gpus << " x " << dev.name << " (" << s.nodes
      << (s.nodes == 1 ? " node)" : " nodes)") << "\n";
  if (!s.degraded.empty()) {
    out << "degraded   ";
    for (size_t i = 0; i < s.degraded.size(); ++i)
      out << (i == 0 ? " " : ", ") << s.degraded[i].describe();
    out << "\n";
  }
  out << "profile     " << driver::profile_summary(s) << "\n";
  out << "layout      " << layout_line(s, r.step) << "\n";
  out << "training    global batch " << s.training.global_batch << ", micro-batch "
      << s.training.micro_batch << ", seq " << s.training.seq_len
      << (s.model.family != model::Family::mlp && s.training.seq_len > s.model.max_seq
              ? " (beyond the model's context of " + std::to_string(s.model.max_seq) +
                    ": rotary positions extrapolated)"
              : "")
      << ", " << r.step.micro_batches << " accumulation step"
      << (r.step.micro_batches == 1 ? "" : "s") << ", " << model::to_string(s.training.precision)
      << ", " << model::to_string(s.training.attention) << " attention, recompute "
      << model::to_string(s.training.recompute)
      << (s.training.recompute == model::Recompute::op_selective &&
                  s.training.scaled_mm == model::ScaledMmSaving::recomputed
              ? " (every low-precision GEMM recomputed: training.op_sac_scaled_mm)"
              : "")
      << (s.training.lora.enabled()
              ? ", " + model::layers::lora_summary(s.training.lora) + " (base frozen)"
              : "")
      << "\n";
  out << "stack       " << model::stack_summary(s.training.stack);
  if (s.training.optimizer_impl)
    out << "; training.optimizer_impl: " << model::to_string(*s.training.optimizer_impl)
        << " AdamW";
  if (s.training.host_per_kernel)
    out << "; training.host_per_kernel: " << s.training.host_per_kernel->us() << " us";
  if (s.training.compile_scope != model::CompileScope::model) {
    const bool loss = s.training.compile_scope == model::CompileScope::blocks;
    out << "; training.compile_scope: " << model::to_string(s.training.compile_scope)
        << " (embedding, final norm" << (loss ? ", head and loss" : " and head") << " eager)";
  }
  out << "\n";
  out << "graph       " << rep.tasks << " tasks on " << rep.ranks.size() << " rank"
      << (rep.ranks.size() == 1 ? "" : "s");
  if (r.step.graph.representative()) {
    const bool whole_ring = s.layout.cp > 1 && rep.ranks.size() > static_cast<size_t>(s.layout.pp);
    out << " (one representative per pipeline stage"
        << (whole_ring ? " and context-parallel rank" : "") << " for " << s.gpus << " GPUs)";
  }
  out << "\n\n";
}

// Step time, throughput, speedup over one GPU and MFU.
void print_performance(std::ostream& out, const driver::SimulationResult& r) {
  const auto& s = r.scenario;
  const auto& rep = r.report;
  const auto& dev = driver::device_of(s);
  out << "step time   " << format_time(rep.step_time) << "\n";
  out << "throughput  " << fmt("%.0f", rep.tokens_per_second) << " tokens/s ("
      << fmt("%.2f", rep.samples_per_second) << " samples/s)\n";
  if (r.baseline) {
    out << "speedup     " << fmt("%.3f", r.speedup) << "x over 1 x " << dev.name
        << " with the same global batch (" << format_time(r.baseline->step_time)
        << "/step); scaling efficiency " << fmt("%.1f%%", 100.0 * r.speedup / s.gpus) << "\n";
  }
  if (rep.mfu > 0) {
    // Whole TFLOP/s from 100 up (%.3g printed B200's fp8 1,310 as "1.31e+03").
    const double peak_tflops =
        dev.peak(model::precision_info(s.training.precision).compute).tflops();
    out << "MFU         " << fmt("%.1f%%", 100.0 * rep.mfu) << " of "
        << fmt(peak_tflops >= 100 ? "%.0f" : "%.3g", peak_tflops) << " TFLOP/s dense "
        << ir::to_string(model::precision_info(s.training.precision).compute) << "\n\n";
  } else {
    out << "MFU         n/a (measured on a device without a peak figure)\n\n";
  }
}

// Collective calls, bytes and busy time of rank 0.
void print_collectives(std::ostream& out, const driver::SimulationResult& r) {
  const auto& rep = r.report;
  out << "collectives per optimizer step (rank 0)\n";
  for (const auto& [type, stat] : rep.collectives) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-15s %6lld calls  %12s  %12s busy\n", type.c_str(),
                  static_cast<long long>(stat.calls), format_bytes(stat.bytes).c_str(),
                  format_time(stat.time).c_str());
    out << line;
  }
  out << "\n";
}

// The network model, link utilisation by kind and the busiest links.
void print_network(std::ostream& out, const driver::SimulationResult& r) {
  const auto& s = r.scenario;
  const auto& rep = r.report;
  out << "network     " << cost::to_string(s.fidelity) << " fidelity"
      << (s.fidelity == cost::NetworkFidelity::flow ? " (links shared max-min fairly)"
                                                    : " (each collective alone on its links)");
  if (s.collectives.algorithm || s.collectives.protocol) {
    out << "; forced "
        << (s.collectives.algorithm ? std::string(cost::to_string(*s.collectives.algorithm))
                                    : "auto")
        << "/"
        << (s.collectives.protocol ? std::string(cost::to_string(*s.collectives.protocol))
                                   : "auto");
  }
  out << "\n";
  if (r.step.graph.representative())
    out << "  (traffic of the simulated ranks only; replicas that were not simulated load links "
           "too)\n";
  out << "  link kind      links   carried   mean util   max util\n";
  for (const auto& [kind, k] : rep.link_kinds) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-12s %7d  %8s   %8.1f%%  %8.1f%%\n", kind.c_str(), k.links,
                  format_bytes(Bytes{static_cast<int64_t>(k.bytes)}).c_str(),
                  100.0 * k.mean_utilisation, 100.0 * k.max_utilisation);
    out << line;
  }
  out << "  busiest links\n";
  for (size_t i = 0; i < rep.links.size() && i < 4; ++i) {
    const auto& l = rep.links[i];
    char line[200];
    std::snprintf(line, sizeof line, "    %-32s %-10s %8s  %5.1f%%\n",
                  rep.link_name(l.link).c_str(), std::string(l.kind).c_str(),
                  format_bytes(Bytes{static_cast<int64_t>(l.bytes)}).c_str(),
                  100.0 * l.utilisation);
    out << line;
  }
  out << "\n";
}

// The pipeline bubble: the idle share of each stage.
void print_bubble(std::ostream& out, const driver::SimulationResult& r) {
  const auto& rep = r.report;
  out << "pipeline bubble (idle share of the step)\n";
  for (size_t st = 0; st < rep.stages.size(); ++st) {
    out << "  stage " << st << "  " << fmt("%5.1f%%", 100.0 * rep.bubble_fraction(st)) << "  ("
        << format_time(rep.stages[st].idle) << ")\n";
  }
  out << "\n";
}

// Per rank (the first 8): compute, communication, exposed, idle, peer wait, overlap.
void print_ranks(std::ostream& out, const driver::SimulationResult& r) {
  const auto& rep = r.report;
  out << "per rank   stage     compute        comm     exposed        idle   peer wait  overlap\n";
  const size_t shown = std::min<size_t>(rep.ranks.size(), 8);
  for (size_t k = 0; k < shown; ++k) {
    const auto& rr = rep.ranks[k];
    char line[200];
    std::snprintf(line, sizeof line,
                  "  rank %-4u %5d  %10.3f  %10.3f  %10.3f  %10.3f  %10.3f  %6.1f%%   (ms)\n",
                  rr.cluster_rank, rr.stage, rr.compute.ms(), rr.communication.ms(),
                  rr.exposed_communication.ms(), rr.idle.ms(), rr.peer_wait.ms(),
                  rr.overlap_percent);
    out << line;
  }
  if (rep.ranks.size() > shown)
    out << "  ... " << rep.ranks.size() - shown << " more ranks (see --json)\n";
}

// The peak, what is alive at it, and what would bring it down when it does not fit.
void print_memory(std::ostream& out, const driver::SimulationResult& r) {
  const auto& rep = r.report;
  const auto& pm = rep.ranks[rep.peak_index].memory;
  out << "\nmemory      peak " << format_bytes(Bytes{rep.peak_memory}) << " on rank "
      << rep.ranks[rep.peak_index].cluster_rank << " at " << format_time(pm.peak_time)
      << (rep.memory_capacity.count > 0 ? " of " + format_bytes(rep.memory_capacity) + ": " +
                                              (rep.fits ? "fits" : "DOES NOT FIT")
                                        : std::string(" (measured)"))
      << "\n";
  for (int c = 0; c < ir::kMemoryCategoryCount; ++c) {
    if (pm.at_peak[static_cast<size_t>(c)] == 0) continue;
    char line[160];
    std::snprintf(line, sizeof line, "  %-16s %12s\n",
                  std::string(ir::to_string(static_cast<ir::MemoryCategory>(c))).c_str(),
                  format_bytes(Bytes{pm.at_peak[static_cast<size_t>(c)]}).c_str());
    out << line;
  }
  if (!rep.fits) {
    out << "  over by " << format_bytes(Bytes{rep.peak_memory - rep.memory_capacity.count}) << "\n";
    if (!r.suggestions.empty()) out << "\nwhat would change the peak (each simulated)\n";
    for (const auto& sg : r.suggestions) {
      out << "  " << sg.change << " brings the peak to " << format_bytes(Bytes{sg.peak_memory})
          << (sg.fits ? " (fits" : " (still over") << ", step " << format_time(sg.step_time)
          << ")\n";
    }
  }
}

// Days, GPU-hours, dollars, energy and goodput under failures of the whole run.
void print_training_run(std::ostream& out, const training_run::Forecast& f) {
  out << "\ntraining run (from this step time)\n";
  for (const auto& [label, text] : training_run::report_rows(f)) {
    char head[32];
    std::snprintf(head, sizeof head, "  %-14s ", label.c_str());
    out << head << text << "\n";
  }
}

}  // namespace

training_run::Forecast run_forecast(const scenario::Scenario& s, SimTime step_time,
                                    int64_t parameters, double tokens_per_step) {
  training_run::StepFacts facts;
  facts.step_seconds = step_time.seconds();
  facts.gpus = s.gpus;
  facts.tokens_per_step = tokens_per_step;
  facts.parameters = parameters;
  facts.gpu = s.gpu;
  try {
    return training_run::forecast(s.run, facts);
  } catch (const training_run::InputError& e) {
    throw UserError(std::string("run: ") + e.what());
  }
}

training_run::Forecast run_forecast(const driver::SimulationResult& r) {
  return run_forecast(r.scenario, r.report.step_time, r.step.parameters, r.step.tokens_per_step);
}

void print_report(std::ostream& out, const driver::SimulationResult& r,
                  const driver::Platform* platform) {
  // First, so that inputs that cannot size the run fail before any line is printed.
  const training_run::Forecast forecast = run_forecast(r);
  print_setup(out, r);
  print_performance(out, r);
  if (!r.report.collectives.empty()) print_collectives(out, r);
  if (!r.report.links.empty()) print_network(out, r);
  if (platform) {
    const auto lines = bottleneck_lines(r, platform);
    for (size_t i = 0; i < lines.size(); ++i)
      out << (i == 0 ? "bottleneck  " : "            ") << lines[i] << "\n";
    out << "\n";
  }
  if (r.scenario.layout.pp > 1) print_bubble(out, r);
  print_ranks(out, r);
  print_memory(out, r);
  print_training_run(out, forecast);
}

void write_report_json(std::ostream& out, const driver::SimulationResult& r) {
  using nlohmann::json;
  const auto& rep = r.report;
  json j;
  j["schema_version"] = reports::kSchemaVersion;
  j["kind"] = "report";
  j["scenario"] = r.scenario.name;
  j["model"] = {{"name", r.scenario.model.name}, {"parameters", r.step.parameters}};
  j["cluster"] = {{"name", r.scenario.cluster_name},
                  {"gpu", r.scenario.gpu},
                  {"gpus", r.scenario.gpus},
                  {"nodes", r.scenario.nodes}};
  const auto& l = r.scenario.layout;
  j["layout"] = {{"tp", l.tp},
                 {"pp", l.pp},
                 {"dp", l.dp},
                 {"data_parallel", strategy::to_string(l.data_parallel)},
                 {"bucket_size_bytes", l.bucket_size.count},
                 {"sync_units", r.step.buckets.size()},
                 {"sequence_parallel", l.sequence_parallel},
                 {"schedule", strategy::to_string(l.schedule)},
                 {"virtual_stages", l.virtual_stages},
                 {"order", strategy::order_string(l)},
                 {"cp", l.cp},
                 {"ep", l.ep},
                 {"etp", l.etp},
                 {"first_stage_layers", l.first_stage_layers},
                 {"last_stage_layers", l.last_stage_layers}};
  j["profile"] = {{"name", r.scenario.profile ? r.scenario.profile->name : std::string()},
                  {"file", r.scenario.profile ? r.scenario.profile->file : std::string()},
                  {"summary", driver::profile_summary(r.scenario)}};
  if (!r.scenario.degraded.empty()) {
    json degraded = json::array();
    for (const auto& d : r.scenario.degraded) degraded.push_back(d.describe());
    j["degraded"] = degraded;
  }
  j["representative_ranks"] = r.step.graph.representative();
  j["accumulation_steps"] = r.step.micro_batches;
  j["tasks"] = rep.tasks;
  j["step_time_s"] = rep.step_time.seconds();
  j["tokens_per_s"] = rep.tokens_per_second;
  j["samples_per_s"] = rep.samples_per_second;
  j["mfu"] = rep.mfu;
  if (r.baseline) {
    j["speedup"] = r.speedup;
    j["baseline_step_time_s"] = r.baseline->step_time.seconds();
    j["scaling_efficiency"] = r.speedup / r.scenario.gpus;
  }
  json coll = json::object();
  for (const auto& [type, stat] : rep.collectives) {
    coll[type] = {
        {"calls", stat.calls}, {"bytes", stat.bytes.count}, {"busy_s", stat.time.seconds()}};
  }
  j["collectives_per_step_rank0"] = coll;
  json ranks = json::array();
  for (size_t k = 0; k < rep.ranks.size(); ++k) {
    const auto& rr = rep.ranks[k];
    json cats = json::object();
    for (int c = 0; c < ir::kMemoryCategoryCount; ++c) {
      cats[std::string(ir::to_string(static_cast<ir::MemoryCategory>(c)))] =
          rr.memory.at_peak[static_cast<size_t>(c)];
    }
    ranks.push_back({{"rank", rr.cluster_rank},
                     {"stage", rr.stage},
                     {"compute_s", rr.compute.seconds()},
                     {"communication_s", rr.communication.seconds()},
                     {"exposed_communication_s", rr.exposed_communication.seconds()},
                     {"idle_s", rr.idle.seconds()},
                     {"peer_wait_s", rr.peer_wait.seconds()},
                     {"overlap_percent", rr.overlap_percent},
                     {"peak_memory_bytes", rr.memory.peak},
                     {"peak_time_s", rr.memory.peak_time.seconds()},
                     {"memory_at_peak", cats}});
  }
  j["ranks"] = ranks;
  json stages = json::array();
  for (size_t st = 0; st < rep.stages.size(); ++st) {
    stages.push_back(
        {{"bubble_fraction", rep.bubble_fraction(st)}, {"idle_s", rep.stages[st].idle.seconds()}});
  }
  j["stages"] = stages;
  json suggestions = json::array();
  for (const auto& sg : r.suggestions) {
    suggestions.push_back({{"change", sg.change},
                           {"peak_memory_bytes", sg.peak_memory},
                           {"step_time_s", sg.step_time.seconds()},
                           {"fits", sg.fits}});
  }
  j["suggestions"] = suggestions;
  json links = json::array();
  for (const auto& l : rep.links) {
    links.push_back({{"link", rep.link_name(l.link)},
                     {"kind", l.kind},
                     {"bytes", l.bytes},
                     {"busy_s", l.busy_seconds},
                     {"utilisation", l.utilisation}});
  }
  j["network"] = {{"fidelity", cost::to_string(r.scenario.fidelity)}, {"links", links}};
  j["memory"] = {{"peak_bytes", rep.peak_memory},
                 {"peak_rank", rep.ranks[rep.peak_index].cluster_rank},
                 {"capacity_bytes", rep.memory_capacity.count},
                 {"fits", rep.fits}};
  j["training_run"] = training_run::to_json(run_forecast(r));
  out << j.dump(2) << '\n';
}

void write_report_html(std::ostream& out, const driver::SimulationResult& r,
                       const driver::Platform* platform) {
  const auto& s = r.scenario;
  const auto& rep = r.report;
  const auto& dev = driver::device_of(s);
  reports::HtmlReportInput in;
  in.title = s.name;
  in.facts = {
      {"model", s.model.name + ": " + fmt("%.1fM", static_cast<double>(r.step.parameters) * 1e-6) +
                    " parameters, " + std::to_string(s.model.layers) + " layers"},
      {"cluster", s.cluster_name + ": " + std::to_string(s.gpus) + " x " + dev.name + " (" +
                      std::to_string(s.nodes) + (s.nodes == 1 ? " node)" : " nodes)")},
      {"layout", layout_line(s, r.step)},
      {"step time", format_time(rep.step_time)},
      {"throughput", fmt("%.0f", rep.tokens_per_second) + " tokens/s"}};
  if (r.baseline)
    in.facts.emplace_back("speedup",
                          fmt("%.3fx", r.speedup) + " over 1 x " + dev.name +
                              fmt(" (scaling efficiency %.1f%%)", 100.0 * r.speedup / s.gpus));
  if (rep.mfu > 0) in.facts.emplace_back("MFU", fmt("%.1f%%", 100.0 * rep.mfu));
  in.facts.emplace_back("peak memory", format_bytes(Bytes{rep.peak_memory}) + " on rank " +
                                           std::to_string(rep.ranks[rep.peak_index].cluster_rank) +
                                           (rep.memory_capacity.count > 0
                                                ? " of " + format_bytes(rep.memory_capacity) +
                                                      (rep.fits ? ": fits" : ": DOES NOT FIT")
                                                : ""));
  if (r.step.graph.representative())
    in.facts.emplace_back(
        "ranks", "one representative per pipeline stage for " + std::to_string(s.gpus) + " GPUs");
  in.graph = &r.step.graph;
  in.timeline = &r.timeline;
  in.report = &rep;
  in.bottleneck = bottleneck_lines(r, platform);
  in.training_run = training_run::report_rows(run_forecast(r));
  reports::write_html_report(out, in);
}

}  // namespace cs::driver
