// `plexus tokenize`: encode text with a Hugging Face tokenizer and print ids, ids with special
// tokens and the decoded text as one JSON line per input.
#include <charconv>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/jsonl_lines.h"
#include "cli/model_argument.h"
#include "cli/write_stdout.h"
#include "core/args.h"
#include "core/error.h"
#include "core/json.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace plexus::cli {
namespace {

void append_ids(std::string& out, const std::vector<std::int32_t>& ids) {
  out.push_back('[');
  char buf[16];
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out.push_back(',');
    auto r = std::to_chars(buf, buf + sizeof buf, ids[i]);
    out.append(buf, r.ptr);
  }
  out.push_back(']');
}

// {"ids":[...],"ids_with_special":[...],"decoded":"..."} and a newline.
std::string result_line(const Tokenizer& tok, std::string_view text, bool decode_special) {
  const std::vector<std::int32_t> ids = tok.encode(text, false);
  const std::vector<std::int32_t> with = tok.encode(text, true);
  std::string out = "{\"ids\":";
  append_ids(out, ids);
  out += ",\"ids_with_special\":";
  append_ids(out, with);
  out += ",\"decoded\":";
  out += Json(tok.decode(decode_special ? with : ids)).dump(-1, ' ', false, Json::error_handler_t::replace);
  out += "}\n";
  return out;
}


void run_jsonl(const Tokenizer& tok, const std::string& path, bool decode_special) {
  for_each_jsonl_line(path, [&](const std::string& line, const std::string& where) {
    const Json obj = parse_json(line, where);
    if (!obj.is_object() || !obj.contains("text") || !obj["text"].is_string())
      throw InputError(where + ": each line must be a JSON object with a string field \"text\"");
    write_stdout(result_line(tok, obj["text"].get_ref<const std::string&>(), decode_special));
  });
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  Args args("tokenize",
            "Encode text with a Hugging Face tokenizer or a GGUF file's vocabulary and print the token ids as JSON lines.");
  add_model_argument(args, "TOKENIZER", "a tokenizer.json file, a model directory holding one, or a .gguf file");
  args
      .option("--text", "TEXT", "encode this text")
      .option("--jsonl", "FILE", "encode the \"text\" field of each line of FILE ('-' for stdin)")
      .flag("--special", "make \"decoded\" the decode of ids_with_special instead of ids")
      .epilog("Output, one line per input: {\"ids\": [...], \"ids_with_special\": [...], \"decoded\": \"...\"}\n"
              "ids: add_special_tokens=false; ids_with_special: add_special_tokens=true; decoded: decode(ids).");
  if (!args.parse(argc, argv)) return 0;
  const bool has_text = args.has("--text"), has_jsonl = args.has("--jsonl");
  if (has_text == has_jsonl) throw InputError("give exactly one of --text TEXT or --jsonl FILE");
  const std::unique_ptr<Tokenizer> tok = Tokenizer::load(model_argument(args, ModelNeeds::kFiles, "TOKENIZER"));
  const bool decode_special = args.get_flag("--special");
  if (has_text) {
    const std::string text = args.get("--text");
    const std::size_t bad = utf8::find_invalid(text);
    if (bad != std::string::npos)
      throw InputError("--text is not valid UTF-8 (byte " + std::to_string(bad) + "): pass UTF-8 text");
    write_stdout(result_line(*tok, text, decode_special));
  } else {
    run_jsonl(*tok, args.get("--jsonl"), decode_special);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace plexus::cli
