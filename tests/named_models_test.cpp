// The registry of named cost models (scenarios/named_models.h): every entry says what it does and
// where it comes from, the scenario reader accepts exactly the registry's names, and an unknown
// name is answered with all of them.
#include "scenarios/named_models.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/error.h"
#include "scenarios/scenario.h"

namespace cs {
namespace {

template <class E>
void expect_described(const std::vector<scenario::NamedModel<E>>& models, const char* kind) {
  std::set<std::string_view> names;
  for (const auto& m : models) {
    EXPECT_FALSE(m.name.empty()) << kind;
    EXPECT_FALSE(m.summary.empty()) << kind << " " << m.name << " has no summary";
    EXPECT_FALSE(m.source.empty()) << kind << " " << m.name << " has no source";
    EXPECT_TRUE(names.insert(m.name).second) << kind << " " << m.name << " twice";
  }
}

TEST(NamedModels, EveryEntryHasASummaryAndASource) {
  expect_described(scenario::network_models(), "network model");
  expect_described(scenario::collective_algorithms(), "algorithm");
  expect_described(scenario::collective_protocols(), "protocol");
  expect_described(scenario::software_stacks(), "stack");
  expect_described(scenario::attention_kernels(), "attention kernel");
  // The five stacks of models/software_stack.h, each listed once.
  EXPECT_EQ(scenario::software_stacks().size(), 5u);
}

std::string scenario_with(const std::string& extra) {
  return "name: s\nmodel: {preset: gpt2-small}\ncluster: {preset: dgx_h100}\n"
         "layout: {dp: 8}\ntraining: {global_batch: 8, micro_batch: 1, seq_len: 1024}\n" +
         extra;
}

// Every name the registry offers is one the scenario reader takes, with the registry's value:
// before the registry, `network.algorithm` refused pat and direct while --algo took them.
TEST(NamedModels, ScenarioReaderTakesEveryRegistryName) {
  for (const auto& m : scenario::collective_algorithms()) {
    const auto s = scenario::parse_scenario(
        scenario_with("network: {algorithm: " + std::string(m.name) + "}\n"), "a.yaml");
    EXPECT_EQ(s.collectives.algorithm, m.value) << m.name;
  }
  for (const auto& m : scenario::collective_protocols()) {
    const auto s = scenario::parse_scenario(
        scenario_with("network: {protocol: " + std::string(m.name) + "}\n"), "a.yaml");
    EXPECT_EQ(s.collectives.protocol, m.value) << m.name;
  }
  for (const auto& m : scenario::network_models()) {
    const auto s = scenario::parse_scenario(
        scenario_with("network: {fidelity: " + std::string(m.name) + "}\n"), "a.yaml");
    EXPECT_EQ(s.fidelity, m.value) << m.name;
  }
  for (const auto& m : scenario::software_stacks()) {
    const auto s =
        scenario::parse_scenario(scenario_with("stack: " + std::string(m.name) + "\n"), "a.yaml");
    EXPECT_EQ(s.training.stack, m.value) << m.name;
  }
}

// An unknown name: the file, line, key and every valid name, in the registry's order.
TEST(NamedModels, UnknownNameListsTheValidOnes) {
  try {
    scenario::parse_scenario(scenario_with("network: {algorithm: butterfly}\n"), "a.yaml");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("a.yaml:6:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("network.algorithm: unknown value 'butterfly'; valid "
                                         "values: auto, ring, tree, nvls, pat, hierarchical, "
                                         "direct"),
              std::string::npos)
        << e.what();
  }
  try {
    scenario::find_named_model(scenario::software_stacks(), "--stack", "jax");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--stack 'jax': valid values are ideal, pytorch_eager, torch_compile, "
              "megatron_core, deepspeed");
  }
}

TEST(NamedModels, DescriptionNamesEverySection) {
  const std::string text = scenario::describe_named_models();
  for (const char* heading : {"network models", "collective algorithms", "collective protocols",
                              "software stacks", "attention kernels"}) {
    EXPECT_NE(text.find(heading), std::string::npos) << heading;
  }
  EXPECT_NE(text.find("flash2: FlashAttention-2"), std::string::npos);
}

}  // namespace
}  // namespace cs
