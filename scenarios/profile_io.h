// Profiles as YAML files (`profiles/NAME.yaml`): what `clustersim calibrate` writes and
// `simulate --profile` (or a scenario's `profile:` key) reads.
#pragma once

#include <string>
#include <vector>

#include "cost_models/profile.h"

namespace cs::scenario {

// Throws UserError naming the file, line and key on anything malformed.
cost::Profile load_profile(const std::string& path);
void save_profile(const std::string& path, const cost::Profile& p);

// Where the shipped profiles are: the folder the environment variable CLUSTERSIM_PROFILES names
// when it is set; else, for an installed clustersim (PREFIX/bin/clustersim), the
// PREFIX/share/clustersim/profiles its install put beside it; else the source tree this program
// was built from (CLUSTERSIM_SOURCE_DIR/profiles, compiled in).
std::string profiles_dir();
// The profiles there by name (their files' stems), sorted.
std::vector<std::string> profile_names();
// A scenario's `profile:` value as a file: a name alone (no '/', no ".yaml": `h100_sxm`) is
// profiles_dir()/NAME.yaml, refused with the names there when absent; a path is relative to the
// scenario file's folder.
std::string profile_file(const std::string& value, const std::string& scenario_file);
// What a written scenario says for a profile file: its name when it is one of profiles_dir()'s
// (so the scenario moves between machines and installs), else its absolute path.
std::string profile_reference(const std::string& file);

}  // namespace cs::scenario
