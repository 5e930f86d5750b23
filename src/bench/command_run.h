// `backend.type: command` (and `pytorch`, through scripts/hf_runner.py): any program run under
// the monitor. Its standard output is read for token lines, one JSON object per line:
//
//   {"plexus_tokens": {"input": 128, "output": 512}}
//
// "output" (required) and "input" (optional) are non-negative integers; every such line counts,
// summed (a program may print one per request or one at the end). J/token is the run's energy
// over the output tokens; with no token line it is null and the result says why.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_runner.h"

namespace plexus::bench {

struct TokenCount {
  std::int64_t input = 0, output = 0;
  int lines = 0;  // token lines read
};

struct TokenLines {
  std::optional<TokenCount> tokens;  // none: no token line
  std::string problem;               // a token line that is not of the documented shape (quoted)
};

// The token lines of a command's standard output.
TokenLines read_token_lines(const std::string& output);

// Runs `argv` inside a monitoring session (the point's monitor and device_ids) and returns its
// result tree: "engine", "command" {argv, exit_code, signal, wall_s}, "tokens", "throughput",
// "energy" (J/token null with "j_per_token_note" when the command printed no token line), the
// device statistics and timeline. InputError (exit 2) when the command cannot be run.
Json run_command_point(const BenchPoint& point, const std::vector<std::string>& argv, const std::string& engine,
                       const Log& log, const StopRequested& stop);

}  // namespace plexus::bench
