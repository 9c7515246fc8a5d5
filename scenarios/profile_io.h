// Profiles as YAML files (`profiles/NAME.yaml`): what `clustersim calibrate` writes and
// `simulate --profile` (or a scenario's `profile:` key) reads.
#pragma once

#include <string>

#include "cost_models/profile.h"

namespace cs::scenario {

// Throws UserError naming the file, line and key on anything malformed.
cost::Profile load_profile(const std::string& path);
void save_profile(const std::string& path, const cost::Profile& p);

}  // namespace cs::scenario
