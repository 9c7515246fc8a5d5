// Importers on hostile input (issues 32 item 5, 34 item 2): each class of input that once
// crashed, hung or wrote a wrong draft is refused with an error naming the value and the bound,
// or read as it should be. And drafts cannot be injected: a name or note with newlines, colons,
// quotes and '#' reads back as itself, with no key added.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/limits.h"
#include "error_of.h"
#include "interop/hf_config.h"
#include "interop/launch_script.h"
#include "interop/megatron_args.h"
#include "interop/scenario_draft.h"
#include "scenarios/scenario.h"
#include "test_paths.h"

namespace cs {
namespace {

using test::error_of;

std::string data(const std::string& rel) {
  return cs::test_paths::source_dir() + "/tests/data/" + rel;
}

const std::vector<std::string> kSmallModel = {
    "--num-layers", "2",   "--hidden-size", "256", "--num-attention-heads", "4",
    "--seq-length", "128", "--vocab-size",  "1024"};

TEST(HostileLaunchScript, ALineOf100KbIsRefusedWithItsLineAndTheBound) {
  // Once a regex over this line recursed until the stack overflowed.
  const std::string script = "#!/bin/bash\nX=" + std::string(102400, 'a') + "\n";
  EXPECT_EQ(error_of([&] { interop::read_launch_script(script, "big.sh"); }),
            "big.sh:2: a line of 102402 characters; the bound is 16384 characters a line (launch "
            "scripts are a few KB; the bound keeps a file given by mistake, or a variable that "
            "doubles each line, from exhausting memory)");
}

TEST(HostileLaunchScript, VariablesThatDoubleEachLineAreRefusedAtTheBound) {
  // 16 characters doubled on each line: 16 x 2^12 = 65536 on line 13 (the 12th doubling), where
  // the two copies and their separators pass the bound of 65536 characters a variable.
  std::string script = "A=0123456789abcdef\n";
  for (int i = 0; i < 40; ++i) script += "A=$A$A\n";
  EXPECT_EQ(error_of([&] { interop::read_launch_script(script, "double.sh"); }),
            "double.sh:13: the value of A expands past 65536 characters, the bound for one "
            "variable or word (" +
                std::string(interop::kLaunchScriptBoundsWhy) + ")");
  // The same with an array: line L holds 2^(L-1) one-character elements, 2 characters each with
  // the separator: 2^L passes 65536 = 2^16 on line 17.
  script = "A=(x)\n";
  for (int i = 0; i < 40; ++i) script += "A=(\"${A[@]}\" \"${A[@]}\")\n";
  EXPECT_EQ(error_of([&] { interop::read_launch_script(script, "array.sh"); }),
            "array.sh:17: the value of A expands past 65536 characters, the bound for one "
            "variable or word (" +
                std::string(interop::kLaunchScriptBoundsWhy) + ")");
}

TEST(HostileLaunchScript, UnterminatedQuotesAndSubstitutionsNameTheirLine) {
  EXPECT_EQ(error_of([] { interop::read_launch_script("A=1\nB=\"open\n\n", "q.sh"); }),
            "q.sh:2: unterminated double quote");
  EXPECT_EQ(error_of([] { interop::read_launch_script("X=$(echo ${Y\n", "s.sh"); }),
            "s.sh:1: unterminated $(...)");
}

TEST(HostileMegatronArguments, ALongMoeLayerFreqListIsRefusedWithoutRecursion) {
  // 100,001 entries for 4 layers: read in one pass and refused at the 5th.
  std::string list = "[";
  for (int i = 0; i < 100000; ++i) list += "1,";
  list += "1]";
  std::vector<std::string> args = kSmallModel;
  args[1] = "4";
  for (const char* a : {"--swiglu", "--num-experts", "4", "--moe-layer-freq"}) args.push_back(a);
  args.push_back(list);
  interop::ImportOptions o;
  EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
            "megatron argument --moe-layer-freq: the list has more entries than --num-layers (4)");
  // A repetition count past any layer count is refused, not multiplied out.
  args.back() = "([0]*1+[1]*99999999999999999999)";
  EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
            "megatron argument --moe-layer-freq: the list has more entries than --num-layers (4)");
  // The list Megatron-LM's DeepSeek scripts write reads as before: layer 0 dense.
  args.back() = "([0]*1+[1]*3)";
  EXPECT_EQ(interop::import_megatron(args, o).model->moe.dense_layers, std::vector<int>{0});
}

TEST(HostileMegatronArguments, AnOverflowingModelParallelProductIsRefused) {
  // TP x PP x CP = 4096^3 = 68,719,476,736: in an int it wrapped to 0 and was divided by.
  std::vector<std::string> args = kSmallModel;
  for (const char* flag : {"--tensor-model-parallel-size", "--pipeline-model-parallel-size",
                           "--context-parallel-size"}) {
    args.push_back(flag);
    args.push_back("4096");
  }
  interop::ImportOptions o;
  o.gpus = 8;
  EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
            "megatron arguments: TP 4096 x PP 4096 x CP 4096 = 68719476736 GPUs, more than the 8 "
            "that --gpus gives");
  o.gpus.reset();  // the world is then TP x PP x CP, over the scenario's bound of GPUs
  EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
            "megatron arguments: TP 4096 x PP 4096 x CP 4096 = 68719476736 GPUs, over the bound "
            "of 131072 GPUs (twice the largest announced training cluster)");
}

const char* kBatch = R"("train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2)";

TEST(HostileDeepSpeedConfig, IntegersInExponentFormAreReadAndFractionsRefused) {
  interop::ImportOptions o;
  o.model_preset = "gpt2-small";
  o.gpus = 8;
  // 6.4e1 = 64 = 4 x 2 x 8; reduce_bucket_size 1e7 elements x 2 bytes (fp16) = 2e7 bytes.
  const auto d = interop::import_deepspeed(
      std::string(R"({"train_batch_size": 6.4e1, )") + kBatch +
          R"(, "fp16": {"enabled": true}, "zero_optimization": {"stage": 2.0, "reduce_bucket_size": 1e7}})",
      "ds.json", o);
  EXPECT_EQ(d.layout.back(), (std::pair<std::string, std::string>{"bucket_size", "20000000B"}));
  EXPECT_EQ(d.training[0], (std::pair<std::string, std::string>{"global_batch", "64"}));
  EXPECT_EQ(error_of([&] {
              interop::import_deepspeed(
                  R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": 5.5e-1}})", "ds.json",
                  o);
            }),
            "ds.json: zero_optimization.reduce_bucket_size: expected an integer from 1 to "
            "1099511627776 or \"auto\", got 0.55");
  EXPECT_EQ(error_of([&] {
              interop::import_deepspeed(R"({"zero_optimization": {"stage": 2E9}})", "ds.json", o);
            }),
            "ds.json: zero_optimization.stage: 2000000000.0 is out of range: from 0 to 3 (ZeRO's "
            "stages are 0 to 3)");
}

TEST(HostileDeepSpeedConfig, AnOverflowingBatchIsRefused) {
  interop::ImportOptions o;
  o.model_preset = "gpt2-small";
  // 1024 x 1024 x 2048 GPUs = 2^31 sequences, over the bound of 2^24 (once: global_batch 0 at
  // larger sizes, exit 0).
  o.gpus = 2048;
  const std::string big =
      R"({"train_micro_batch_size_per_gpu": 1024, "gradient_accumulation_steps": 1024})";
  EXPECT_EQ(error_of([&] { interop::import_deepspeed(big, "ds.json", o); }),
            "ds.json: train_batch_size: train_micro_batch_size_per_gpu (1024) x "
            "gradient_accumulation_steps (1024) x GPUs (2048) = 2147483648 is out of range: from "
            "1 to 16777216 (" +
                std::string(limits::kBatchSequences.why) + ")");
  // 2^24 x 2^24 x 2^17 overflows 64 bits.
  o.gpus = 1 << 17;
  const std::string huge =
      R"({"train_micro_batch_size_per_gpu": 16777216, "gradient_accumulation_steps": 16777216})";
  EXPECT_EQ(error_of([&] { interop::import_deepspeed(huge, "ds.json", o); }),
            "ds.json: train_micro_batch_size_per_gpu (16777216) x gradient_accumulation_steps "
            "(16777216) x GPUs (131072): 281474976710656 x 131072 overflows a 64-bit integer");
}

TEST(HostileDeepSpeedConfig, LegacyOffloadKeysAreNamed) {
  interop::ImportOptions o;
  o.model_preset = "gpt2-small";
  o.gpus = 8;
  const auto d = interop::import_deepspeed(
      R"({"zero_optimization": {"stage": 2, "cpu_offload": true, "cpu_offload_params": true, "allgather_bucket_size": 2e8}})",
      "ds.json", o);
  ASSERT_GE(d.notes.size(), 3u);
  EXPECT_EQ(d.notes[0],
            "zero_optimization.cpu_offload true (the older form of offload_optimizer.device "
            "\"cpu\"): offload not modelled (the simulation keeps these tensors in GPU memory and "
            "does not count the host transfers)");
  EXPECT_NE(d.notes[1].find("zero_optimization.cpu_offload_params true (the older form of "
                            "offload_param.device"),
            std::string::npos);
  EXPECT_NE(d.notes.back().find("zero_optimization.allgather_bucket_size"), std::string::npos);
}

// --- each numeric field's range: the refusal names the file (or flag), the key, the value as
// written, the range and why (common/limits.h)

struct FieldCase {
  const char* key;
  const char* value;    // as written in the file or on the command line
  const char* refusal;  // after "FILE: KEY: ": the value, the range and why
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

// `file` (a JSON object) with `key` set to the JSON text `value`.
std::string with_field(const std::string& file, const std::string& key, const std::string& value) {
  auto j = nlohmann::json::parse(slurp(data(file)));
  j[key] = nlohmann::json::parse(value);
  return j.dump();
}

const std::string kDim = std::string(" (") + limits::kModelDimensionWhy + ")";

TEST(ImporterFieldRanges, HuggingFaceConfigFields) {
  // Llama 3.2 3B: 24 attention heads; Mixtral 8x7B: 8 experts.
  const std::vector<std::pair<std::string, FieldCase>> cases = {
      {"hf/llama-3.2-3b.json", {"hidden_size", "0", "0 is out of range: from 1 to 65536"}},
      {"hf/llama-3.2-3b.json",
       {"hidden_size", "1000000000000", "1000000000000 is out of range: from 1 to 65536"}},
      // A float that is whole reads as an integer; one past 2^53 is out of range, not converted.
      {"hf/llama-3.2-3b.json",
       {"hidden_size", "1e12", "1000000000000.0 is out of range: from 1 to 65536"}},
      {"hf/llama-3.2-3b.json",
       {"num_attention_heads", "1e300", "1e+300 is out of range: from 1 to 4096"}},
      {"hf/llama-3.2-3b.json", {"num_hidden_layers", "-1", "-1 is out of range: from 1 to 4096"}},
      {"hf/llama-3.2-3b.json",
       {"vocab_size", "1099511627776", "1099511627776 is out of range: from 1 to 8388608"}},
      {"hf/llama-3.2-3b.json",
       {"max_position_embeddings", "18446744073709551615",
        "18446744073709551615 is out of range: from 1 to 16777216"}},
      {"hf/llama-3.2-3b.json", {"intermediate_size", "0", "0 is out of range: from 1 to 524288"}},
      {"hf/mixtral-8x7b.json",
       {"num_local_experts", "65536", "65536 is out of range: from 1 to 4096"}},
  };
  // Structured bindings are copied into the lambdas' captures by name: clang 14 cannot capture
  // them.
  for (const auto& [file, c] : cases) {
    SCOPED_TRACE(std::string(c.key) + " " + c.value);
    EXPECT_EQ(error_of([&f = file, &k = c] {
                interop::parse_hf_config(with_field(f, k.key, k.value), "c.json");
              }),
              std::string("c.json: ") + c.key + ": " + c.refusal + kDim);
  }
  EXPECT_EQ(error_of([] {
              interop::parse_hf_config(with_field("hf/llama-3.2-3b.json", "attention_dropout", "1"),
                                       "c.json");
            }),
            "c.json: attention_dropout: expected a number in [0, 1) (the probability of zeroing "
            "an activation), got 1");
  // Ranges set by another field: their reason says which.
  const std::vector<std::pair<std::string, FieldCase>> relative = {
      {"hf/llama-3.2-3b.json",
       {"num_key_value_heads", "25",
        "25 is out of range: from 1 to 24 (key/value heads are shared by the query heads: at most "
        "one per attention head)"}},
      {"hf/mixtral-8x7b.json",
       {"num_experts_per_tok", "9",
        "9 is out of range: from 1 to 8 (a token is routed to at most every expert)"}},
  };
  for (const auto& [file, c] : relative) {
    SCOPED_TRACE(c.key);
    EXPECT_EQ(error_of([&f = file, &k = c] {
                interop::parse_hf_config(with_field(f, k.key, k.value), "c.json");
              }),
              std::string("c.json: ") + c.key + ": " + c.refusal);
  }
}

TEST(ImporterFieldRanges, MegatronArguments) {
  const std::string batch = std::string(" (") + limits::kBatchSequences.why + ")";
  const std::string gpus = std::string(" (") + limits::kParallelSize.why + ")";
  const std::vector<std::pair<FieldCase, std::string>> cases = {
      {{"--num-layers", "-1", "-1 is out of range: from 1 to 4096"}, kDim},
      {{"--hidden-size", "0", "0 is out of range: from 1 to 65536"}, kDim},
      {{"--hidden-size", "1000000000000", "1000000000000 is out of range: from 1 to 65536"}, kDim},
      {{"--seq-length", "99999999999999999999",
        "99999999999999999999 is out of range: from 1 to 16777216"},
       kDim},
      {{"--micro-batch-size", "1099511627776", "1099511627776 is out of range: from 1 to 16777216"},
       batch},
      {{"--global-batch-size", "1099511627776",
        "1099511627776 is out of range: from 1 to 16777216"},
       batch},
      {{"--tensor-model-parallel-size", "262144", "262144 is out of range: from 1 to 131072"},
       gpus},
      {{"--ddp-bucket-size", "2199023255552",
        "2199023255552 is out of range: from 1 to 1099511627776"},
       std::string(" (") + limits::kBucketElements.why + ")"},
      {{"--make-vocab-size-divisible-by", "0", "0 is out of range: from 1 to 65536"},
       " (a padding multiple: Megatron-LM's default is 128)"},
  };
  interop::ImportOptions o;
  o.gpus = 8;
  for (const auto& [c, why] : cases) {
    SCOPED_TRACE(std::string(c.key) + " " + c.value);
    std::vector<std::string> args = kSmallModel;
    args.erase(args.end() - 2, args.end());  // --vocab-size: --make-vocab-size-divisible-by pads it
    for (const char* a : {"--vocab-size", "1000", c.key, c.value}) args.push_back(a);
    EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
              std::string("megatron argument ") + c.key + ": " + c.refusal + why);
  }
  // Bounds set by another value, and the global batch Megatron derives when none is given.
  std::vector<std::string> args = kSmallModel;
  for (const char* a : {"--group-query-attention", "--num-query-groups", "8"}) args.push_back(a);
  EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
            "megatron argument --num-query-groups: 8 is out of range: from 1 to 4 (key/value heads "
            "are shared by the query heads: at most one per attention head)");
  args = kSmallModel;
  for (const char* a : {"--micro-batch-size", "16777216"}) args.push_back(a);
  EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
            "megatron arguments: the global batch (no --global-batch-size): --micro-batch-size x "
            "DP = 16777216 x 8 = 134217728 is out of range: from 1 to 16777216" +
                batch);
  // Fractions and factors: the range and why.
  args = kSmallModel;
  for (const char* a : {"--hidden-dropout", "1.5"}) args.push_back(a);
  EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
            "megatron argument --hidden-dropout: expected a number in [0, 1) (the probability of "
            "zeroing an activation), got '1.5'");
  args = kSmallModel;
  for (const char* a : {"--swiglu", "--num-experts", "4", "--moe-expert-capacity-factor", "17"})
    args.push_back(a);
  EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
            "megatron argument --moe-expert-capacity-factor: expected a number in (0, 16] (each "
            "expert's cap over its balanced share; leave it out for dropless routing), got '17'");
  o.gpus.reset();
  args = kSmallModel;
  for (const char* a : {"--nnodes", "1", "--nproc-per-node", "2000"}) args.push_back(a);
  EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
            "megatron argument --nproc-per-node: 2000 is out of range: from 1 to 1024 (" +
                std::string(limits::kGpusPerNode.why) + ")");
}

TEST(ImporterFieldRanges, AValueFromALaunchScriptNamesTheScript) {
  const std::string script =
      "#!/bin/bash\nLAYERS=-1\ntorchrun pretrain_gpt.py --num-layers $LAYERS --hidden-size 256 "
      "--num-attention-heads 4 --seq-length 128 --vocab-size 1024\n";
  interop::ImportOptions o;
  o.gpus = 8;
  std::vector<std::string> args = interop::launch_script_arguments(script, "train.sh");
  o.script = "train.sh";
  o.script_words = args.size();
  EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
            "train.sh: megatron argument --num-layers: -1 is out of range: from 1 to 4096" + kDim);
  // Given again on the command line, the value is the command line's: no file is named.
  for (const char* a : {"--num-layers", "0"}) args.push_back(a);
  EXPECT_EQ(error_of([&] { interop::import_megatron(args, o); }),
            "megatron argument --num-layers: 0 is out of range: from 1 to 4096" + kDim);
}

TEST(ImporterFieldRanges, DeepSpeedConfigFields) {
  interop::ImportOptions o;
  o.model_preset = "gpt2-small";
  o.gpus = 8;
  const std::string batch = std::string(" (") + limits::kBatchSequences.why + ")";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"train_micro_batch_size_per_gpu": 1099511627776})",
       "train_micro_batch_size_per_gpu: 1099511627776 is out of range: from 1 to 16777216" + batch},
      {R"({"train_batch_size": -1})",
       "train_batch_size: -1 is out of range: from 1 to 16777216" + batch},
      // Whole numbers past 2^53 and 64 bits: out of range, not "not an integer".
      {R"({"train_batch_size": 1e300})",
       "train_batch_size: 1e+300 is out of range: from 1 to 16777216" + batch},
      {R"({"train_batch_size": 18446744073709551615})",
       "train_batch_size: 18446744073709551615 is out of range: from 1 to 16777216" + batch},
      {R"({"gradient_accumulation_steps": 0})",
       "gradient_accumulation_steps: 0 is out of range: from 1 to 16777216 (" +
           std::string(limits::kAccumulationSteps.why) + ")"},
      {R"({"zero_optimization": {"stage": -1}})",
       "zero_optimization.stage: -1 is out of range: from 0 to 3 (ZeRO's stages are 0 to 3)"},
      {R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": 2199023255552}})",
       "zero_optimization.reduce_bucket_size: 2199023255552 is out of range: from 1 to "
       "1099511627776 (" +
           std::string(limits::kBucketElements.why) + ")"},
  };
  for (const auto& [config, refusal] : cases) {
    SCOPED_TRACE(config);
    EXPECT_EQ(error_of([&cfg = config, &o] { interop::import_deepspeed(cfg, "ds.json", o); }),
              "ds.json: " + refusal);
  }
  // The GPUs, given (--gpus) or implied by the batch: a cluster's at most.
  o.gpus = 1 << 20;
  EXPECT_EQ(error_of([&] { interop::import_deepspeed("{}", "ds.json", o); }),
            "ds.json: GPUs from --gpus: 1048576 is out of range: from 1 to 131072 (twice the "
            "largest announced training cluster)");
  o.gpus.reset();
  EXPECT_EQ(
      error_of([&] {
        interop::import_deepspeed(
            R"({"train_batch_size": 1048576, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1})",
            "ds.json", o);
      }),
      "ds.json: GPUs from train_batch_size / train_micro_batch_size_per_gpu / "
      "gradient_accumulation_steps: 1048576 is out of range: from 1 to 131072 (twice the "
      "largest announced training cluster)");
}

// --- drafts cannot be injected

// A name with every character that could end a YAML scalar or start a key or comment.
const std::string kEvil = "evil\nlayers: 1\n  hidden: 8 # \"quoted\" 'single': x\r\nend";

TEST(DraftInjection, OrdinaryValuesStayPlainAndCommentsSplitAtNewlines) {
  EXPECT_EQ(interop::yaml_scalar("megatron-import"), "megatron-import");
  EXPECT_EQ(interop::yaml_scalar("tests/data/hf/llama-3.2-3b.json"),
            "tests/data/hf/llama-3.2-3b.json");
  EXPECT_EQ(interop::yaml_scalar("a: b"), "\"a: b\"");
  EXPECT_EQ(interop::yaml_scalar("a\rb"), "\"a\\rb\"");  // yaml-cpp would write the CR raw
  EXPECT_EQ(interop::yaml_comment("note: ", "one\ntwo: 2\r\nthree"),
            "# note: one\n# two: 2\n# three\n");
}

// The draft written to `dir`/draft.yaml and read back the way `clustersim simulate` reads it.
scenario::Scenario read_back(const interop::ScenarioDraft& d, const std::filesystem::path& dir) {
  const std::string yaml = interop::to_yaml(d);
  std::ofstream(dir / "draft.yaml") << yaml;
  return scenario::load_scenario((dir / "draft.yaml").string());
}

class DraftInjectionFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("cs-injection-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(DraftInjectionFiles, MegatronNamesAndNotesReadBackAsThemselves) {
  interop::ImportOptions o;
  o.gpus = 8;      // the cluster preset's one node
  o.name = kEvil;  // the scenario's name and the model's
  auto d = interop::import_megatron(kSmallModel, o);
  d.notes.push_back(kEvil);
  d.header.push_back(kEvil);
  const auto s = read_back(d, dir_);
  EXPECT_EQ(s.name, kEvil);
  EXPECT_EQ(s.model.name, kEvil);
  EXPECT_EQ(s.model.layers, 2);  // not the injected 1
  EXPECT_EQ(s.model.hidden, 256);
}

TEST_F(DraftInjectionFiles, DeepSpeedNamesAndConfigPathsReadBackAsThemselves) {
  // The model's Hugging Face config in a file whose name has a newline, a colon and a '#'.
  const std::string config_name = "gpt2\nlayers: 1 #x: \"y\".json";
  std::filesystem::copy_file(data("hf/gpt2.json"), dir_ / config_name);
  interop::ImportOptions o;
  o.hf_config = (dir_ / config_name).string();
  o.gpus = 8;
  o.name = kEvil;
  const auto d = interop::import_deepspeed(std::string("{") + kBatch + "}", kEvil, o);
  const auto s = read_back(d, dir_);
  EXPECT_EQ(s.name, kEvil);
  EXPECT_EQ(s.model.layers, 12);
  EXPECT_EQ(model::parameter_count(s.model), 124439808);  // GPT-2 (HfConfig tests)
}

TEST_F(DraftInjectionFiles, HuggingFaceModelNamesReadBackAsThemselves) {
  // _name_or_path gives the model's name (its last path part).
  std::ifstream in(data("hf/gpt2.json"));
  std::stringstream b;
  b << in.rdbuf();
  std::string text = b.str();
  const std::string evil_json =
      R"("_name_or_path": "org/evil\nlayers: 1\n  hidden: 8 # \"q\": x",)";
  text.insert(text.find('{') + 1, evil_json);
  const interop::HfModel hf = interop::parse_hf_config(text, "config.json");
  const std::string name = "evil\nlayers: 1\n  hidden: 8 # \"q\": x";
  ASSERT_EQ(hf.spec.name, name);
  interop::ScenarioDraft d;
  d.name = hf.spec.name;
  d.model = hf.spec;
  d.header.push_back(hf.architecture + " " + hf.spec.name);
  d.layout = {{"tp", "1"}, {"pp", "1"}, {"dp", "8"}};  // the cluster preset's one node
  d.training = {{"global_batch", "8"}, {"micro_batch", "1"}, {"seq_len", "128"}};
  const auto s = read_back(d, dir_);
  EXPECT_EQ(s.name, name);
  EXPECT_EQ(s.model.name, name);
  EXPECT_EQ(s.model.layers, 12);
  EXPECT_EQ(s.model.hidden, 768);
  // The model block the CLI prints as comments ("# name: ...") stays on one line per key.
  EXPECT_EQ(interop::model_keys(hf.spec)[0].second,
            "\"evil\\nlayers: 1\\n  hidden: 8 # \\\"q\\\": x\"");
}

}  // namespace
}  // namespace cs
