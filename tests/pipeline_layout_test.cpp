// Megatron-Core's --pipeline-model-parallel-layout: parsed as Megatron-Core's
// PipelineParallelLayerLayout.parse_str_to_list reads it, placed, written back, imported and
// emitted. The layouts are Megatron-Bridge's DeepSeek-V3 recipes' (perf_recipes/deepseek/).
#include "strategies/pipeline_layout.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "error_of.h"
#include "interop/launch_writers.h"
#include "interop/megatron_args.h"
#include "scenarios/scenario.h"
#include "strategies/layout.h"

namespace cs {
namespace {

// The message a layout string is refused with (tests/error_of.h), "no error" if it parses.
std::string refusal(std::string_view text) {
  return test::error_of([&] { strategy::parse_pipeline_layout(text); });
}

TEST(PipelineLayout, ParsesMegatronBridgesDeepSeekV3Layouts) {
  // GB300, pp 4 x vp 4: "Et*4|(t*4|)*14tmL" unrolls to 16 chunks: E and 4 layers, 14 of 4, and
  // the last with 1 layer, the MTP layer and the loss: 4 + 56 + 1 = 61 decoder layers.
  const auto gb300 = strategy::parse_pipeline_layout("Et*4|(t*4|)*14tmL");
  std::vector<int> counts(16, 4);
  counts.back() = 1;
  EXPECT_EQ(gb300.decoder_layers, counts);
  EXPECT_EQ(gb300.mtp_layers, 1);
  EXPECT_EQ(strategy::format_pipeline_layout(counts, 1), "Et*4|(t*4|)*14tmL");
  // H100, 32 chunks: "Et|(tt|)*30mL": 1, 2 x 30 and a last chunk with only MTP and the loss.
  const auto h100 = strategy::parse_pipeline_layout("Et|(tt|)*30mL");
  std::vector<int> h100_counts(32, 2);
  h100_counts.front() = 1;
  h100_counts.back() = 0;
  EXPECT_EQ(h100.decoder_layers, h100_counts);
  EXPECT_EQ(strategy::format_pipeline_layout(h100_counts, 1), "Et|(t*2|)*30mL");
  // Commas are cosmetic; one chunk; an empty middle chunk.
  EXPECT_EQ(strategy::parse_pipeline_layout("E,t,t,L").decoder_layers, std::vector<int>{2});
  EXPECT_EQ(strategy::parse_pipeline_layout("Et||tL").decoder_layers, (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(strategy::format_pipeline_layout({1, 0, 0, 1}, 0), "Et|(|)*2tL");
}

TEST(PipelineLayout, RefusesWhatCannotBePlacedWithTheReason) {
  EXPECT_NE(refusal("t|tL").find("must start with the embedding (E)"), std::string::npos);
  EXPECT_NE(refusal("Et|t").find("must end with the loss (L)"), std::string::npos);
  EXPECT_NE(refusal("EtL|tL").find("the loss (L) must be the last layer"), std::string::npos);
  EXPECT_NE(refusal("Etm|tL").find("MTP layers (m) must sit on the last model chunk"),
            std::string::npos);
  EXPECT_NE(refusal("Et|mtL").find("decoder layers (t) must come before the MTP layers"),
            std::string::npos);
  EXPECT_NE(refusal("Ex|L").find("'x' is not a layer letter at character 2"), std::string::npos);
  EXPECT_NE(refusal("E((t|)*2)*2L").find("nested parentheses"), std::string::npos);
  EXPECT_NE(refusal("E(t|L").find("'(' without ')'"), std::string::npos);
  EXPECT_NE(refusal("Et*|L").find("'*' must be followed by a count"), std::string::npos);
  EXPECT_NE(refusal("E|*3tL").find("'|' cannot be repeated"), std::string::npos);
  // A bomb is refused before it is built: 10^6 x 10^6 letters.
  EXPECT_NE(refusal("E(t*1000000|)*1000000L").find("more than 1048576 layer letters"),
            std::string::npos);
  EXPECT_NE(refusal("Et*99999999L").find("a repeat count above 9,999,999"), std::string::npos);
}

// DeepSeek-V3 (61 layers, 1 MTP module) on pp 4 x vp 4 with the GB300 recipe's layout: stage s
// runs chunks s, s + 4, s + 8, s + 12: stages 0-2 hold 4 x 4 = 16 layers, stage 3 4 + 4 + 4 + 1 =
// 13.
strategy::Layout deepseek_v3_layout() {
  strategy::Layout l;
  l.pp = 4;
  l.dp = 64;
  l.ep = 64;
  l.virtual_stages = 4;
  l.schedule = strategy::PipelineSchedule::interleaved;
  l.data_parallel = strategy::DataParallel::zero1;
  l.pipeline_layout = strategy::parse_pipeline_layout("Et*4|(t*4|)*14tmL");
  return l;
}

TEST(PipelineLayout, PlacesTheLayersAndChecksThemAgainstTheModel) {
  const model::ModelSpec m = model::find_model_preset("deepseek-v3");
  strategy::Layout l = deepseek_v3_layout();
  strategy::TrainingSpec t;
  t.global_batch = 4096;
  t.seq_len = 4096;
  EXPECT_NO_THROW(strategy::validate(l, t, m, 256));
  EXPECT_EQ(strategy::stage_layer_counts(l, 61), (std::vector<int>{16, 16, 16, 13}));
  EXPECT_EQ(strategy::stage_split_string(l, 61),
            "layers per model chunk 4 x 15, 1 (pipeline_layout Et*4|(t*4|)*14tmL)");
  l.virtual_stages = 2;  // 16 chunks for pp 4 x vp 2 = 8
  EXPECT_THROW(strategy::validate(l, t, m, 256), UserError);
  l = deepseek_v3_layout();
  l.pipeline_layout.decoder_layers.back() = 2;  // 62 decoder layers
  EXPECT_THROW(strategy::validate(l, t, m, 256), UserError);
  l = deepseek_v3_layout();
  l.pipeline_layout.mtp_layers = 0;  // the model has 1 MTP module
  EXPECT_THROW(strategy::validate(l, t, m, 256), UserError);
  l = deepseek_v3_layout();
  l.embedding_in_split = true;  // Megatron-LM refuses the layout beside the ends-counted flags
  EXPECT_THROW(strategy::validate(l, t, m, 256), UserError);
}

TEST(PipelineLayout, ScenarioKeyGivesTheVirtualStagesAndRoundTrips) {
  const std::string text =
      "model: {preset: deepseek-v3}\ncluster: {preset: dgx_b200, nodes: 32}\n"
      "layout: {pp: 4, dp: 64, ep: 64, data_parallel: zero1, pipeline_layout: "
      "'Et*4|(t*4|)*14tmL'}\n"
      "training: {global_batch: 4096, micro_batch: 1, seq_len: 4096}\n";
  const scenario::Scenario s = scenario::parse_scenario(text, "dsv3.yaml");
  EXPECT_EQ(s.layout.virtual_stages, 4);  // 16 chunks / pp 4
  EXPECT_EQ(s.layout.schedule, strategy::PipelineSchedule::interleaved);
  EXPECT_EQ(strategy::stage_layer_counts(s.layout, 61), (std::vector<int>{16, 16, 16, 13}));
  // A layout of the wrong length names the key, the chunks and pp x virtual_stages.
  std::string bad = text;
  bad.replace(bad.find("'Et*4"), 19, "'Et*4|(t*4|)*13tmL'");
  try {
    scenario::parse_scenario(bad, "dsv3.yaml");
    ADD_FAILURE() << "accepted a 15-chunk layout on pp 4";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("has 15 model chunks"), std::string::npos) << e.what();
  }
}

TEST(PipelineLayout, MegatronArgumentsImportAndEmitTheLayout) {
  const model::ModelSpec m = model::find_model_preset("deepseek-v3");
  const strategy::Layout l = deepseek_v3_layout();
  strategy::TrainingSpec t;
  t.global_batch = 4096;
  t.seq_len = 4096;
  std::vector<std::string> notes;
  const auto args = interop::megatron_arguments({"dsv3", m, l, t, 256, 8}, notes);
  auto has = [&](const std::string& a) {
    return std::find(args.begin(), args.end(), a) != args.end();
  };
  EXPECT_TRUE(has("--pipeline-model-parallel-layout 'Et*4|(t*4|)*14tmL'"));
  // Megatron-LM takes the virtual stages from the layout and refuses the flag beside it.
  for (const auto& a : args)
    EXPECT_EQ(a.find("--num-virtual-stages-per-pipeline-rank"), std::string::npos);
  // The default split of 61 layers over pp 2 x vp 4 (7, 8 x 5, 7, 7: TorchTitan's rule) has no
  // Megatron-LM flag but the layout string.
  strategy::Layout even = l;
  even.pipeline_layout = {};
  even.pp = 2;
  even.dp = 128;
  const auto uneven = interop::megatron_arguments({"dsv3", m, even, t, 256, 8}, notes);
  EXPECT_NE(std::find(uneven.begin(), uneven.end(),
                      "--pipeline-model-parallel-layout 'Et*7|(t*8|)*5t*7|t*7mL'"),
            uneven.end());
  // Read back: pp 4 and the layout give vp 4 and the same layout.
  const auto draft =
      interop::import_megatron(std::vector<std::string>{"--num-layers",
                                                        "61",
                                                        "--hidden-size",
                                                        "7168",
                                                        "--ffn-hidden-size",
                                                        "18432",
                                                        "--swiglu",
                                                        "--normalization",
                                                        "RMSNorm",
                                                        "--position-embedding-type",
                                                        "rope",
                                                        "--num-attention-heads",
                                                        "128",
                                                        "--seq-length",
                                                        "4096",
                                                        "--max-position-embeddings",
                                                        "4096",
                                                        "--vocab-size",
                                                        "129280",
                                                        "--pipeline-model-parallel-size",
                                                        "4",
                                                        "--pipeline-model-parallel-layout",
                                                        "'Et*4|(t*4|)*14tmL'",
                                                        "--mtp-num-layers",
                                                        "1"},
                               interop::ImportOptions{});
  const interop::KeyValues expected_pipeline = {{"schedule", "interleaved"},
                                                {"virtual_stages", "4"},
                                                {"pipeline_layout", "Et*4|(t*4|)*14tmL"}};
  for (const auto& kv : expected_pipeline)
    EXPECT_NE(std::find(draft.layout.begin(), draft.layout.end(), kv), draft.layout.end())
        << kv.first;
  EXPECT_THROW(
      interop::import_megatron(
          std::vector<std::string>{
              "--num-layers", "61", "--hidden-size", "7168", "--num-attention-heads", "128",
              "--seq-length", "4096", "--max-position-embeddings", "4096",
              "--pipeline-model-parallel-size", "4", "--num-virtual-stages-per-pipeline-rank", "4",
              "--pipeline-model-parallel-layout", "Et*4|(t*4|)*14tmL"},
          interop::ImportOptions{}),
      UserError);
}

}  // namespace
}  // namespace cs
