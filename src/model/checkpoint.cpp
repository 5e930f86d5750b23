// Single-file and sharded safetensors checkpoints, and GGUF files.
#include "model/checkpoint.h"

#include <cstdio>

#include <set>

#include "core/error.h"
#include "core/json.h"
#include "core/mmap_file.h"
#include "model/config.h"
#include "model/gguf_model.h"
#include "kernels/ref/dequantize_iq.h"

namespace plexus {

bool Checkpoint::exists_in(const std::string& dir) {
  if (is_gguf_model_path(dir)) return true;
  return file_exists(dir + "/model.safetensors") || file_exists(dir + "/model.safetensors.index.json");
}

Checkpoint::Checkpoint(const std::string& dir) : dir_(dir) {
  require_model_path(dir);
  if (is_gguf_model_path(dir)) {
    gguf_ = std::make_unique<GgufFile>(dir);
    const ModelConfig config = gguf_model_config(*gguf_);
    std::vector<std::pair<std::string, std::uint32_t>> codebook;  // (HF name, ggml type) of codebook-type tensors
    for (const GgufTensor& g : gguf_->tensors()) {
      for (const GgufHfTensor& h : gguf_hf_tensors(g, config, dir)) {
        if (index_.count(h.hf)) throw InputError(dir + ": tensors '" + g.name + "' and another one both map to '" + h.hf + "'");
        TensorInfo& t = gguf_infos_.emplace_back();
        t.name = h.hf;
        t.dtype_name = ggml_type_name(g.ggml_type);
        t.dtype = g.dtype;
        t.dtype_supported = g.supported;
        t.shape = h.shape;
        t.begin = g.offset + h.offset;
        t.end = t.begin + h.bytes;
        index_[h.hf] = TensorRef{&t, static_cast<const std::uint8_t*>(gguf_->data(g)) + h.offset, nullptr, gguf_.get()};
        IqType iq;
        if (iq_type_of_code(g.ggml_type, &iq)) codebook.emplace_back(h.hf, g.ggml_type);
      }
    }
    convert_codebook_tensors(codebook);
    return;
  }
  const std::string single = dir + "/model.safetensors";
  const std::string index_path = dir + "/model.safetensors.index.json";
  if (file_exists(index_path)) {
    const Json idx = read_json_file(index_path);
    if (!idx.is_object() || !idx.contains("weight_map") || !idx["weight_map"].is_object()) {
      throw InputError(index_path + ": missing object field 'weight_map'");
    }
    std::map<std::string, std::size_t> shard_of_file;
    std::map<std::string, std::string> wanted;  // tensor -> shard file name
    for (auto it = idx["weight_map"].begin(); it != idx["weight_map"].end(); ++it) {
      if (!it.value().is_string()) throw InputError(index_path + ": weight_map['" + it.key() + "'] must be a file name");
      const std::string shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos || shard == "..") {
        throw InputError(index_path + ": weight_map['" + it.key() + "'] names '" + shard + "', outside the model directory");
      }
      wanted[it.key()] = shard;
      if (!shard_of_file.count(shard)) {
        const std::string path = dir + "/" + shard;
        if (!file_exists(path)) throw InputError(index_path + ": shard '" + shard + "' (for '" + it.key() + "') does not exist");
        shard_of_file[shard] = files_.size();
        files_.push_back(std::make_unique<SafetensorsFile>(path));
      }
    }
    for (const auto& [name, shard] : wanted) {
      const SafetensorsFile& f = *files_[shard_of_file[shard]];
      const TensorInfo* t = f.find(name);
      if (!t) throw InputError(index_path + ": tensor '" + name + "' is listed in '" + shard + "' but that file does not hold it");
      index_[name] = TensorRef{t, f.data(*t), &f};
    }
  } else if (file_exists(single)) {
    files_.push_back(std::make_unique<SafetensorsFile>(single));
    const SafetensorsFile& f = *files_.back();
    for (const TensorInfo& t : f.tensors()) index_[t.name] = TensorRef{&t, f.data(t), &f};
  } else {
    throw InputError("'" + dir + "' holds no weights: expected model.safetensors or model.safetensors.index.json");
  }
  adopt_gpt2_layout();
  select_language_model();
}

void Checkpoint::select_language_model() {
  // Hugging Face's layouts of a vision-language model (Gemma3ForConditionalGeneration): the
  // language model under language_model.model.* and language_model.lm_head.* (or, newer,
  // model.language_model.* beside a top-level lm_head.*), the vision tower and projector beside it.
  static constexpr std::pair<std::string_view, std::string_view> kRenames[] = {
      {"language_model.model.", "model."}, {"language_model.lm_head.", "lm_head."}, {"model.language_model.", "model."}};
  static constexpr std::string_view kVision[] = {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                                                 "model.multi_modal_projector."};
  bool nested = false;
  for (const auto& [name, ref] : index_) {
    for (const auto& [from, to] : kRenames) nested = nested || name.starts_with(from);
  }
  if (!nested) return;
  std::map<std::string, TensorRef> renamed;
  std::int64_t skipped = 0;
  for (const auto& [name, ref] : index_) {
    bool vision = false;
    for (const std::string_view v : kVision) vision = vision || name.starts_with(v);
    if (vision) {
      ++skipped;
      continue;
    }
    std::string to_name = name;
    for (const auto& [from, to] : kRenames) {
      if (name.starts_with(from)) {
        to_name = std::string(to) + name.substr(from.size());
        break;
      }
    }
    if (renamed.count(to_name)) throw InputError(dir_ + ": tensors '" + name + "' and another one both stand for '" + to_name + "'");
    renamed[to_name] = ref;
  }
  index_ = std::move(renamed);
  std::fprintf(stderr, "note: %s: a vision-language checkpoint: running its language model; %lld vision tensor(s) skipped\n",
               dir_.c_str(), static_cast<long long>(skipped));
}

bool Checkpoint::prefault() const {
  bool all = true;
  for (const auto& f : files_) all = f->prefault() && all;
  if (gguf_) all = gguf_->prefault() && all;
  return all;
}

TensorRef Checkpoint::get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw InputError(dir_ + ": checkpoint has no tensor '" + name + "'");
  return it->second;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [n, r] : index_) out.push_back(n);
  return out;
}

}  // namespace plexus
