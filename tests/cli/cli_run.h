// Helpers of the command-line tests: a tiny model, plexus run with no GPU library (or the fake
// NVML and its four GPUs), and checks of exit code and message.
#pragma once
#include <string>

#include "test_util.h"

namespace plexus::testing {

// A random tiny llama (vocab 300, bfloat16, no tokenizer) in `dir`.
std::string tiny_model(const TempDir& dir);

// `plexus ARGS` with no GPU visible (no NVML, CUDA_VISIBLE_DEVICES empty) and no PLEXUS_VIRTUAL_*
// variables (killed after 120 s: exit 124).
ProcessResult run_no_gpu(const std::string& args);
// `plexus ARGS` with the fake NVML showing tests/backend/data/four_gpus.json (and the CUDA
// runtime shown no GPU, so a real one does not join the fake four).
ProcessResult run_four_gpus(const std::string& args);

// Exit 2 and every one of `mentions` in stderr.
void expect_usage_error(const ProcessResult& r, const std::string& what, std::initializer_list<std::string> mentions);

// Writes `text` to `path`.
void write_file(const std::string& path, const std::string& text);

}  // namespace plexus::testing
