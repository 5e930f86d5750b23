// A Hugging Face checkpoint on disk: one model.safetensors or shards listed by
// model.safetensors.index.json, all memory-mapped. Looks tensors up by their HF names.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace plexus {

struct TensorRef {
  const TensorInfo* info = nullptr;
  const void* data = nullptr;     // in the mapped file
  const SafetensorsFile* file = nullptr;
};

class Checkpoint {
 public:
  // Opens DIR/model.safetensors, or the shards named by DIR/model.safetensors.index.json.
  // Throws InputError naming the file when something is missing or malformed.
  explicit Checkpoint(const std::string& dir);

  const std::string& dir() const { return dir_; }
  bool contains(const std::string& name) const { return index_.count(name) > 0; }
  // Throws InputError naming the tensor and the checkpoint when absent.
  TensorRef get(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }

  // Whether DIR holds a safetensors checkpoint (single file or index).
  static bool exists_in(const std::string& dir);

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, TensorRef> index_;
};

}  // namespace plexus
