// The requests of `plexus batch`: one JSON object per input line, checked and resolved against
// the command's defaults into what a replica runs. Bad lines are reported as FILE:LINE: reason.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "runtime/generate.h"
#include "tokenizer/tokenizer.h"

namespace plexus::batch {

// What a request leaves out: the command line's generation flags.
struct RequestDefaults {
  std::int64_t max_tokens = 32;
  SamplingOptions sampling;  // greedy unless --temperature; top-k / top-p / seed for every request
};

struct BatchRequest {
  Json id;              // as given in the input: a string or an integer
  std::string key;      // id.dump(): identity for resume and duplicates ("7" and 7 differ)
  std::int64_t line = 0;  // 1-based line in the input
  SequenceRequest seq;  // prompt ids, max_tokens, sampling (seed included) resolved
};

struct BadLine {
  std::int64_t line = 0;
  std::string reason;
  std::optional<Json> id;  // when the line had a usable id
};

struct ParsedInput {
  std::vector<BatchRequest> requests;  // in input order
  std::vector<BadLine> bad;
};

// What checking a line needs: the tokenizer (null: "prompt" is refused), vocabulary size and
// context length of the model.
struct ParseContext {
  const Tokenizer* tokenizer = nullptr;
  std::int64_t vocab_size = 0;
  std::int64_t max_context = 0;
  RequestDefaults defaults;
};

// One line (not blank). Throws InputError with the reason (no file or line) when bad.
BatchRequest parse_request_line(const std::string& text, const ParseContext& context);

// Reads every line of `path` ("-" is not accepted: resume needs a file). Blank lines are
// skipped; a repeated id is a bad line naming the first one's line. RuntimeError when the file
// cannot be read.
ParsedInput read_requests(const std::string& path, const ParseContext& context);

// "IN.jsonl:LINE: reason"
std::string describe_bad_line(const std::string& path, const BadLine& bad);

}  // namespace plexus::batch
