// `plexus monitor -- CMD`: the command starts held, the session starts watching its process tree,
// then the command runs; signals sent to plexus go on to it; its end ends the session.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "cli/cmd_monitor.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "monitor/child_process.h"

namespace plexus::cli {

namespace {

// Signals to pass on: only those sent to plexus alone (kill, a job scheduler). A terminal's Ctrl-C
// reaches the whole foreground process group, the command included, and is not sent twice.
volatile sig_atomic_t g_pending_int = 0, g_pending_term = 0, g_received = 0;

void on_signal(int sig, siginfo_t* info, void*) {
  g_received = 1;
  if (info != nullptr && info->si_code > 0) return;  // from the kernel (a terminal): the command has it too
  if (sig == SIGINT) g_pending_int = g_pending_int + 1;
  else g_pending_term = g_pending_term + 1;
}

// Installs the forwarding handlers for its life.
class SignalForwarding {
 public:
  SignalForwarding() {
    g_pending_int = 0;
    g_pending_term = 0;
    g_received = 0;
    struct sigaction action = {};
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~SignalForwarding() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

  // Sends the signals that arrived since the last call on to `child`.
  void forward(ChildProcess& child) {
    for (; int_sent_ < g_pending_int; ++int_sent_) child.signal(SIGINT);
    for (; term_sent_ < g_pending_term; ++term_sent_) child.signal(SIGTERM);
  }
  bool received() const { return g_received != 0; }

 private:
  struct sigaction old_int_ = {}, old_term_ = {};
  int int_sent_ = 0, term_sent_ = 0;
};

}  // namespace

int monitor_command(const std::vector<std::string>& command, const MonitorOptions& options, SourceOptions sources,
                    bool json, const std::string& output) {
  if (!output.empty()) ensure_writable_dir(std::filesystem::path(output).parent_path().empty()
                                              ? std::string(".")
                                              : std::filesystem::path(output).parent_path().string(),
                                          "--output");
  SignalForwarding signals;  // from before the fork: a signal in between is not lost
  ChildProcess child(command);     // held until release(): exit 2 here when it cannot be found
  sources.process_root = child.pid();
  MonitorSession session(make_sources(sources));
  MonitorOptions o = options;
  o.stop_requested = [&signals] { return signals.received(); };
  session.start(o);
  // A signal during the idle baseline: the held command never runs (it leaves when the pipe closes).
  if (signals.received()) throw Interrupted("interrupted before the command started");
  const double started_s = session.now_s();
  child.release();  // InputError (exit 2) when exec failed; the session ends unreported
  std::optional<ChildExit> end;
  while (!(end = child.poll())) {
    signals.forward(child);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double ended_s = session.now_s();
  const MonitorSummary summary = session.stop();

  Json c{{"argv", command},
         {"pid", static_cast<long long>(child.pid())},
         {"exit_code", end->exit_code},
         {"signal", end->signal != 0 ? Json(end->signal) : Json(nullptr)},
         {"wall_s", ended_s - started_s},
         {"interrupted", signals.received()}};
  std::string text;
  if (json) {
    Json j = to_json(summary);
    j["command"] = c;
    j["unavailable_sources"] = session.unavailable();
    text = j.dump(2) + "\n";
  } else {
    char* buffer = nullptr;
    std::size_t size = 0;
    std::FILE* memory = open_memstream(&buffer, &size);
    std::string shown;
    for (const std::string& a : command) shown += (shown.empty() ? "" : " ") + a;
    std::fprintf(memory, "\n'%s' %s %d after %.2f s\n", shown.c_str(),
                 end->signal != 0 ? "ended by signal" : "exited with", end->signal != 0 ? end->signal : end->exit_code,
                 ended_s - started_s);
    print_monitor_summary(summary, memory);
    std::fclose(memory);
    text.assign(buffer, size);
    std::free(buffer);
  }
  if (output.empty()) {
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
  } else {
    write_file_atomically(output, text);
  }
  return end->exit_code;
}

}  // namespace plexus::cli
