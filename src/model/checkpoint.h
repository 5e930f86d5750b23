// A Hugging Face checkpoint on disk: one model.safetensors or shards listed by
// model.safetensors.index.json, or one GGUF file, all memory-mapped. Looks tensors up by their
// HF names (a GGUF file's tensors renamed, their shapes in HF order).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <deque>
#include <vector>

#include "core/gguf_file.h"
#include "model/safetensors.h"

namespace plexus {

struct TensorRef {
  const TensorInfo* info = nullptr;
  const void* data = nullptr;     // in the mapped file
  const SafetensorsFile* file = nullptr;  // null for a GGUF checkpoint
  const GgufFile* gguf = nullptr;         // null for a safetensors checkpoint
  const std::string& path() const { return file ? file->path() : gguf->path(); }  // the file holding it
};

class Checkpoint {
 public:
  // Opens DIR/model.safetensors, or the shards named by DIR/model.safetensors.index.json, or
  // DIR itself when it is a GGUF file (tensors with no Hugging Face name, like rope_freqs.weight,
  // are left out). Throws InputError naming the file when something is missing or malformed.
  explicit Checkpoint(const std::string& dir);

  const std::string& dir() const { return dir_; }
  bool contains(const std::string& name) const { return index_.count(name) > 0; }
  // Throws InputError naming the tensor and the checkpoint when absent.
  TensorRef get(const std::string& name) const;
  std::vector<std::string> names() const;
  // The safetensors files (none for a GGUF checkpoint).
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  const GgufFile* gguf() const { return gguf_.get(); }  // null for safetensors
  // Maps every file in now (MappedFile::prefault); returns whether all of them were.
  bool prefault() const;

  // Whether DIR holds a safetensors checkpoint (single file or index), or is a GGUF file.
  static bool exists_in(const std::string& dir);

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unique_ptr<GgufFile> gguf_;
  std::deque<TensorInfo> gguf_infos_;  // a GGUF file's tensors as HF entries (TensorRef::info points here)
  std::map<std::string, TensorRef> index_;
};

}  // namespace plexus
