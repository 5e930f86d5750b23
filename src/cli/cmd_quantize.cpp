// `plexus quantize`: a Hugging Face checkpoint written as a GGUF v3 file for llama.cpp (and plexus),
// the linear projections quantised to Q8_0, Q4_0 or Q4_K.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/interrupt_guard.h"
#include "cli/model_argument.h"
#include "core/args.h"
#include "core/error.h"
#include "model/gguf_export.h"

namespace plexus::cli {
namespace {

// OUT must be a file name in an existing, writable directory (checked before any work).
void check_output(const std::string& out, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(out, ec)) throw InputError("OUT '" + out + "' is a directory; give a file name such as model-q8_0.gguf");
  if (fs::exists(out, ec) && !force) throw InputError("OUT '" + out + "' already exists; pass --force to replace it");
  const fs::path parent = fs::path(out).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  if (!fs::is_directory(dir, ec)) throw InputError("OUT '" + out + "': directory '" + dir + "' does not exist; create it first");
  if (::access(dir.c_str(), W_OK) != 0) {
    throw InputError("OUT '" + out + "': directory '" + dir + "' is not writable; choose another place");
  }
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  Args args("quantize",
            "Write a Hugging Face checkpoint (config.json + safetensors, tokenizer.json) as one GGUF v3 file\n"
            "that llama.cpp and plexus load. The linear projections (q/k/v/o, gate/up/down) are quantised\n"
            "to --type; the embedding and lm_head keep the checkpoint's dtype, norms and biases are F32.\n"
            "Tensor names, metadata keys and (for llama) the q/k row order are llama.cpp's. The file appears\n"
            "only when complete; SIGINT/SIGTERM stop between tensors and leave nothing (exit 130).");
  add_model_argument(args, "IN_DIR", "Hugging Face model directory");
  args.positional("OUT", "the GGUF file to write, e.g. model-q8_0.gguf")
      .option("--type", "TYPE", "q8_0 | q4_0 | q4_k: the projections' block format", "q8_0")
      .option("--name", "NAME", "general.name (default: IN_DIR's directory name)")
      .option("--threads", "N", "quantising threads (0: one per hardware thread)", "0")
      .flag("--force", "replace OUT when it exists");
  if (!args.parse(argc, argv)) return 0;
  const std::string out = args.get("OUT");
  GgufExportOptions o;
  const std::string type = args.get("--type");
  if (!parse_quant_type(type, &o.type)) throw InputError("--type: unknown type '" + type + "' (use q8_0, q4_0 or q4_k)");
  o.threads = static_cast<int>(args.get_int_in("--threads", 0, 1024));
  if (args.has("--name")) o.name = args.get("--name");
  const std::string in = model_argument(args, ModelNeeds::kWeights, "IN_DIR");
  const std::string given = args.get("IN_DIR");
  if (!args.has("--name") && in != given) o.name = given.substr(given.find('/') + 1);  // an id's name, not its snapshot's
  check_output(out, args.get_flag("--force"));

  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const InterruptGuard guard;
  o.progress = [tty](std::size_t i, std::size_t n, const std::string& name) {
    if (InterruptGuard::requested()) throw Interrupted("interrupted: nothing was written");
    if (tty) std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", i + 1, n, name.c_str());
  };
  const auto start = std::chrono::steady_clock::now();
  GgufExportResult r;
  try {
    r = export_gguf(in, out, o);
  } catch (...) {
    if (tty) std::fprintf(stderr, "\r\033[K");
    throw;
  }
  if (tty) std::fprintf(stderr, "\r\033[K");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const std::string& w : r.warnings) std::fprintf(stderr, "plexus quantize: warning: %s\n", w.c_str());
  std::printf("wrote %s: %zu tensors (%zu projections %s), %.1f MB in %.1f s\n", out.c_str(), r.tensors, r.quantised,
              std::string(dtype_name(o.type)).c_str(), static_cast<double>(r.bytes) / 1e6, s);
  return 0;
}

}  // namespace plexus::cli
