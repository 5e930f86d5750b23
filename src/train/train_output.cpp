// The trained model as a Hugging Face checkpoint in --out, the F32 safetensors reader and writer
// of training (also used by checkpoints), and the --out checks.
#include "train/train_output.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "model/make_model.h"
#include "model/safetensors.h"

namespace plexus {

namespace fs = std::filesystem;

void write_params_safetensors(const std::string& path, const ParamLayout& layout, std::span<const float> params,
                              const std::string& prefix) {
  Json header = Json::object();
  std::uint64_t offset = 0;
  for (const ParamSlot& s : layout.slots()) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(s.count) * sizeof(float);
    header[prefix + s.name] = {{"dtype", "F32"}, {"shape", s.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  AtomicFile out(path);
  const std::uint64_t n = h.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>(static_cast<unsigned char>(n >> (8 * i)));
  out.write(std::string_view(len, 8));
  out.write(h);
  for (const ParamSlot& s : layout.slots()) {  // little-endian f32, as safetensors stores it
    out.write(std::string_view(reinterpret_cast<const char*>(params.data() + s.offset),
                               static_cast<std::size_t>(s.count) * sizeof(float)));
  }
  out.commit();
}

void read_params_safetensors(const std::string& path, const ParamLayout& layout, std::span<float> out,
                             const std::string& prefix) {
  const SafetensorsFile file(path);
  std::fill(out.begin(), out.end(), 0.0f);
  for (const ParamSlot& s : layout.slots()) {
    const TensorInfo* t = file.find(prefix + s.name);
    if (!t) throw InputError(path + ": tensor '" + prefix + s.name + "' is missing: the file is not of this model");
    if (t->dtype_name != "F32" || t->shape != s.shape) {
      throw InputError(path + ": tensor '" + prefix + s.name + "' is " + t->dtype_name + " " + Json(t->shape).dump() +
                       ", expected F32 " + Json(s.shape).dump() + ": the file is not of this model");
    }
    std::memcpy(out.data() + s.offset, file.data(*t), static_cast<std::size_t>(s.count) * sizeof(float));
  }
}

Json model_geometry(const ModelConfig& c) {
  return {{"model_type", c.model_type},
          {"hidden_size", c.hidden_size},
          {"num_hidden_layers", c.num_layers},
          {"num_attention_heads", c.num_heads},
          {"num_key_value_heads", c.num_kv_heads},
          {"head_dim", c.head_dim},
          {"intermediate_size", c.intermediate_size},
          {"vocab_size", c.vocab_size},
          {"tie_word_embeddings", c.tie_word_embeddings}};
}

Json model_fingerprint(const ModelConfig& config, const ParamLayout& layout) {
  Json params = Json::array();
  for (const ParamSlot& s : layout.slots()) params.push_back({s.name, s.shape});
  Json j = model_geometry(config);
  j["rms_norm_eps"] = config.rms_norm_eps;
  j["rope_theta"] = config.rope_theta;
  j["parameters"] = params;
  return j;
}

namespace {

std::string describe_difference(const Json& have, const Json& want) {
  for (auto it = want.begin(); it != want.end(); ++it) {
    if (!have.contains(it.key())) return it.key() + " missing";
    if (have[it.key()] != it.value()) {
      return it.key() + " " + have[it.key()].dump().substr(0, 60) + " instead of " + it.value().dump().substr(0, 60);
    }
  }
  return "a different model";
}

}  // namespace

void check_out_dir(const std::string& out, const ModelConfig& config, bool resume) {
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) {
    throw InputError("--out " + out + " is a file, not a directory: choose a directory");
  }
  const std::string cfg = out + "/config.json";
  if (fs::exists(cfg, ec)) {
    ModelConfig there;
    try {
      there = load_model_config(cfg);
    } catch (const InputError& e) {
      throw InputError("--out " + out + " holds " + cfg + " that is not a model's config (" + e.what() +
                       "): choose another --out");
    }
    const Json a = model_geometry(there), b = model_geometry(config);
    if (a != b) {
      throw InputError("--out " + out + " holds another model (" + cfg + ": " + describe_difference(a, b) +
                       "): choose another --out");
    }
  }
  const std::string ckpts = out + "/checkpoints";
  if (!resume && fs::is_directory(ckpts, ec)) {
    for (const fs::directory_entry& e : fs::directory_iterator(ckpts, ec)) {
      if (e.path().filename().string().rfind("step-", 0) == 0) {
        throw InputError("--out " + out + " holds checkpoints of an earlier run (" + e.path().string() +
                         "): pass --resume to continue it, or choose another --out (nothing was changed)");
      }
    }
  }
}

void copy_model_side_files(const std::string& model_dir, const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(model_dir, ec)) return;
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"}) {
    const std::string from = model_dir + "/" + name;
    if (!fs::is_regular_file(from, ec)) continue;
    std::ifstream in(from, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) throw RuntimeError("cannot read " + from + " to copy it into " + dir);
    write_file_atomically(dir + "/" + name, text.str());
  }
}

void write_trained_model(const std::string& out, const std::string& model_dir, const ModelConfig& config,
                         const ParamLayout& layout, std::span<const float> params) {
  write_params_safetensors(out + "/model.safetensors", layout, params);
  copy_model_side_files(model_dir, out);
  std::error_code ec;
  // A stale index of an earlier sharded model would shadow model.safetensors.
  fs::remove(out + "/model.safetensors.index.json", ec);
  write_file_atomically(out + "/config.json", trained_config_json(model_dir, config).dump(2) + "\n");
}

Json trained_config_json(const std::string& model_dir, const ModelConfig& config) {
  std::error_code ec;
  if (fs::is_directory(model_dir, ec) && fs::is_regular_file(model_dir + "/config.json", ec)) {
    Json cfg = read_json_file(model_dir + "/config.json");
    cfg["torch_dtype"] = "float32";
    return cfg;
  }
  return config_to_json(config, DType::kF32);
}

}  // namespace plexus
