// A real `plexus serve` process and curl as its client (server_process.h).
#include "server_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace plexus::testing {

namespace {

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

ServerProcess::ServerProcess(const std::string& args, const TempDir& dir, double ready_s, const std::string& env) {
  static int counter = 0;
  log_path_ = dir / ("serve-" + std::to_string(counter++) + ".log");
  const std::string cmd = "exec env CUDA_VISIBLE_DEVICES= " + env + " " + shell_quote(PLEXUS_BINARY) + " serve " + args +
                          " --port 0 2>" + shell_quote(log_path_) + " >/dev/null </dev/null";
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
  while (seconds_since(t0) < ready_s) {
    std::smatch m;
    const std::string text = read_all(log_path_);
    if (port_ < 0 && std::regex_search(text, m, listening)) port_ = std::stoi(m[1]);
    if (port_ > 0 && curl("GET", url("/health"), "", {}, 5).status == 200) return;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      port_ = -1;
      ADD_FAILURE() << "plexus serve exited: " << read_all(log_path_);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "plexus serve not ready after " << ready_s << " s: " << read_all(log_path_);
  stop(SIGKILL, 10);
  port_ = -1;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) stop(SIGKILL, 10);
}

std::string ServerProcess::url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

std::string ServerProcess::log() const { return read_all(log_path_); }

void ServerProcess::signal(int signal) const {
  if (pid_ > 0) kill(pid_, signal);
}

int ServerProcess::stop(int signal, double limit_s) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (seconds_since(t0) < limit_s) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return -1;
}

Json HttpResult::json() const {
  return Json::parse(body, nullptr, /*allow_exceptions=*/false);
}

HttpResult curl(const std::string& method, const std::string& url, const std::string& body,
                const std::vector<std::string>& headers, double max_s) {
  TempDir tmp("curl");
  std::string cmd = "curl -s -S -N --max-time " + std::to_string(max_s) + " -X " + method + " -o " + shell_quote(tmp / "body") +
                    " -w '%{http_code}'";
  if (!body.empty()) {
    std::ofstream(tmp / "request", std::ios::binary) << body;
    cmd += " -H 'Content-Type: application/json' --data-binary @" + shell_quote(tmp / "request");
  }
  for (const std::string& h : headers) cmd += " -H " + shell_quote(h);
  cmd += " " + shell_quote(url);
  const ProcessResult p = run_command(cmd);
  HttpResult r;
  r.body = read_all(tmp / "body");
  r.status = std::atoi(p.out.c_str());
  return r;
}

std::vector<Json> sse_events(const std::string& body, bool* done) {
  std::vector<Json> events;
  std::size_t at = 0;
  *done = false;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const std::size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    const std::string data = body.substr(at + 6, end - at - 6);
    if (data == "[DONE]") {
      *done = end + 2 == body.size();
    } else {
      events.push_back(Json::parse(data, nullptr, false));
    }
    at = end + 2;
  }
  return events;
}

}  // namespace plexus::testing
