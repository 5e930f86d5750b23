// `plexus make-model`: a random-weight checkpoint in Hugging Face's format.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/interrupt_guard.h"
#include "cli/progress_line.h"
#include "core/args.h"
#include "core/error.h"
#include "core/mmap_file.h"
#include "bench/model_maker.h"
#include "model/make_model.h"
#include "tokenizer/tokenizer.h"

namespace plexus::cli {

int cmd_make_model(int argc, char** argv) {
  Args args("make-model",
            "Write a random-weight Hugging Face checkpoint (config.json + model.safetensors) for tests,\n"
            "demos and benchmarks. `small` has the shape of a 135M-parameter SmolLM (hidden 576, 30 layers,\n"
            "9 heads, 3 KV heads, intermediate 1536, vocab 32000, tied embeddings); `tiny` has hidden 64,\n"
            "4 layers, 4 heads, 2 KV heads, intermediate 176, vocab 32000. `llama-3.2-1b` (1.24B parameters)\n"
            "and `llama-3.1-8b` (8.03B) have Meta's shapes, rope scaling and token ids, for benchmarks; their\n"
            "weights are written by several threads (--threads) at disk speed. `mixtral-8x7b` (46.7B, 12.9B\n"
            "read per token) and `qwen3-30b-a3b` (30.5B, 3.35B per token) have the published mixtures of\n"
            "experts' shapes, `gpt-oss-20b` (20.9B) OpenAI's (MXFP4 experts, as its checkpoint); `moe-cpu-bench`\n"
            "(2.61B, 0.49B per token) is a Qwen3-MoE that fits a CPU box: hidden 1024, 24 layers, 16 heads,\n"
            "4 KV heads, 64 experts of width 512, 8 per token, vocab 32000.");
  args.positional("OUT", "output directory (created if missing)")
      .option("--preset", "NAME", "tiny | small | llama-3.2-1b | llama-3.1-8b | mixtral-8x7b | qwen3-30b-a3b | gpt-oss-20b | moe-cpu-bench | phi-3.5-mini | gemma-2-2b | gemma-3-1b | gpt2", "tiny")
      .option("--arch", "ARCH", "llama | qwen2 | qwen3 | mistral | mixtral | qwen3-moe | gpt-oss | phi3 | gemma2 | gemma3 | gpt2", "llama")
      .option("--dtype", "DTYPE", "f32 | bf16 | f16", "bf16")
      .option("--expert-dtype", "DTYPE",
              "gpt-oss's experts: mxfp4 (as OpenAI's checkpoints store them: NAME_blocks + NAME_scales, uint8) or the --dtype "
              "(default: mxfp4 for --preset gpt-oss-20b, the --dtype otherwise)")
      .option("--seed", "N", "random seed", "0")
      .option("--std", "X", "standard deviation of the random weight matrices", "0.02")
      .option("--vocab", "N", "vocabulary size (default: the preset's, or the tokenizer's when larger)")
      .option("--shards", "N", "write N shards + model.safetensors.index.json", "1")
      .option("--threads", "N", "threads generating the real-shape presets' weights (0: one per hardware thread)", "0")
      .option("--tokenizer", "DIR", "copy DIR's tokenizer.json (+ tokenizer_config.json) into the model")
      .flag("--config-only", "write OUT/config.json alone (no weights): for `plexus estimate` and `plan` of a real shape")
      .flag("--force", "overwrite a model already in OUT");
  if (!args.parse(argc, argv)) return 0;
  const std::string out = args.get("OUT");
  MakeModelOptions o;
  o.preset = args.get("--preset");
  const std::string arch = args.get("--arch");
  if (arch == "llama") o.arch = Arch::kLlama;
  else if (arch == "qwen2") o.arch = Arch::kQwen2;
  else if (arch == "qwen3") o.arch = Arch::kQwen3;
  else if (arch == "mistral") o.arch = Arch::kMistral;
  else if (arch == "mixtral") o.arch = Arch::kMixtral;
  else if (arch == "qwen3-moe" || arch == "qwen3_moe") o.arch = Arch::kQwen3Moe;
  else if (arch == "gpt-oss" || arch == "gpt_oss") o.arch = Arch::kGptOss;
  else if (arch == "phi3") o.arch = Arch::kPhi3;
  else if (arch == "gemma2") o.arch = Arch::kGemma2;
  else if (arch == "gemma3") o.arch = Arch::kGemma3;
  else if (arch == "gpt2") o.arch = Arch::kGpt2;
  else throw InputError("--arch: unknown architecture '" + arch + "' (use llama, qwen2, qwen3, mistral, mixtral, qwen3-moe, gpt-oss, phi3, gemma2, gemma3 or gpt2)");
  // A real-shape preset fixes its architecture: --arch left out means that one.
  const std::optional<Arch> own = preset_arch(o.preset);
  if (own && !args.given("--arch")) o.arch = *own;
  const std::string arch_shown = own && !args.given("--arch") ? std::string(arch_name(*own)) : arch;
  const std::string dt = args.get("--dtype");
  if (!parse_dtype(dt, &o.dtype)) throw InputError("--dtype: unknown dtype '" + dt + "' (use f32, bf16 or f16)");
  if (args.has("--expert-dtype")) {
    const std::string ed = args.get("--expert-dtype");
    DType as_dtype;
    if (ed == "mxfp4" || ed == "MXFP4") {
      o.mxfp4_experts = true;
    } else if (!parse_dtype(ed, &as_dtype) || as_dtype != o.dtype) {
      throw InputError("--expert-dtype: '" + ed + "' is neither mxfp4 nor the --dtype (" + dt +
                       "): gpt-oss's experts are written as MXFP4 or in the checkpoint's dtype");
    }
    if (o.arch != Arch::kGptOss) {
      throw InputError("--expert-dtype is for gpt-oss (--arch gpt-oss or --preset gpt-oss-20b); this is " + arch_shown);
    }
  } else {
    o.mxfp4_experts = o.preset == "gpt-oss-20b";  // as OpenAI's checkpoint
  }
  const long long seed = args.get_int("--seed");
  if (seed < 0) throw InputError("--seed must be >= 0");
  o.seed = static_cast<std::uint64_t>(seed);
  o.std = args.get_double("--std");
  if (!(o.std > 0 && o.std < 100)) throw InputError("--std must be in (0, 100)");
  const long long shards = args.get_int("--shards");
  if (shards < 1 || shards > 1000) throw InputError("--shards must be between 1 and 1000");
  o.shards = static_cast<int>(shards);
  const long long threads = args.get_int("--threads");
  if (threads < 0 || threads > 1024) throw InputError("--threads must be between 0 and 1024, got " + std::to_string(threads));
  o.threads = static_cast<int>(threads);
  if (args.has("--vocab")) {
    o.vocab_size = args.get_int("--vocab");
    if (o.vocab_size < 2) throw InputError("--vocab must be at least 2");
  }
  o.config_only = args.get_flag("--config-only");
  if (!args.get_flag("--force") && (file_exists(out + "/config.json") || file_exists(out + "/model.safetensors"))) {
    throw InputError("'" + out + "' already holds a model; pass --force to overwrite it");
  }

  const std::string tok_dir = args.has("--tokenizer") ? args.get("--tokenizer") : std::string();
  // SIGINT / SIGTERM stop between tensors: complete files stay, no temporary file is left (exit 130).
  const InterruptGuard guard;
  o.stop_requested = [] { return InterruptGuard::requested(); };
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  // On a terminal, a progress line on stderr (the small presets take seconds, the real shapes
  // minutes); otherwise only the final line.
  ProgressLine progress;
  double shown = -1;
  if (progress.on_terminal()) {
    o.progress = [&](std::int64_t done, std::int64_t total) {
      const double now = seconds();
      if (now - shown < 0.1 && done < total) return;
      shown = now;
      char line[160];
      std::snprintf(line, sizeof line, "make-model: %3.0f%% (%.1fM of %.1fM parameters, %.1f s)",
                    total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
                    static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6, now);
      progress.show(line);
    };
  }
  const std::int64_t n = make_model_with_tokenizer(out, o, tok_dir);
  if (o.config_only) {
    std::printf("wrote %s/config.json: %s %s, %.1fM parameters (no weights)\n", out.c_str(), o.preset.c_str(),
                arch_shown.c_str(), static_cast<double>(n) / 1e6);
    return 0;
  }
  progress.clear();
  const double s = seconds();
  double gb = 0;  // the weights' files as written (MXFP4 experts: 17 bytes a block of 32)
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(out, ec)) {
    const std::string name = e.path().filename().string();
    if (name == "model.safetensors" || (name.starts_with("model-") && name.ends_with(".safetensors"))) {
      gb += static_cast<double>(e.file_size(ec)) / 1e9;
    }
  }
  std::printf("wrote %s: %s %s %s%s, %.1fM parameters, seed %llu%s; %.2f GB in %.1f s (%.2f GB/s)\n", out.c_str(),
              o.preset.c_str(), arch_shown.c_str(), dt.c_str(), o.mxfp4_experts ? " (MXFP4 experts)" : "", static_cast<double>(n) / 1e6,
              static_cast<unsigned long long>(o.seed), tok_dir.empty() ? "" : ", with tokenizer", gb, s, s > 0 ? gb / s : 0.0);
  return 0;
}

}  // namespace plexus::cli
