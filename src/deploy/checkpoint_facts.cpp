// A checkpoint's parameter bytes and attention shape, read without plexus's loader.
#include "deploy/checkpoint_facts.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "core/checked.h"
#include "core/error.h"
#include "deploy/escape.h"
#include "model/safetensors.h"

namespace plexus::deploy {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;  // as the loader (model/safetensors.cpp)
constexpr std::int64_t kMaxTotalSize = 1LL << 60;       // 1 EiB: a larger metadata.total_size is no checkpoint's

// The tensors' bytes of one safetensors file, from its header alone (8 bytes of length, the JSON).
std::int64_t header_bytes(const std::string& path, std::size_t* tensors) {
  std::error_code ec;
  const std::uint64_t size = fs::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) throw InputError(one_line(path) + ": cannot read it");
  std::vector<std::uint8_t> bytes(8, 0);
  in.read(reinterpret_cast<char*>(bytes.data()), 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<std::size_t>(i)];
  if (n > kMaxHeaderBytes) throw InputError(one_line(path) + ": header length " + std::to_string(n) + " exceeds 100 MB");
  if (size >= 8 && n <= size - 8) {
    bytes.resize(8 + n);
    in.read(reinterpret_cast<char*>(bytes.data() + 8), static_cast<std::streamsize>(n));
    if (!in) throw InputError(one_line(path) + ": cannot read its header");
  }
  std::uint64_t data_start = 0;
  const std::vector<TensorInfo> infos = parse_safetensors_header(bytes.data(), bytes.size(), size, one_line(path), &data_start);
  std::int64_t total = 0;
  for (const TensorInfo& t : infos) total += static_cast<std::int64_t>(t.end - t.begin);
  *tensors += infos.size();
  return total;
}

WeightBytes headers_of(const std::string& dir, const std::vector<std::string>& files, const std::string& what) {
  WeightBytes w;
  std::size_t tensors = 0;
  for (const std::string& f : files) w.bytes += header_bytes(dir + "/" + f, &tensors);
  w.source = "the headers of " + what + ": " + std::to_string(tensors) + " tensors";
  return w;
}

std::string join(std::initializer_list<const char*> keys) {
  std::string out;
  for (const char* k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

std::string number_text(const char* name, const ConfigNumber& n) {
  // A key as found: "n_layer 2"; a derived number: "head_dim 16 (n_embd 64 / n_head 4)".
  if (n.key.find(' ') != std::string::npos) return std::string(name) + " " + std::to_string(n.value) + " (" + n.key + ")";
  return n.key + " " + std::to_string(n.value);
}

ConfigNumber require(const Json& config, std::initializer_list<const char*> keys, const std::string& what, const std::string& where) {
  if (auto n = config_number(config, keys)) return *n;
  throw InputError(where + " gives no " + what + ": none of " + join(keys) +
                   " (nor under text_config) is a positive integer there; deploy sizes the engine's memory from it");
}

}  // namespace

void require_model_directory(const std::string& model) {
  std::error_code ec;
  if (!fs::is_directory(model, ec)) {
    throw InputError("MODEL " + one_line(model) + " is a file; deploy sizes vLLM, TGI and TEI from a Hugging Face model "
                     "directory (config.json and *.safetensors), the form they load: give that directory (a GGUF file "
                     "deploys with --api-type plexus)");
  }
}

WeightBytes read_weight_bytes(const std::string& model_dir) {
  std::error_code ec;
  const std::string index_path = model_dir + "/model.safetensors.index.json";
  if (fs::exists(index_path, ec)) {
    const Json index = read_json_file(index_path);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      throw InputError(one_line(index_path) + ": missing object field 'weight_map'");
    }
    std::set<std::string> shards;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it.value().is_string() || it.value().get<std::string>().find('/') != std::string::npos) {
        throw InputError(one_line(index_path) + ": weight_map['" + one_line(it.key()) + "'] must name a file of the directory");
      }
      shards.insert(it.value().get<std::string>());
    }
    std::string missing;
    for (const std::string& s : shards) {
      if (missing.empty() && !fs::is_regular_file(model_dir + "/" + s, ec)) missing = s;
    }
    if (missing.empty() && !shards.empty()) {
      return headers_of(model_dir, {shards.begin(), shards.end()},
                        "the " + std::to_string(shards.size()) + " shards that model.safetensors.index.json names");
    }
    const Json* total = index.contains("metadata") && index["metadata"].is_object() && index["metadata"].contains("total_size")
                            ? &index["metadata"]["total_size"]
                            : nullptr;
    if (total && total->is_number_integer() && total->get<std::int64_t>() > 0 && total->get<std::int64_t>() <= kMaxTotalSize) {
      WeightBytes w;
      w.bytes = total->get<std::int64_t>();
      w.source = "metadata.total_size of model.safetensors.index.json (" +
                 (shards.empty() ? std::string("it names no shard") : "shard " + one_line(missing) + " is not here") + ")";
      return w;
    }
    throw InputError(one_line(index_path) + (shards.empty() ? std::string(" names no shard") : " names shard " + one_line(missing) + ", which is not there,") +
                     " and has no metadata.total_size (a positive number of bytes): deploy sizes the weights from the shards' headers or that total");
  }
  if (fs::is_regular_file(model_dir + "/model.safetensors", ec)) return headers_of(model_dir, {"model.safetensors"}, "model.safetensors");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(model_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0 && e.is_regular_file(ec)) files.push_back(name);
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    throw InputError("MODEL " + one_line(model_dir) + " holds no safetensors weights (model.safetensors, model.safetensors.index.json "
                     "or *.safetensors): deploy sizes vLLM, TGI and TEI from the safetensors headers");
  }
  return headers_of(model_dir, files, files.size() == 1 ? files.front() : "every *.safetensors file (" + std::to_string(files.size()) + ")");
}

std::optional<ConfigNumber> config_number(const Json& config, std::initializer_list<const char*> keys) {
  for (const char* scope : {"", "text_config"}) {
    const Json* obj = &config;
    if (*scope) {
      if (!config.is_object() || !config.contains(scope) || !config[scope].is_object()) continue;
      obj = &config[scope];
    }
    if (!obj->is_object()) continue;
    for (const char* key : keys) {
      if (!obj->contains(key)) continue;
      const Json& v = (*obj)[key];
      if (v.is_number_integer() && v.get<std::int64_t>() > 0) {
        return ConfigNumber{v.get<std::int64_t>(), std::string(*scope ? std::string(scope) + "." : "") + key};
      }
    }
  }
  return std::nullopt;
}

std::int64_t AttentionShape::kv_bytes_per_token() const {
  return 2 * layers.value * kv_heads.value * head_dim.value * kKvElementBytes;
}

std::string AttentionShape::text() const {
  return "2 (K, V) × " + number_text(encoder_decoder ? "decoder layers" : "layers", layers) + " × " + number_text("KV heads", kv_heads) +
         " × " + number_text("head_dim", head_dim) + " × " + std::to_string(kKvElementBytes) + " bytes";
}

AttentionShape read_attention_shape(const Json& config, const std::string& where) {
  AttentionShape a;
  a.encoder_decoder = config.is_object() && config.value("is_encoder_decoder", false);
  if (a.encoder_decoder) {
    a.layers = require(config, {"num_decoder_layers", "decoder_layers", "num_hidden_layers", "n_layer", "num_layers", "n_layers"},
                       "number of decoder layers", where);
    a.heads = require(config, {"decoder_attention_heads", "num_attention_heads", "n_head", "num_heads", "n_heads"},
                      "number of decoder attention heads", where);
  } else {
    a.layers = require(config, {"num_hidden_layers", "n_layer", "num_layers", "n_layers"}, "number of layers", where);
    a.heads = require(config, {"num_attention_heads", "n_head", "num_heads", "n_heads"}, "number of attention heads", where);
  }
  if (auto kv = config_number(config, {"num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"})) {
    a.kv_heads = *kv;
  } else if (config.is_object() && config.value("multi_query", false)) {
    a.kv_heads = ConfigNumber{1, "multi_query true: one KV head"};
  } else {
    a.kv_heads = ConfigNumber{a.heads.value, a.heads.key + ", no KV-head key"};
  }
  const std::optional<ConfigNumber> hidden = config_number(config, {"hidden_size", "n_embd", "d_model"});
  if (auto hd = config_number(config, {"head_dim", "d_kv", "kv_channels"})) {
    a.head_dim = *hd;
  } else if (hidden && hidden->value % a.heads.value == 0) {
    a.head_dim = ConfigNumber{hidden->value / a.heads.value, hidden->key + " " + std::to_string(hidden->value) + " / " + a.heads.key + " " +
                                                              std::to_string(a.heads.value)};
  } else if (hidden) {
    throw InputError(where + " gives no head_dim (nor d_kv, kv_channels), and " + hidden->key + " " + std::to_string(hidden->value) +
                     " does not divide by " + a.heads.key + " " + std::to_string(a.heads.value) + ": add head_dim to config.json");
  } else {
    throw InputError(where + " gives no head dimension: none of head_dim, d_kv, kv_channels, nor a hidden size (hidden_size, n_embd, "
                     "d_model) to divide by the heads; deploy sizes the engine's KV cache from it");
  }
  a.hidden = hidden ? *hidden
                    : ConfigNumber{checked_mul(a.heads.value, a.head_dim.value,
                                               where + ": the hidden size " + a.heads.key + " " + std::to_string(a.heads.value) +
                                                   " × " + a.head_dim.key + " " + std::to_string(a.head_dim.value)),
                                   a.heads.key + " × " + a.head_dim.key};
  a.vocab = require(config, {"vocab_size", "n_vocab", "padded_vocab_size"}, "vocabulary size", where);
  return a;
}

std::optional<ConfigNumber> max_positions(const Json& config) {
  return config_number(config, {"max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx", "max_seq_len"});
}

}  // namespace plexus::deploy
