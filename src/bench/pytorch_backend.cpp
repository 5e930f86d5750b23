// hf_runner.py's arguments from the configuration, after checking python3 can import what it needs.
#include "bench/pytorch_backend.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "monitor/child_process.h"

namespace plexus::bench {

namespace {

// The modules hf_runner.py imports that `python3` lacks (one line, space-separated).
std::string missing_modules(const std::string& python) {
  char path[] = "/tmp/plexus-probe-XXXXXX";
  const int fd = ::mkostemp(path, O_CLOEXEC);
  if (fd < 0) throw RuntimeError(std::string("cannot make a temporary file in /tmp: ") + std::strerror(errno));
  ::unlink(path);
  ChildProcess probe({python, "-c",
                      "import importlib.util\n"
                      "print(' '.join(m for m in ('torch', 'transformers') if importlib.util.find_spec(m) is None))"},
                     fd);
  probe.release();
  const ChildExit e = probe.wait();
  std::string text(4096, '\0');
  ::lseek(fd, 0, SEEK_SET);
  const ssize_t n = ::read(fd, text.data(), text.size());
  ::close(fd);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (e.exit_code != 0) return "(" + python + " -c failed with exit " + std::to_string(e.exit_code) + ")";
  return text;
}

std::string joined(const std::vector<long long>& ids) {
  std::string s;
  for (long long id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

}  // namespace

std::string hf_runner_path() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("PLEXUS_HF_RUNNER"); env != nullptr && *env != '\0') {
    if (!fs::is_regular_file(env)) throw InputError(std::string("PLEXUS_HF_RUNNER: '") + env + "' is not a file");
    return env;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "scripts" / "hf_runner.py");
  candidates.push_back(fs::path(PLEXUS_SCRIPTS_DIR) / "hf_runner.py");
  std::string looked;
  for (const fs::path& c : candidates) {
    if (fs::is_regular_file(c)) return c.string();
    looked += (looked.empty() ? "" : ", ") + c.string();
  }
  throw InputError("backend.type pytorch: scripts/hf_runner.py not found (looked at " + looked +
                   "); set PLEXUS_HF_RUNNER to its path");
}

std::vector<std::string> pytorch_command(const BenchConfig& c, const std::string& config_file) {
  const std::string where = where_in_file(c, config_file, "backend.type");
  std::string python;
  try {
    python = resolve_command("python3");
  } catch (const InputError& e) {
    throw InputError(where + "backend.type pytorch runs a transformers script with python3, and " + e.what() +
                     ": install python3 with torch and transformers, or use backend.type plexus");
  }
  const std::string missing = missing_modules(python);
  if (!missing.empty()) {
    throw InputError(where + "backend.type pytorch needs python3 with torch and transformers; " + python + " lacks: " +
                     missing + " (pip install torch transformers accelerate), or use backend.type plexus");
  }
  const ScenarioConfig& s = c.scenario;
  if (!s.prompts_ids.empty()) {
    throw InputError(where_in_file(c, config_file, "scenario.prompts_ids") +
                     "scenario.prompts_ids: backend.type pytorch takes text prompts (scenario.prompts or scenario.dataset)");
  }
  std::vector<std::string> argv{python, hf_runner_path(), "--model", c.model, "--device-map", c.backend.strategy,
                                "--torch-dtype", c.backend.torch_dtype.value_or("auto")};
  if (c.revision) argv.insert(argv.end(), {"--revision", *c.revision});
  if (!c.backend.device_ids.empty()) argv.insert(argv.end(), {"--device-ids", joined(c.backend.device_ids)});
  if (!c.backend.max_memory.empty()) {
    std::string text;
    for (const auto& [dev, size] : c.backend.max_memory) text += (text.empty() ? "" : ",") + dev + "=" + size;
    argv.insert(argv.end(), {"--max-memory", text});
  }
  std::ostringstream temperature;
  temperature << s.temperature;
  argv.insert(argv.end(), {"--max-new-tokens", std::to_string(s.max_new_tokens), "--batch-size", std::to_string(s.batch_size),
                           "--num-samples", std::to_string(s.num_samples), "--warmup-samples", std::to_string(s.warmup_samples),
                           "--seed", std::to_string(s.seed), "--temperature", temperature.str()});
  if (s.ignore_eos) argv.push_back("--ignore-eos");
  if (!s.dataset.empty()) argv.insert(argv.end(), {"--dataset", s.dataset});
  for (const std::string& p : s.prompts) argv.insert(argv.end(), {"--prompt", p});
  return argv;
}

}  // namespace plexus::bench
