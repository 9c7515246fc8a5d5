// A scenario as the importers write it: YAML text with the keys scenarios/scenario.cpp reads.
// Strings that come from the user's files (names, paths) are written as YAML scalars by
// yaml-cpp's emitter (plain where that reads back the same, else quoted), and comment lines
// (header, notes, warnings) start each embedded line with "# ": a name or note cannot add keys.
// A key the reader does not read (a newer importer against an older reader) is marked in place
// "# not simulated yet" and listed in a note, so a user knows what to remove.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/model_spec.h"

namespace cs::interop {

// Each value is YAML text: a scalar (yaml_scalar for a user's string) or a flow mapping.
using KeyValues = std::vector<std::pair<std::string, std::string>>;

struct ScenarioDraft {
  std::string name;
  std::vector<std::string> header;        // comment lines at the top (where it came from)
  std::string model_hf_config;            // model: {hf_config: PATH} when set
  std::string model_preset;               // model: {preset: NAME} when set
  std::optional<model::ModelSpec> model;  // else the model by its dimensions
  std::string stack;                      // stack: (models/software_stack.h) when set
  std::string cluster_preset = "dgx_h100";
  int nodes = 1;
  KeyValues layout, training;
  KeyValues moe;                      // the scenario's moe: section (routing, dispatcher) when set
  std::vector<std::string> notes;     // "# note: ..." lines
  std::vector<std::string> warnings;  // "# warning: ..." lines (also worth printing on stderr)
};

// The model block's keys for `m` ("key", "value" with flow mappings for moe and mla), only those
// that differ from what the scenario reader assumes for a custom model of that family.
KeyValues model_keys(const model::ModelSpec& m);
// The keys the scenario reader takes in its "layout", "training" and "moe" sections, in the order
// its refusals list them: the one list of each, which scenarios/scenario.cpp checks a file against
// and drafts are marked by (it lives here as the reader includes interop, not the other way).
const std::vector<std::string>& scenario_section_keys(std::string_view section);
// False for keys of `section` ("model", "layout", "training") that the scenario reader does not
// read (the value is passed for keys whose new values a reader might not know).
bool scenario_reads(const std::string& section, const std::string& key, const std::string& value);

// YAML text; keys the reader does not read yet are marked "# not simulated yet" and listed in one
// note per section.
std::string to_yaml(ScenarioDraft d);

// `s` as one YAML scalar: plain when YAML reads it back as the same string ("llama-3-8b"), else
// quoted ("\"a: b\"", "\"x\\ny\"" for a newline).
std::string yaml_scalar(const std::string& s);
// "# " + prefix + text + "\n", every line break in `text` starting a new "# " line.
std::string yaml_comment(const std::string& prefix, const std::string& text);

// "3,212,749,824"
std::string with_commas(int64_t n);

}  // namespace cs::interop
