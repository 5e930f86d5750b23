// Golden files of generated deployments: tests/deploy/golden/NAME/PATH holds what the generator
// wrote for a fixed spec, so every change to a generated file is reviewed as a diff. Run the tests
// with PLEXUS_UPDATE_GOLDEN=1 to rewrite them in the source tree (then read the diff).
#pragma once
#include <string>
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy::testing {

// EXPECTs every file equal to its golden copy, and no golden file left without a generated one.
void expect_golden(const std::vector<GeneratedFile>& files, const std::string& name);

// The golden text at tests/deploy/golden/NAME/PATH (for --dry-run and CLI tests).
std::string golden_text(const std::string& name, const std::string& path);

}  // namespace plexus::deploy::testing
