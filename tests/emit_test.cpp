// What plan --emit and simulate --emit-megatron write (scenarios/scenario_writers.h,
// interop/launch_writers.h): the scenario YAML reads back to the same layout and the same simulated
// step the plan printed, and the Megatron-LM launch script reads back through `import megatron` to
// the same model, layout and training set-up.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "driver/simulation.h"
#include "interop/megatron_args.h"
#include "interop/scenario_draft.h"
#include "models/model_spec.h"
#include "planner/planner.h"
#include "scenarios/profile_io.h"
#include "scenarios/scenario_writers.h"
#include "test_paths.h"

namespace cs {
namespace {

std::string source(const std::string& rel) { return cs::test_paths::source_dir() + "/" + rel; }

// Written where the test runs, so that the emitted file's folder differs from the base's.
scenario::Scenario round_trip(const scenario::Scenario& s) {
  const std::string path = std::filesystem::temp_directory_path() /
                           ("clustersim_emit_test_" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream f(path);
    f << scenario::scenario_yaml(s, {"emit_test"});
  }
  scenario::Scenario back = scenario::load_scenario(path);
  std::filesystem::remove(path);
  return back;
}

TEST(Emit, PlanWinnerSimulatesToThePlansStepTime) {
  // GPT-2 Large on 8 H100: a small space (micro-batches 1, 2; no recompute; one bucket size) so the
  // plan runs in seconds. The winner is simulated at the detailed level (real micro-batch count,
  // representative ranks, analytic network); its emitted scenario, read back and simulated over
  // every rank, must give the same step to the picosecond (replicas are identical).
  scenario::Scenario base = scenario::load_scenario(source("scenarios/gpt2-large-8xh100-ddp.yaml"));
  planner::PlanSpace space;
  space.micro_batches = {1, 2};
  space.recompute = {model::Recompute::none};
  space.bucket_sizes = {Bytes{25LL << 20}};
  planner::PlanOptions options;
  options.threads = 2;
  const planner::PlanResult r = planner::plan(base, space, options);
  ASSERT_TRUE(r.any_fits());
  for (size_t rank = 0; rank < 2 && rank < r.ranked.size(); ++rank) {
    const auto& e = r.evaluations[r.ranked[rank]];
    ASSERT_TRUE(e.detailed);
    const scenario::Scenario s =
        planner::with_candidate(base, r.enumeration.candidates[e.candidate]);
    const scenario::Scenario back = round_trip(s);
    EXPECT_EQ(back.layout.tp, s.layout.tp);
    EXPECT_EQ(back.layout.pp, s.layout.pp);
    EXPECT_EQ(back.layout.dp, s.layout.dp);
    EXPECT_EQ(back.layout.data_parallel, s.layout.data_parallel);
    EXPECT_EQ(back.layout.schedule, s.layout.schedule);
    EXPECT_EQ(back.layout.bucket_size.count, s.layout.bucket_size.count);
    EXPECT_EQ(back.training.micro_batch, s.training.micro_batch);
    EXPECT_EQ(back.training.recompute, s.training.recompute);
    EXPECT_EQ(back.gpus, 8);
    EXPECT_FALSE(
        back.profile);  // as the plan: the scenario's own profile only (simulate --no-profile)
    const auto sim = driver::simulate(back, {false, false, driver::RankMode::all, false});
    EXPECT_EQ(sim.report.step_time.ps, e.step_time.ps)
        << r.enumeration.candidates[e.candidate].describe();
  }
}

TEST(Emit, MegatronPlanReadBackThroughImportSimulatesToThePlansStepAndMemory) {
  // Llama 2 70B on 64 H100 (8 DGX), global batch 64, planned for Megatron-Core over a narrowed
  // space. Each detailed row's launch script (plan --emit's rankN.megatron.sh), read by `import
  // megatron` and simulated, gives the plan's own step and peak to the picosecond and the byte:
  // the script carries every knob the plan searched (TP, PP, VP, DP and the distributed
  // optimizer, SP, micro-batch, recompute, the bucket in fp32 elements (25 MiB divides by 4), the
  // overlaps). What the script cannot carry is set as the plan ran: the network fidelity (the
  // plan's analytic level; no launch flag) and the profile (none here, as the plan). Fast rows
  // are extrapolated from short runs, not the simulation a launch would give: not compared.
  scenario::Scenario base = scenario::load_scenario(source("scenarios/llama2-70b-64xh100.yaml"));
  base.training.stack = model::Stack::megatron_core;
  base.training.global_batch = 64;
  planner::PlanSpace space;
  space.micro_batches = {1};
  space.recompute = {model::Recompute::selective};
  space.bucket_sizes = {Bytes{25LL << 20}};
  space.max_cp = 1;
  space.uneven_variants = false;
  planner::PlanOptions options;
  options.threads = 2;
  options.simulate = 4;  // few simulations: the round trip, not the search, is under test
  options.detailed = 2;
  const planner::PlanResult r = planner::plan(base, space, options);
  ASSERT_TRUE(r.any_fits());
  size_t compared = 0;
  for (size_t k : r.ranked) {
    const auto& e = r.evaluations[k];
    if (!e.detailed) continue;
    const auto& c = r.enumeration.candidates[e.candidate];
    const scenario::Scenario s = planner::with_candidate(base, c);
    const std::string script = interop::megatron_launch_script(scenario::launch_target(s));
    const interop::ScenarioDraft d =
        interop::import_megatron(interop::launch_script_arguments(script, "rank.megatron.sh"), {});
    scenario::Scenario back = scenario::parse_scenario(interop::to_yaml(d), "draft.yaml");
    back.fidelity = s.fidelity;
    EXPECT_EQ(model::parameter_count(back.model), model::parameter_count(s.model));
    EXPECT_EQ(back.layout.pp, s.layout.pp) << c.describe();
    EXPECT_EQ(back.layout.virtual_stages, s.layout.virtual_stages) << c.describe();
    EXPECT_EQ(back.layout.data_parallel, s.layout.data_parallel) << c.describe();
    const auto sim = driver::simulate(back, {false, false, driver::RankMode::automatic, false});
    EXPECT_EQ(sim.report.step_time.ps, e.step_time.ps) << c.describe();
    EXPECT_EQ(sim.report.peak_memory, e.peak_memory) << c.describe();
    ++compared;
  }
  EXPECT_GE(compared, 1u);
}

TEST(Emit, ScenarioFromPlanFlagsUsesPresets) {
  // plan --model/--cluster/--gpus without a file: model and cluster presets; 4 GPUs of a DGX H100
  // become a 4-GPU node.
  scenario::Scenario s = scenario::load_scenario(source("scenarios/gpt2-large-8xh100-ddp.yaml"));
  s.file = "plan arguments";
  s.name = "plan";
  s.gpus = 4;
  s.layout.dp = 2;
  s.layout.tp = 2;
  s.layout.sequence_parallel = true;
  const scenario::Scenario back = round_trip(s);
  EXPECT_EQ(back.gpus, 4);
  EXPECT_EQ(back.model.name, "gpt2-large");
  EXPECT_EQ(back.cluster_name, "dgx_h100");
  EXPECT_TRUE(back.layout.sequence_parallel);
  EXPECT_EQ(back.training.precision, model::Precision::amp_bf16);
}

TEST(Emit, TheFloat8CheckpointingKeyTravelsOnlyBesideOpSelective) {
  // training.op_sac_scaled_mm qualifies recompute op_selective: written and read back with it,
  // left out when a plan has swapped the mode (the reader refuses it beside any other).
  scenario::Scenario s = scenario::load_scenario(source("scenarios/gpt2-large-8xh100-ddp.yaml"));
  s.training.precision = model::Precision::fp8;
  s.training.recompute = model::Recompute::op_selective;
  s.training.scaled_mm = model::ScaledMmSaving::recomputed;
  EXPECT_EQ(round_trip(s).training.scaled_mm, model::ScaledMmSaving::recomputed);
  s.training.recompute = model::Recompute::full;
  const std::string text = scenario::scenario_yaml(s, {"emit_test"});
  EXPECT_EQ(text.find("op_sac_scaled_mm"), std::string::npos) << text;
  EXPECT_EQ(round_trip(s).training.recompute, model::Recompute::full);
}

TEST(Emit, ShippedProfilesAreNamedNotPathed) {
  // A scenario written with a shipped profile names it (`profile: h100_sxm`), so that it reads
  // back on another machine or from an installed clustersim; another file keeps its path.
  scenario::Scenario s = scenario::load_scenario(source("scenarios/gpt2-large-8xh100-ddp.yaml"));
  s.file = "plan arguments";
  s.profile = scenario::load_profile(source("profiles/h100_sxm.yaml"));
  const std::string text = scenario::scenario_yaml(s, {"emit_test"});
  EXPECT_NE(text.find("\nprofile: h100_sxm\n"), std::string::npos) << text;
  EXPECT_EQ(round_trip(s).profile->name, s.profile->name);
  EXPECT_EQ(scenario::profile_reference("/tmp/mine.yaml"), "/tmp/mine.yaml");
  // A name that is no shipped profile is refused with the names there.
  try {
    scenario::profile_file("h100_sx", "x.yaml");
    ADD_FAILURE() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no profile named 'h100_sx' in "), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("h100_sxm, h100_sxm_96gb_500w, h200"), std::string::npos)
        << e.what();
  }
  // A path stays a path, relative to the scenario's folder.
  EXPECT_EQ(scenario::profile_file("p/x.yaml", "dir/s.yaml"), "dir/p/x.yaml");
}

TEST(Emit, MegatronScriptReadsBackThroughImport) {
  // Llama 2 70B (GQA 8 groups, SwiGLU, untied) at TP 8 x PP 4 interleaved (v 2) x DP 2 on 64 H100,
  // distributed optimizer, selective recompute: the launch script, read by `import megatron`,
  // gives back every one of these settings and the same parameter count.
  scenario::Scenario s = scenario::load_scenario(source("scenarios/llama2-70b-64xh100.yaml"));
  s.layout.tp = 8;
  s.layout.pp = 4;
  s.layout.dp = 2;
  s.layout.sequence_parallel = true;
  s.layout.schedule = strategy::PipelineSchedule::interleaved;
  s.layout.virtual_stages = 2;
  s.layout.data_parallel = strategy::DataParallel::zero1;
  s.training.recompute = model::Recompute::selective;
  s.training.precision = model::Precision::mixed_bf16;
  s.training.micro_batch = 1;
  s.training.global_batch = 64;
  s.training.tp_comm_overlap = true;
  const std::string script = interop::megatron_launch_script(scenario::launch_target(s));
  EXPECT_NE(script.find("torchrun --nnodes 8 --nproc-per-node 8 pretrain_gpt.py"),
            std::string::npos)
      << script;
  interop::ImportOptions o;
  const interop::ScenarioDraft d =
      interop::import_megatron(interop::launch_script_arguments(script, "emitted.sh"), o);
  EXPECT_TRUE(d.warnings.empty()) << d.warnings.front();
  ASSERT_TRUE(d.model);
  EXPECT_EQ(model::parameter_count(*d.model), model::parameter_count(s.model));
  EXPECT_EQ(d.model->kv_heads, s.model.kv_heads);
  EXPECT_EQ(d.model->ffn_hidden, s.model.ffn_hidden);
  EXPECT_EQ(d.model->vocab, s.model.vocab);
  EXPECT_EQ(d.nodes, 8);
  auto value = [](const interop::KeyValues& kv, const std::string& key) {
    for (const auto& [k, v] : kv) {
      if (k == key) return v;
    }
    return std::string("(absent)");
  };
  EXPECT_EQ(value(d.layout, "tp"), "8");
  EXPECT_EQ(value(d.layout, "pp"), "4");
  EXPECT_EQ(value(d.layout, "dp"), "2");
  EXPECT_EQ(value(d.layout, "data_parallel"), "zero1");
  EXPECT_EQ(value(d.layout, "sequence_parallel"), "true");
  EXPECT_EQ(value(d.layout, "schedule"), "interleaved");
  EXPECT_EQ(value(d.layout, "virtual_stages"), "2");
  EXPECT_EQ(value(d.training, "global_batch"), "64");
  EXPECT_EQ(value(d.training, "micro_batch"), "1");
  EXPECT_EQ(value(d.training, "seq_len"), std::to_string(s.training.seq_len));
  EXPECT_EQ(value(d.training, "precision"), "mixed_bf16");
  EXPECT_EQ(value(d.training, "recompute"), "selective");
  EXPECT_EQ(value(d.training, "tp_comm_overlap"), "true");
  // The bucket: emitted as --ddp-bucket-size in fp32 elements (bytes / 4), read back as bytes.
  EXPECT_EQ(value(d.layout, "bucket_size"),
            std::to_string(s.layout.bucket_size.count / 4 * 4) + "B");
  // And the draft is a scenario that reads back.
  const scenario::Scenario back = scenario::parse_scenario(interop::to_yaml(d), "draft.yaml");
  EXPECT_EQ(back.layout.virtual_stages, 2);
  EXPECT_EQ(back.gpus, 64);
  EXPECT_EQ(back.layout.bucket_size.count, s.layout.bucket_size.count / 4 * 4);
}

TEST(Emit, Fsdp2ArgumentsReadBackAsFullShard) {
  // --use-torch-fsdp2 is Megatron-LM's FULL_SHARD path: emitted for an FSDP layout, imported back
  // as fsdp_full_shard, with no warning.
  scenario::Scenario s =
      scenario::load_scenario(source("scenarios/gpt2-large-2xh100-fsdp-full-shard.yaml"));
  interop::ImportOptions o;
  const interop::ScenarioDraft d = interop::import_megatron(
      interop::launch_script_arguments(interop::megatron_launch_script(scenario::launch_target(s)),
                                       "fsdp.sh"),
      o);
  EXPECT_TRUE(d.warnings.empty()) << d.warnings.front();
  bool full_shard = false, fsdp2 = false;
  for (const auto& [k, v] : d.layout) {
    full_shard = full_shard || (k == "data_parallel" && v == "fsdp_full_shard");
    fsdp2 = fsdp2 || (k == "fsdp_version" && v == "2");  // torch's fully_shard: FSDP2's copies
  }
  EXPECT_TRUE(full_shard);
  EXPECT_TRUE(fsdp2);
}

TEST(Emit, MegatronNotesWhatItCannotExpress) {
  scenario::Scenario s =
      scenario::load_scenario(source("scenarios/gpt2-large-2xh100-fsdp-full-shard.yaml"));
  std::vector<std::string> notes;
  const auto args = interop::megatron_arguments(scenario::launch_target(s), notes);
  EXPECT_NE(std::find(args.begin(), args.end(), "--use-torch-fsdp2"), args.end());
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.front().find("fsdp_full_shard"), std::string::npos);
  const std::string sketch = interop::torchrun_sketch(scenario::launch_target(s));
  EXPECT_NE(sketch.find("ShardingStrategy.FULL_SHARD"), std::string::npos);
  EXPECT_NE(sketch.find("torchrun --nnodes 1 --nproc-per-node 2"), std::string::npos) << sketch;
}

// Megatron-LM has no rowwise FP8: the script runs Transformer Engine's per-tensor FP8 and says so,
// while the torchrun sketch names torchao's rowwise recipe.
TEST(Emit, RowwiseFp8IsNotedWhereMegatronRunsPerTensorFp8) {
  scenario::Scenario s =
      scenario::load_scenario(source("scenarios/gpt2-large-2xh100-fsdp-full-shard.yaml"));
  s.training.precision = model::Precision::fp8_rowwise;
  std::vector<std::string> notes;
  const auto args = interop::megatron_arguments(scenario::launch_target(s), notes);
  EXPECT_NE(std::find(args.begin(), args.end(), "--fp8-format hybrid"), args.end());
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("fp8_rowwise") != std::string::npos;
  }));
  EXPECT_NE(
      interop::torchrun_sketch(scenario::launch_target(s)).find("from_recipe_name(\"rowwise\")"),
      std::string::npos);
}

}  // namespace
}  // namespace cs
