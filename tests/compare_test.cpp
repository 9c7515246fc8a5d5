// `simulate --set`, `compare`, and `sweep` over CP, EP and PP: overrides of dotted scenario keys,
// the keys that differ between two scenarios, the side-by-side figures, and sweeps that keep
// every model-parallel degree while DP scales.
#include "workflows/compare.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "planner/sweep.h"
#include "reports/html_report.h"
#include "scenarios/scenario.h"
#include "test_paths.h"

namespace cs {
namespace {

std::string scenario_path(const std::string& name) {
  return cs::test_paths::source_dir() + "/scenarios/" + name;
}

std::string load_error(const std::string& file, const std::vector<scenario::KeyOverride>& set) {
  try {
    scenario::load_scenario(scenario_path(file), set);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(SetKey, OverridesAndAddsDottedKeys) {
  const auto base = scenario::load_scenario(scenario_path("gpt2-large-8xh100-ddp.yaml"));
  const auto s = scenario::load_scenario(
      scenario_path("gpt2-large-8xh100-ddp.yaml"),
      {scenario::parse_override("layout.tp=2"), scenario::parse_override("layout.dp=4"),
       scenario::parse_override("training.micro_batch=2"),
       scenario::parse_override("layout.sequence_parallel=true")});
  EXPECT_EQ(base.layout.tp, 1);
  EXPECT_EQ(s.layout.tp, 2);
  EXPECT_EQ(s.layout.dp, 4);
  EXPECT_EQ(s.training.micro_batch, 2);
  EXPECT_TRUE(s.layout.sequence_parallel);  // a key the file does not have
  EXPECT_EQ(s.model.name, base.model.name);
  // The value is YAML: a list of mappings for a block.
  const auto d = scenario::load_scenario(scenario_path("gpt2-large-8xh100-ddp.yaml"),
                                         {{"degraded", "[{gpu: 1, compute: 0.5}]"}});
  ASSERT_EQ(d.degraded.size(), 1u);
  EXPECT_EQ(d.degraded[0].factor, 0.5);
}

TEST(SetKey, UnknownOrMalformedKeysAreRefused) {
  // A --set value is not in the file: its refusal names the --set as typed, with no file:line:col
  // (it said ":1:1:", the value's place in its own one-line YAML document). An unknown key lists
  // the valid keys, as the file's would.
  const std::string unknown = load_error("gpt2-large-8xh100-ddp.yaml", {{"layout.tpp", "4"}});
  EXPECT_EQ(unknown.rfind("--set layout.tpp=4: unknown key; valid keys here: tp, pp, dp, ", 0), 0u)
      << unknown;
  EXPECT_EQ(load_error("gpt2-large-8xh100-ddp.yaml", {{"model.preset.layers", "4"}}),
            "--set model.preset.layers=4: model.preset is a single value or a list, not a mapping "
            "of keys");
  EXPECT_NE(load_error("gpt2-large-8xh100-ddp.yaml", {{"layout..tp", "4"}}).find("empty part"),
            std::string::npos);
  EXPECT_EQ(load_error("gpt2-large-8xh100-ddp.yaml", {{"layout.tp", "0"}}),
            "--set layout.tp=0: must be a positive integer, got 0");
  EXPECT_EQ(load_error("gpt2-large-8xh100-ddp.yaml", {{"layout.tp", "abc"}}),
            "--set layout.tp=abc: expected a positive integer, got 'abc'");
  EXPECT_EQ(
      load_error("gpt2-large-8xh100-ddp.yaml", {{"training.micro_batch", "[1"}}),
      "--set training.micro_batch=[1: the value is not YAML (end of sequence flow not found)");
  // A key inside the value is named by its path; the last --set of a key is the one refused.
  EXPECT_EQ(load_error("gpt2-large-8xh100-ddp.yaml", {{"degraded", "[{gpu: 1, compute: 0.5}]"},
                                                      {"degraded", "[{gpu: 1, compute: 5}]"}}),
            "--set degraded=[{gpu: 1, compute: 5}]: degraded[0].compute: expected a number in (0, "
            "1], the fraction of its healthy compute, got '5'");
  // A refusal of the file's own keys, made wrong by a --set, keeps the file's position: tp 3
  // x dp 8 is 24 GPUs of 8 (the file's layout: block is on line 13).
  EXPECT_EQ(
      load_error("gpt2-large-8xh100-ddp.yaml", {{"layout.tp", "3"}})
          .rfind(scenario_path("gpt2-large-8xh100-ddp.yaml") + ":13:3: layout: tp x pp x dp "
                                                               "= 3 x 1 x 8 = 24 does not match",
                 0),
      0u);
  EXPECT_THROW(scenario::parse_override("layout.tp"), UserError);
  EXPECT_THROW(scenario::parse_override("=4"), UserError);
  const auto kv = scenario::parse_override("training.seq_len=2048");
  EXPECT_EQ(kv.key, "training.seq_len");
  EXPECT_EQ(kv.value, "2048");
}

TEST(Compare, ChangedKeysListWhatDiffersAddedAndRemoved) {
  const auto changes = workflows::changed_keys({{"a", "1"}, {"b", "2"}, {"c", "3"}},
                                               {{"b", "2"}, {"c", "4"}, {"d", "5"}});
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].key, "a");
  EXPECT_EQ(changes[0].b, "");
  EXPECT_EQ(changes[1].key, "c");
  EXPECT_EQ(changes[1].a, "3");
  EXPECT_EQ(changes[1].b, "4");
  EXPECT_EQ(changes[2].key, "d");
  EXPECT_EQ(changes[2].a, "");
  // Two shipped scenarios: the 2- and 8-GPU DDP runs of GPT-2 Large differ in their name,
  // comment-free keys such as layout.dp, and the global batch.
  const auto keys = [](const std::string& f) { return scenario::scenario_keys(scenario_path(f)); };
  const auto k2 = keys("gpt2-large-2xh100-ddp.yaml");
  const auto k8 = keys("gpt2-large-8xh100-ddp.yaml");
  EXPECT_EQ(k8.at("layout.dp"), "8");
  EXPECT_EQ(k8.at("model.preset"), "gpt2-large");
  bool dp_changed = false;
  for (const auto& c : workflows::changed_keys(k2, k8)) dp_changed |= c.key == "layout.dp";
  EXPECT_TRUE(dp_changed);
}

TEST(Compare, AScenarioAgainstItselfWithAChange) {
  workflows::CompareRequest r;
  r.a_file = scenario_path("gpt2-large-2xh100-ddp.yaml");
  r.set_b = {{"layout.data_parallel", "fsdp_full_shard"}};
  r.no_profile = true;
  const auto c = workflows::compare_scenarios(r);
  ASSERT_EQ(c.changes.size(), 1u);
  EXPECT_EQ(c.changes[0].key, "layout.data_parallel");
  EXPECT_EQ(c.changes[0].b, "fsdp_full_shard");
  EXPECT_NE(c.b.label.find("--set layout.data_parallel=fsdp_full_shard"), std::string::npos);
  // Full sharding keeps half the parameters, gradients and optimizer state on each of 2 GPUs.
  EXPECT_LT(c.b.memory_at_peak.at("optimizer_state"), c.a.memory_at_peak.at("optimizer_state"));
  EXPECT_LT(c.b.peak_memory, c.a.peak_memory);
  EXPECT_GT(c.a.step_time.ps, 0);
  EXPECT_FALSE(c.a.bottleneck.empty());
  std::ostringstream text, json, html;
  workflows::print_comparison(text, c);
  workflows::write_comparison_json(json, c);
  workflows::write_comparison_html(html, c);
  EXPECT_NE(text.str().find("changed     layout.data_parallel: ddp -> fsdp_full_shard"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("step time"), std::string::npos);
  EXPECT_NE(json.str().find("\"kind\": \"compare\""), std::string::npos);
  EXPECT_NE(html.str().find("<h2>What changed</h2>"), std::string::npos);
  // No change at all is refused: there would be nothing to compare.
  r.set_b.clear();
  EXPECT_THROW(workflows::compare_scenarios(r), UserError);
}

// Sweeps keep TP, CP, PP and EP and scale DP: GPT-2 Large with CP 2 (DP was derived as if CP
// were 1, so every point failed) and with PP 2 on 2, 4 and 8 GPUs gives DP 1, 2, 4.
TEST(Sweep, KeepsContextAndPipelineParallelismAndScalesDp) {
  for (const char* key : {"layout.cp", "layout.pp"}) {
    const auto base = scenario::load_scenario(scenario_path("gpt2-large-8xh100-ddp.yaml"),
                                              {{key, "2"}, {"layout.dp", "4"}});
    for (const auto& [gpus, dp] : {std::pair{"2", 1}, std::pair{"4", 2}, std::pair{"8", 4}}) {
      const auto s = planner::sweep_point(base, planner::SweepAxis::gpus, gpus);
      EXPECT_EQ(s.layout.dp, dp) << key << " at " << gpus;
      EXPECT_EQ(s.layout.cp * s.layout.pp, 2);
    }
    const auto r = planner::run_sweep(base, planner::SweepAxis::gpus, {"4", "8"}, 2);
    for (const auto& row : r.rows) EXPECT_TRUE(row.error.empty()) << key << ": " << row.error;
    // 3 GPUs do not split into model-parallel groups of 2: the row says why.
    const auto bad = planner::run_sweep(base, planner::SweepAxis::gpus, {"3"}, 1);
    EXPECT_NE(bad.rows[0].error.find("do not split into tp x cp x pp = 2 groups"),
              std::string::npos)
        << bad.rows[0].error;
  }
}

TEST(Sweep, KeepsExpertParallelism) {
  // Mixtral 8x7B, EP 8 inside each DGX: 8 and 16 GPUs keep EP 8 with DP 8 and 16; 4 GPUs cannot
  // hold EP 8 and say so.
  const auto base = scenario::load_scenario(scenario_path("mixtral-8x7b-16xh100-ep8.yaml"));
  const auto s8 = planner::sweep_point(base, planner::SweepAxis::gpus, "8");
  EXPECT_EQ(s8.layout.ep, 8);
  EXPECT_EQ(s8.layout.dp, 8);
  EXPECT_EQ(planner::sweep_point(base, planner::SweepAxis::nodes, "2").layout.dp, 16);
  EXPECT_THROW(planner::sweep_point(base, planner::SweepAxis::gpus, "4"), UserError);
  // Both points run; twice the GPUs on the same global batch at most double the throughput.
  const auto r = planner::run_sweep(base, planner::SweepAxis::nodes, {"1", "2"}, 2);
  for (const auto& row : r.rows) EXPECT_TRUE(row.error.empty()) << row.error;
  EXPECT_GT(r.rows[1].speedup, 1.0);
  EXPECT_LE(r.rows[1].speedup, 2.0);
}

// The plan's scatter plot spans its points, not zero to the largest: layouts at 60-70 GiB and
// 900-1,000 ms get ticks inside [55, 75] GiB and [880, 1020] ms or so, never 0.
TEST(PlanHtml, TheScatterPlotIsScaledToItsPoints) {
  reports::PlanHtmlInput in;
  in.title = "plan";
  in.capacity_gib = 79.6;
  in.points = {{"a", 900, 60, true, true, 1},
               {"b", 950, 65, true, true, 2},
               {"c", 1000, 70, true, false, 3}};
  std::ostringstream out;
  reports::write_plan_html(out, in);
  const std::string html = out.str();
  EXPECT_EQ(html.find("text-anchor=\"middle\">0</text>"), std::string::npos);  // no x tick at 0
  EXPECT_EQ(html.find("text-anchor=\"end\">0</text>"), std::string::npos);     // no y tick at 0
  EXPECT_NE(html.find("text-anchor=\"middle\">60</text>"), std::string::npos);
  // The capacity, beyond the points' range, is named in the note rather than squeezing them.
  EXPECT_NE(html.find("memory capacity 79.60 GiB outside the plotted range (not drawn)"),
            std::string::npos);
  // The legend draws each marker as the plot does and names the capacity line.
  EXPECT_NE(html.find(">memory capacity</text>"), std::string::npos);
  EXPECT_NE(html.find(">does not fit</text>"), std::string::npos);
}

}  // namespace
}  // namespace cs
