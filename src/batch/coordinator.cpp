// Resume, durable commit, errors file and counts of a batch run.
#include "batch/coordinator.h"

#include <cmath>
#include <csignal>
#include <filesystem>
#include <unordered_map>

#include "batch/openai_batch.h"
#include "batch/result_text.h"
#include "core/error.h"
#include "serve/openai_api.h"

namespace plexus::batch {

std::string errors_path(const std::string& output) {
  const std::string ext = ".jsonl";
  if (output.size() > ext.size() && output.compare(output.size() - ext.size(), ext.size(), ext) == 0) {
    return output.substr(0, output.size() - ext.size()) + ".errors.jsonl";
  }
  return output + ".errors.jsonl";
}

const JournalFormat& results_format() {
  static const JournalFormat format{
      std::string("{\"object\":\"") + kResultObject + "\"",
      [](const Json& line) {
        // Marked (this format), or unmarked (outputs of plexus versions before the marker).
        if (line.contains("object") && line["object"] != Json(kResultObject)) return false;
        return line.contains("id") && (line["id"].is_string() || line["id"].is_number_integer()) && line.contains("ids") &&
               line["ids"].is_array() && line.contains("finish_reason") && line["finish_reason"].is_string() &&
               line.contains("completion_tokens");
      },
      "{\"plexus_batch\":\"results\",\"format\":1}",
      "plexus_batch",
      "plexus batch's result lines ({\"object\": \"plexus.batch.result\", \"id\", \"ids\", \"finish_reason\", ...})"};
  return format;
}

const JournalFormat& output_format(LineFormat format) {
  return format == LineFormat::kOpenAi ? openai_results_format() : results_format();
}

std::string result_key(const Json& line) { return line.contains("custom_id") ? line["custom_id"].dump() : line["id"].dump(); }

namespace {

// Same file by device and inode (std::filesystem::equivalent follows symlinks); false when
// either does not exist.
bool same_file(const std::string& a, const std::string& b) {
  if (a == b) return true;
  std::error_code ec;
  const bool same = std::filesystem::equivalent(a, b, ec);
  return !ec && same;
}

}  // namespace

void check_output_is_not_input(const std::string& input, const std::string& output) {
  if (same_file(input, output)) {
    throw InputError("--output '" + output + "' is the input file '" + input +
                     "' (the same file, maybe through a link): results would be mixed with the requests; pass another --output");
  }
  if (same_file(input, errors_path(output))) {
    throw InputError("--output '" + output + "' would write its errors file '" + errors_path(output) +
                     "' over the input '" + input + "'; pass another --output");
  }
  if (same_file(output, errors_path(output))) {
    throw InputError("--output '" + output + "' is its own errors file '" + errors_path(output) + "'; pass another --output");
  }
}

Coordinator::Coordinator(ParsedInput input, const std::string& input_path, const Tokenizer* tokenizer,
                         const CoordinatorOptions& options, std::unique_ptr<Journal> output)
    : format_(input.format), requests_(std::move(input.requests)), tokenizer_(tokenizer), options_(options),
      output_(std::move(output)) {
  if (!output_) output_ = std::make_unique<Journal>(options.output, Journal::Mode::kResume, &output_format(format_));
  // The errors file describes this run: every request not in the output is tried again.
  errors_ = std::make_unique<Journal>(errors_path(options.output), Journal::Mode::kTruncate);
  if (output_->torn_bytes() > 0) {
    std::fprintf(stderr, "plexus batch: cut a torn last line (%llu bytes) from %s; its request runs again\n",
                 static_cast<unsigned long long>(output_->torn_bytes()), options.output.c_str());
  }
  std::unordered_map<std::string, bool> done;
  for (const Json& line : output_->existing()) done[result_key(line)] = true;
  written_.assign(requests_.size(), false);
  std::vector<std::size_t> pending;
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    if (done.count(requests_[i].key)) {
      written_[i] = true;
      ++summary_.resumed;
    } else {
      pending.push_back(i);
    }
  }
  for (const BadLine& b : input.bad) {
    const std::string message = describe_bad_line(input_path, b);
    if (format_ == LineFormat::kOpenAi) {
      errors_->append_line(openai_error_line(b.id, b.code, message, b.line, 0));
      continue;
    }
    Json j = {{"line", b.line}, {"error", message}};
    if (b.id) j["id"] = *b.id;
    errors_->append(j);
  }
  summary_.requests = static_cast<std::int64_t>(requests_.size());
  summary_.skipped_lines = static_cast<std::int64_t>(input.bad.size());
  summary_.replicas.resize(static_cast<std::size_t>(std::max(0, options.queue.replicas)));
  summary_.output = options.output;
  summary_.errors = errors_->path();
  queue_ = std::make_unique<WorkQueue>(std::move(pending), options.queue);
  progress_ = std::make_unique<Progress>(options.progress, summary_.requests - summary_.resumed);
  write_failures_locked();  // no replica at all
}

Task Coordinator::task(std::size_t index) const {
  const BatchRequest& r = requests_.at(index);
  return Task{index, r.key, r.seq, r.choices, r.logprobs, r.grammar, r.grammar_source};
}

std::vector<Task> Coordinator::tasks(const std::vector<std::size_t>& indices) const {
  std::vector<Task> out;
  for (std::size_t i : indices) out.push_back(task(i));
  return out;
}

void Coordinator::commit(const std::vector<Outcome>& outcomes) {
  std::lock_guard lock(mutex_);
  for (const Outcome& o : outcomes) {
    const std::size_t r = static_cast<std::size_t>(o.replica);
    if (r >= summary_.replicas.size()) summary_.replicas.resize(r + 1);
    if (!o.ok) {
      ++summary_.replicas[r].failed_tries;
      queue_->failed(o.replica, o.index, o.error, o.permanent);
      continue;
    }
    if (!written_[o.index]) {
      output_->append_line(result_line(requests_[o.index], o));  // durable before it counts
      written_[o.index] = true;
      ++summary_.done;
      ++summary_.replicas[r].done;
      summary_.prompt_tokens += o.prompt_tokens;
      for (const ChoiceOutcome& c : o.choices) summary_.completion_tokens += static_cast<std::int64_t>(c.ids.size());
      if (options_.kill_after > 0 && summary_.done >= options_.kill_after) std::raise(SIGKILL);  // crash test
    }
    queue_->succeeded(o.replica, o.index);
  }
  write_failures_locked();
  note_removed_locked();
  progress_->update(summary_.done, summary_.failed, summary_.completion_tokens);
}

std::string Coordinator::result_line(const BatchRequest& req, const Outcome& o) const {
  // Each choice as serve answers it: its text cut at a stop string, after the echo, parsed for
  // tool calls. Without a tokenizer (plexus lines of ids only, no stop strings): the ids as generated.
  std::vector<ResultText> texts;
  std::vector<ChoiceResult> choices;
  std::int64_t completion_tokens = 0;
  for (const ChoiceOutcome& c : o.choices) {
    const ResultText& r = texts.emplace_back(tokenizer_ ? result_text(*tokenizer_, c.ids, c.finish_reason, req.stop)
                                                        : ResultText{"", c.ids.size(), c.finish_reason, {}});
    Json logprobs = nullptr;
    if (req.logprobs >= 0 && tokenizer_) {  // the tokens sent as text, each where its text starts (as serve's)
      LogprobsBuilder builder(*tokenizer_, req.chat);
      for (std::size_t i = 0; i < r.offsets.size() && i < c.logprobs.size(); ++i) builder.add(c.logprobs[i], r.offsets[i]);
      logprobs = builder.take();
    }
    ChoiceResult& choice = choices.emplace_back(ChoiceResult{req.echo + r.text, r.finish_reason, std::move(logprobs), nullptr});
    take_tool_calls(req.tool_format, req.echo, choice);
    completion_tokens += static_cast<std::int64_t>(r.tokens);
  }
  if (format_ == LineFormat::kOpenAi) {
    return openai_result_line(req, options_.model, choices, o.prompt_tokens, completion_tokens, o.latency_ms / 1e3);
  }
  // Keys in the documented order; the fields of choice 0, and with "n" every choice in "choices".
  auto choice_json = [&](nlohmann::ordered_json& j, std::size_t i) {
    const std::vector<std::int32_t>& ids = o.choices[i].ids;
    j["ids"] = std::vector<std::int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(texts[i].tokens));
    if (tokenizer_) j["text"] = choices[i].text;
    if (!choices[i].tool_calls.is_null()) j["tool_calls"] = choices[i].tool_calls;
    if (!choices[i].logprobs.is_null()) j["logprobs"] = choices[i].logprobs;
    j["finish_reason"] = choices[i].finish_reason;
  };
  nlohmann::ordered_json line;
  line["object"] = kResultObject;  // first: results_format() knows a line (even a torn one) by it
  line["id"] = req.id;
  choice_json(line, 0);
  line["prompt_tokens"] = o.prompt_tokens;
  line["completion_tokens"] = texts[0].tokens;
  if (o.choices.size() > 1) {
    line["choices"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < o.choices.size(); ++i) {
      nlohmann::ordered_json c;
      c["index"] = i;
      choice_json(c, i);
      c["completion_tokens"] = texts[i].tokens;
      line["choices"].push_back(std::move(c));
    }
  }
  line["replica"] = o.replica;
  line["latency_ms"] = std::round(o.latency_ms * 1e3) / 1e3;  // microseconds are enough
  return line.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void Coordinator::replica_lost(int replica, const std::string& reason) {
  std::lock_guard lock(mutex_);
  const std::size_t r = static_cast<std::size_t>(replica);
  if (r >= summary_.replicas.size()) summary_.replicas.resize(r + 1);
  summary_.replicas[r].taken_out = true;
  summary_.replicas[r].out_reason = reason;
  queue_->remove_replica(replica, reason);
  write_failures_locked();
}

void Coordinator::write_failures_locked() {
  for (const FinalFailure& f : queue_->drain_failures()) {
    const BatchRequest& req = requests_[f.index];
    if (format_ == LineFormat::kOpenAi) {
      errors_->append_line(openai_error_line(req.id, "server_error", f.reason, req.line, f.attempts));
    } else {
      nlohmann::ordered_json line;
      line["id"] = req.id;
      line["line"] = req.line;
      line["error"] = f.reason;
      line["attempts"] = f.attempts;
      errors_->append_line(line.dump(-1, ' ', false, Json::error_handler_t::replace));
    }
    ++summary_.failed;
  }
}

void Coordinator::note_removed_locked() {
  for (int r : queue_->removed()) {
    ReplicaCounts& c = summary_.replicas[static_cast<std::size_t>(r)];
    if (!c.taken_out) {
      c.taken_out = true;
      c.out_reason = "failed " + std::to_string(options_.queue.replica_strikes) + " requests in a row";
    }
  }
}

BatchSummary Coordinator::finish() {
  std::lock_guard lock(mutex_);
  write_failures_locked();
  note_removed_locked();
  progress_->update(summary_.done, summary_.failed, summary_.completion_tokens);
  progress_->finish();
  summary_.retries = queue_->retries();
  summary_.wall_s = timer_.seconds();
  return summary_;
}

}  // namespace plexus::batch
