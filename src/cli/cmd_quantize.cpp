// `plexus quantize`: a Hugging Face checkpoint written as a GGUF v3 file for llama.cpp (and plexus),
// each weight matrix in the type a named mix (Q4_K_M, Q8_0, IQ4_XS, ...) gives it.
#include <sys/stat.h>
#include <strings.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/interrupt_guard.h"
#include "cli/progress_line.h"
#include "cli/model_argument.h"
#include "core/args.h"
#include "core/error.h"
#include "model/gguf_export.h"
#include "model/quant_policy.h"

namespace plexus::cli {
namespace {

// What kind of file `mode` (st_mode) is, for messages.
std::string file_kind(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link to nothing";
  return "not a regular file";
}

// The file of IN_DIR that is the same file as `out` (device and inode, symbolic and hard links
// followed), or "" when none is.
std::string input_file_named_by(const std::string& in, const struct stat& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(in, ec)) {
    struct stat st {};
    if (::stat(e.path().c_str(), &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino) return e.path().string();
  }
  return "";
}

// OUT must be a new file or, with --force, a regular file that is none of IN_DIR's (whatever
// names it: the same path, a symbolic or a hard link), in an existing, writable directory; all
// checked before any work. A device, FIFO or socket is never replaced, --force or not.
void check_output(const std::string& in, const std::string& out, bool force) {
  namespace fs = std::filesystem;
  struct stat st {};
  const bool exists = ::stat(out.c_str(), &st) == 0;
  struct stat link {};
  if (!exists && ::lstat(out.c_str(), &link) == 0) {
    throw InputError("OUT '" + out + "' is " + file_kind(link.st_mode) + "; give the name of a new file such as model-q8_0.gguf");
  }
  if (exists && S_ISDIR(st.st_mode)) throw InputError("OUT '" + out + "' is a directory; give a file name such as model-q8_0.gguf");
  if (exists && !S_ISREG(st.st_mode)) {
    throw InputError("OUT '" + out + "' is " + file_kind(st.st_mode) +
                     ", not a regular file: plexus quantize never replaces it (--force or not); give the name of a new file");
  }
  if (exists) {
    const std::string same = input_file_named_by(in, st);
    if (!same.empty()) {
      throw InputError("OUT '" + out + "' is the input's own file '" + same +
                       "': writing it would destroy the model being quantised (--force or not); give another name");
    }
    if (!force) throw InputError("OUT '" + out + "' already exists; pass --force to replace it");
  }
  const fs::path parent = fs::path(out).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError("OUT '" + out + "': directory '" + dir + "' does not exist; create it first");
  if (::access(dir.c_str(), W_OK) != 0) {
    throw InputError("OUT '" + out + "': directory '" + dir + "' is not writable; choose another place");
  }
}

// The --type help: every mix with its one-line description, one wrapped paragraph.
std::string mix_help() {
  std::string s = "llama.cpp's named mix (any case; q4_k = Q4_K_M; the table: docs/cli.md), or F32, F16, BF16 (every matrix in that type)";
  for (const QuantMixInfo& m : quant_mixes()) s += "; " + std::string(m.name) + ": " + std::string(m.description);
  return s;
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  Args args("quantize",
            "Write a Hugging Face checkpoint (config.json + safetensors, tokenizer.json) as one GGUF v3 file\n"
            "that llama.cpp and plexus load. Every weight matrix takes the type llama.cpp's named mix --type\n"
            "gives it (attn_v / ffn_down upgrades by layer, output and embedding types, a fallback for rows\n"
            "that the type's block does not divide: see docs/cli.md); norms and biases are F32.\n"
            "Tensor names, metadata keys and (for llama) the q/k row order are llama.cpp's. The file appears\n"
            "only when complete; SIGINT/SIGTERM stop between tensors and leave nothing (exit 130).");
  add_model_argument(args, "IN_DIR", "Hugging Face model directory");
  args.positional("OUT", "the GGUF file to write, e.g. model-q8_0.gguf")
      .option("--type", "MIX", mix_help(), "Q8_0")
      .option("--name", "NAME", "general.name (default: IN_DIR's directory name)")
      .option("--threads", "N", "quantising threads (0: one per hardware thread)", "0")
      .flag("--force", "replace OUT when it exists");
  if (!args.parse(argc, argv)) return 0;
  const std::string out = args.get("OUT");
  GgufExportOptions o;
  const std::string type = args.get("--type");
  for (const DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    if (strcasecmp(type.c_str(), std::string(dtype_name(t)).c_str()) == 0) o.float_type = t;
  }
  if (!o.float_type) o.mix = quantize_flag("--type", type);
  o.threads = static_cast<int>(args.get_int_in("--threads", 0, 1024));
  if (args.has("--name")) o.name = args.get("--name");
  const std::string in = model_argument(args, ModelNeeds::kWeights, "IN_DIR");
  const std::string given = args.get("IN_DIR");
  if (!args.has("--name") && in != given) o.name = given.substr(given.find('/') + 1);  // an id's name, not its snapshot's
  if (!std::filesystem::is_directory(in)) {
    throw InputError("IN_DIR '" + in + "' is a file, not a model directory: plexus quantize reads a Hugging Face model directory "
                     "(config.json, *.safetensors, tokenizer.json)");
  }
  check_output(in, out, args.get_flag("--force"));

  ProgressLine progress;
  const InterruptGuard guard;
  o.progress = [&progress](std::size_t i, std::size_t n, const std::string& name) {
    if (InterruptGuard::requested()) throw Interrupted("interrupted: nothing was written");
    progress.show("[" + std::to_string(i + 1) + "/" + std::to_string(n) + "] " + name);
  };
  const auto start = std::chrono::steady_clock::now();
  const GgufExportResult r = export_gguf(in, out, o);
  progress.clear();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const std::string& w : r.warnings) std::fprintf(stderr, "plexus quantize: warning: %s\n", w.c_str());
  const std::string_view mix = o.float_type ? dtype_name(*o.float_type) : quant_mix_info(o.mix).name;
  std::printf("wrote %s: %zu tensors (%zu quantised, mix %s), %.1f MB in %.1f s\n", out.c_str(), r.tensors, r.quantised,
              std::string(mix).c_str(), static_cast<double>(r.bytes) / 1e6, s);
  return 0;
}

}  // namespace plexus::cli
