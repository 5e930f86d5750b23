// A real `plexus serve` process for tests: started on a free loopback port (--port 0, the port
// read from its stderr), waited for until /health answers 200, and driven with real curl.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <string>

#include "core/json.h"
#include "test_util.h"

namespace plexus::testing {

// Seconds from t0 to now, on the steady clock.
double seconds_since(std::chrono::steady_clock::time_point t0);

class ServerProcess {
 public:
  // Starts `plexus serve ARGS` (ARGS shell-quoted, --port 0 added) with GPUs hidden and `env`
  // ("NAME=value ...", shell-quoted values) added to its environment; waits up to `ready_s` for
  // /health 200 (fails the test, and kills the process, if it does not come).
  ServerProcess(const std::string& args, const TempDir& dir, double ready_s = 120, const std::string& env = "");
  ~ServerProcess();  // SIGKILL if still running
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string url(const std::string& path) const;
  std::string log() const;  // its stderr so far
  // Sends `signal`; waits up to `limit_s` for the exit (then SIGKILL): the exit code, 128 + N
  // for death by signal N, -1 when it had to be killed.
  int stop(int signal, double limit_s);
  // Sends `signal` and returns at once (a second one follows with stop()).
  void signal(int signal) const;

 private:
  pid_t pid_ = -1;
  int port_ = -1;
  std::string log_path_;
};

struct HttpResult {
  int status = 0;  // 0: no answer
  std::string body;
  Json json() const;  // the body parsed (null when it is not JSON)
};

// curl METHOD URL [with BODY as JSON] [with HEADERS "Name: value" each], bounded by `max_s`.
HttpResult curl(const std::string& method, const std::string& url, const std::string& body = "",
                const std::vector<std::string>& headers = {}, double max_s = 60);

// The "data: {...}" events of a server-sent event stream, parsed; `done`: it ended with [DONE].
std::vector<Json> sse_events(const std::string& body, bool* done);

}  // namespace plexus::testing
