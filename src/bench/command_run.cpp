// A command under the monitor: held child, session on its process tree, stdout into an unlinked
// temporary file read for token lines when it ends.
#include "bench/command_run.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "bench/bench_metrics.h"
#include "bench/environment.h"
#include "core/error.h"
#include "core/json.h"
#include "monitor/child_process.h"
#include "monitor/monitor_session.h"

namespace plexus::bench {

namespace {

// An unlinked temporary file for the command's standard output.
int output_file() {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/plexus-command-XXXXXX";
  const int fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) throw RuntimeError("cannot make a file for the command's output in " + path + ": " + std::strerror(errno));
  ::unlink(path.c_str());
  return fd;
}

std::string read_all(int fd) {
  std::string text;
  char buffer[65536];
  ::lseek(fd, 0, SEEK_SET);
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

// A non-negative integer at `key` of `tokens`, else nullopt.
std::optional<std::int64_t> count_at(const Json& tokens, const char* key) {
  if (!tokens.contains(key) || !tokens[key].is_number_integer()) return std::nullopt;
  const std::int64_t v = tokens[key].get<std::int64_t>();
  if (v < 0) return std::nullopt;
  return v;
}

}  // namespace

TokenLines read_token_lines(const std::string& output) {
  TokenLines out;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] != '{' || line.find("\"plexus_tokens\"") == std::string::npos) continue;
    Json j;
    try {
      j = parse_json(line, "token line");
    } catch (const InputError&) {
      out.problem = "a token line that is not JSON: " + line;
      continue;
    }
    if (!j.is_object() || !j.contains("plexus_tokens")) continue;
    const Json& t = j["plexus_tokens"];
    const std::optional<std::int64_t> output_tokens = t.is_object() ? count_at(t, "output") : std::nullopt;
    const std::optional<std::int64_t> input_tokens = t.is_object() ? count_at(t, "input") : std::nullopt;
    if (!output_tokens || (t.contains("input") && !input_tokens)) {
      out.problem = "a token line not of the shape {\"plexus_tokens\": {\"input\": N, \"output\": M}} (non-negative integers): " + line;
      continue;
    }
    TokenCount& c = out.tokens ? *out.tokens : out.tokens.emplace();
    c.output += *output_tokens;
    c.input += input_tokens.value_or(0);
    ++c.lines;
  }
  return out;
}

Json run_command_point(const BenchPoint& point, const std::vector<std::string>& argv, const std::string& engine,
                       const Log& log, const StopRequested& stop) {
  const BenchConfig& c = point.config;
  const int out_fd = output_file();
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{out_fd};
  ChildProcess child(argv, out_fd);  // InputError (exit 2) when the program is not there
  SourceOptions so = source_options_from(device_options_from_env());
  for (long long id : c.backend.device_ids) so.devices.push_back(static_cast<int>(id));
  so.process_root = child.pid();
  MonitorSession session(make_sources(so));
  MonitorOptions mo;
  mo.interval_ms = c.monitor.interval_ms;
  mo.idle_baseline_s = c.monitor.idle_baseline_s;
  mo.stop_requested = stop;
  if (c.monitor.idle_baseline_s > 0) log("measuring the idle baseline for " + std::to_string(mo.idle_baseline_s) + " s");
  session.start(mo);
  std::string shown;
  for (const std::string& a : argv) shown += (shown.empty() ? "" : " ") + a;
  log("running under the monitor: " + shown);
  const std::string timestamp = utc_timestamp();
  if (stop && stop()) throw Interrupted("interrupted during the idle baseline, before the command started");
  const double started_s = session.now_s();
  child.release();  // InputError when exec fails
  bool stopped = false;
  std::optional<ChildExit> end;
  while (!(end = child.poll())) {
    if (!stopped && stop && stop()) {  // a terminal's Ctrl-C reached it already; a SIGTERM to plexus did not
      stopped = true;
      log("stopping the command (SIGTERM)");
      child.signal(SIGTERM);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double wall_s = session.now_s() - started_s;
  const MonitorSummary summary = session.stop();

  const TokenLines lines = read_token_lines(read_all(out_fd));
  const std::int64_t output_tokens = lines.tokens ? lines.tokens->output : 0;
  Json result;
  result["name"] = c.name;
  result["engine"] = engine;
  result["timestamp"] = timestamp;
  result["config"] = config_to_json(c);
  result["config"]["device_ids"] = c.backend.device_ids;
  result["sweep_point"] = point.sweep_point;
  std::string error;
  if (end->exit_code != 0) {
    error = end->signal != 0 ? "the command was ended by signal " + std::to_string(end->signal)
                             : "the command exited with " + std::to_string(end->exit_code);
  }
  if (!lines.problem.empty()) error += (error.empty() ? "" : "; ") + lines.problem;
  result["status"] = stopped ? "interrupted" : error.empty() ? "ok" : "failed";
  result["interrupted"] = stopped;
  if (!error.empty()) result["error"] = error;
  result["command"] = {{"argv", argv},
                       {"exit_code", end->exit_code},
                       {"signal", end->signal != 0 ? Json(end->signal) : Json(nullptr)},
                       {"wall_s", wall_s}};
  if (lines.tokens) {
    result["tokens"] = {{"input", lines.tokens->input}, {"output", lines.tokens->output}, {"lines", lines.tokens->lines}};
  } else {
    result["tokens"] = nullptr;
  }
  auto per_s = [&](std::int64_t n) { return lines.tokens && wall_s > 0 ? Json(static_cast<double>(n) / wall_s) : Json(nullptr); };
  result["throughput"] = {{"tokens_per_s", per_s(output_tokens)},
                          {"total_tokens_per_s", per_s(output_tokens + (lines.tokens ? lines.tokens->input : 0))},
                          {"output_tokens", lines.tokens ? Json(output_tokens) : Json(nullptr)},
                          {"prompt_tokens", lines.tokens ? Json(lines.tokens->input) : Json(nullptr)},
                          {"wall_s", wall_s}};
  result["energy"] = energy_json(summary, output_tokens);
  if (!lines.tokens) {
    result["energy"]["j_per_token_note"] =
        "the command printed no token line ({\"plexus_tokens\": {\"input\": N, \"output\": M}} on its standard output), "
        "so there is no J/token";
    log("no token line on the command's standard output: J/token is null");
  } else if (output_tokens == 0) {
    result["energy"]["j_per_token_note"] = "the command's token lines report 0 output tokens";
  }
  add_monitor_results(result, summary, session.unavailable(), c.monitor.interval_ms);
  Json processes = Json::object();  // the command's own processes on each GPU, where NVML says
  const Json summary_json = to_json(summary);  // held: a range-for over a temporary's member dangles
  for (const Json& d : summary_json["devices"]) {
    if (d.contains("process")) processes["gpu_" + d["index"].dump()] = d["process"];
  }
  result["monitor"]["command_processes"] = processes;
  result["environment"] = environment_json();
  result["timeline"] = timeline_json(session.samples());
  return result;
}

}  // namespace plexus::bench
