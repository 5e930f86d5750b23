// The command line both exec benchmarks take: MODEL_DIR [--tokens N] [--prompt N].
#pragma once
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/error.h"

namespace plexus {

struct ModelBenchArgs {
  std::string model;
  int new_tokens = 16;
  int prompt_tokens = 16;
};

// None (usage printed to stderr) when MODEL_DIR is missing; InputError on an unknown option.
inline std::optional<ModelBenchArgs> parse_model_bench_args(int argc, char** argv, const char* name, ModelBenchArgs defaults) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR [--tokens N] [--prompt N]\n", name);
    return std::nullopt;
  }
  ModelBenchArgs a = defaults;
  a.model = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--tokens") a.new_tokens = std::atoi(argv[i + 1]);
    else if (flag == "--prompt") a.prompt_tokens = std::atoi(argv[i + 1]);
    else throw InputError("unknown option " + flag);
  }
  return a;
}

}  // namespace plexus
