// A request body of `plexus batch` read as `plexus serve` reads it: its fields parsed and checked
// by the server's own parser (parse_completion_request / parse_chat_request in
// serve/openai_request.h), the prompt tokenized or the messages rendered with the model's chat
// template and checked against the context (OpenAiApi::prepare), so every field and default the
// server has, batch has: "n" choices, "echo", "logprobs", "response_format" / "grammar" (the
// checked grammar text travels with the request; the replica compiles it) and "tools" /
// "tool_choice" as serve answers them. What a batch run cannot honour ("stream"; "echo" with
// "logprobs" for now) is refused by name, never ignored.
#pragma once
#include <string>
#include <string_view>

#include "batch/request.h"
#include "core/json.h"

namespace plexus::batch {

// Who fills what a body leaves out: the server's defaults (OpenAI lines: max_tokens 16 for a
// completion, the rest of the context for a chat; temperature 1, top_p 1), or the command's flags
// (plexus lines: --max-tokens, --temperature, --top-k, --top-p). A sampled request without
// "seed" takes the command's --seed either way, so that a rerun gives the same output.
enum class BodyDefaults { kServer, kCommand };

// The fields a body may hold: those the server's parser reads, "response_format" and "grammar",
// "user" (ignored, as by the server).
bool is_body_field(std::string_view name, bool chat);

// Fills `out.seq`, `out.chat` and `out.stop` from `body` (an object; a chat body when `chat`).
// `body_text`: the body as JSON text with the client's key order (a chat template's `tojson`
// prints keys that way). Throws the parser's ApiError (400, naming the field) or InputError.
// The body's "model" is ignored: the command's MODEL answers every line.
void parse_body_into(const Json& body, const std::string& body_text, bool chat, BodyDefaults defaults,
                     const ParseContext& context, BatchRequest& out);

}  // namespace plexus::batch
