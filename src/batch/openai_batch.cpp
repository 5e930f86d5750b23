// OpenAI Batch API lines in and out (batch/openai_batch.h).
#include "batch/openai_batch.h"


#include "batch/api_body.h"
#include "core/error.h"
#include "serve/openai_response.h"

namespace plexus::batch {

namespace {

constexpr const char* kResultPrefix = "{\"id\":\"batch_req_";

// `prefix` and 32 random hex digits.
std::string dump(const nlohmann::ordered_json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

BatchRequest parse_openai_line(const Json& line, const std::string& text, const ParseContext& context) {
  BatchRequest r;
  r.id = line.at("custom_id");
  if (!r.id.is_string()) throw InputError("\"custom_id\" must be a string, got " + r.id.dump());
  r.key = r.id.dump();
  for (const auto& [k, v] : line.items()) {
    if (k != "custom_id" && k != "method" && k != "url" && k != "body") {
      throw InputError("unknown field \"" + k + "\" (an OpenAI Batch API line holds custom_id, method, url, body)");
    }
  }
  if (line.value("method", Json()) != Json("POST")) {
    throw InputError("\"method\" must be \"POST\", got " + line.value("method", Json()).dump());
  }
  const Json url = line.value("url", Json());
  if (url != Json(kChatUrl) && url != Json(kCompletionsUrl)) {
    throw InputError(std::string("\"url\" must be \"") + kChatUrl + "\" or \"" + kCompletionsUrl + "\", got " + url.dump());
  }
  const bool chat = url == Json(kChatUrl);
  if (!line.contains("body") || !line["body"].is_object()) throw InputError("\"body\" must be the request's JSON object");
  for (const auto& [k, v] : line["body"].items()) {
    if (!is_body_field(k, chat)) {
      throw InputError("unknown field \"body." + k + "\" (not one that " + url.get<std::string>() + " reads)");
    }
  }
  if (!context.tokenizer) {
    throw InputError("OpenAI Batch API lines need the model's tokenizer.json (the responses hold text), and this model has none");
  }
  const std::string body_text = nlohmann::ordered_json::parse(text)["body"].dump();  // the client's key order
  parse_body_into(line["body"], body_text, chat, BodyDefaults::kServer, context, r);
  return r;
}

std::string openai_result_line(const BatchRequest& request, const std::string& model, const std::vector<ChoiceResult>& choices,
                               std::int64_t prompt_tokens, std::int64_t completion_tokens, double time_s) {
  const ResponseHeader h{new_completion_id(request.chat), unix_time_now(), model, request.chat};
  const Json usage = usage_json(prompt_tokens, completion_tokens, time_s, std::nullopt);
  nlohmann::ordered_json line;
  line["id"] = random_id("batch_req_", 32, kHexDigits);  // first: openai_results_format() knows a line (even a torn one) by it
  line["custom_id"] = request.id;
  line["response"] = {{"status_code", 200},
                      {"request_id", random_id("req_", 32, kHexDigits)},
                      {"body", completion_response(h, choices, usage)}};
  line["error"] = nullptr;
  return dump(line);
}

std::string openai_error_line(const std::optional<Json>& custom_id, const std::string& code, const std::string& message,
                              std::int64_t line_number, int attempts) {
  nlohmann::ordered_json error;
  error["code"] = code;
  error["message"] = message;
  error["line"] = line_number;
  if (attempts > 0) error["attempts"] = attempts;
  nlohmann::ordered_json line;
  line["id"] = random_id("batch_req_", 32, kHexDigits);
  line["custom_id"] = custom_id ? Json(*custom_id) : Json(nullptr);
  line["response"] = nullptr;
  line["error"] = error;
  return dump(line);
}

const JournalFormat& openai_results_format() {
  static const JournalFormat format{
      kResultPrefix,
      [](const Json& line) {
        return line.contains("id") && line["id"].is_string() && line["id"].get<std::string>().starts_with("batch_req_") &&
               line.contains("custom_id") && line["custom_id"].is_string() && line.contains("response") &&
               line["response"].is_object() && line["response"].contains("body") && line["response"]["body"].is_object();
      },
      "",  // never had a header line
      "",
      "OpenAI Batch API result lines ({\"id\": \"batch_req_...\", \"custom_id\", \"response\": {...}, \"error\": null})"};
  return format;
}

}  // namespace plexus::batch
