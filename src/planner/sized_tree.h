// The module hierarchy behind a ModuleTree's parameter names ("" → model → model.layers →
// model.layers.3 → …), with the bytes each module takes in a given weight format. Tied
// parameters are counted once, at their first name, as torch's deduplicated named_parameters.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/module_tree.h"
#include "planner/weight_dtype.h"

namespace plexus {

struct SizedNode {
  std::string name;            // full dotted path; "" for the root
  int parent = -1;
  std::vector<int> children;   // child modules, in registration order
  std::vector<int> tensors;    // direct parameters and buffers, in order
  bool is_tensor = false;      // a parameter or buffer, not a module
  bool is_buffer = false;
  bool no_split = false;       // a decoder layer: never split across devices
  bool counted = false;        // holds at least one tensor that is not a duplicate (tied) name
  std::int64_t bytes = 0;      // sum over the non-duplicate tensors below
  int layer = -1;              // decoder layer index, for nodes inside model.layers.N
  int param_index = -1;        // index into ModuleTree::params(), for parameters
};

struct SizedTreeOptions {
  // Older transformers kept a rotary embedding with an `inv_freq` float32 buffer in every
  // attention module; current ones keep none that a device map sees. Off by default.
  bool rotary_buffer_per_layer = false;
  // The decoder layers' module names: this + N (GPT2LMHeadModel's Hugging Face tree: "transformer.h.").
  std::string layer_prefix = "model.layers.";
  // Modules without parameters that accelerate still places (GPT-2's "transformer.drop"), each
  // registered just before the module named second.
  std::vector<std::pair<std::string, std::string>> empty_modules;
};

// Bytes one parameter takes: a parameter stored in a block format (a quantised checkpoint, or
// ModuleTree::quantize_as) takes its blocks' bytes, whatever `dtype`; in a tree holding any such
// parameter every parameter with a recorded dtype takes its stored bytes ("as stored"). Otherwise
// by `dtype`: int8 / int4 size the policy's projections as q8_0 / q4_k blocks (scales included;
// a row of cols not a multiple of the block as padded to whole blocks — runs refuse those), every
// other tensor at 16 bits; float formats at their width.
std::int64_t param_bytes(const ParamInfo& p, WeightDType dtype, bool as_stored);
// Bytes of a (rows, cols) matrix (or a vector, one row) in block format `t`, whole blocks per row.
std::int64_t block_matrix_bytes(DType t, const std::vector<std::int64_t>& shape);

class SizedTree {
 public:
  // Sizes every parameter by param_bytes (as stored when tree.quantized()).
  static SizedTree build(const ModuleTree& tree, WeightDType dtype, SizedTreeOptions options = {});

  const std::vector<SizedNode>& nodes() const { return nodes_; }
  const SizedNode& node(int i) const { return nodes_[static_cast<std::size_t>(i)]; }
  static constexpr int kRoot = 0;
  int find(const std::string& name) const;  // -1 when absent
  // accelerate's module_sizes[name]: 0 for names holding no counted tensor.
  std::int64_t size_of(const std::string& name) const;
  std::int64_t total_bytes() const { return nodes_[0].bytes; }
  // Groups of parameter names sharing storage, each sorted (as accelerate's find_tied_parameters).
  const std::vector<std::vector<std::string>>& tied_groups() const { return tied_groups_; }
  // Decoder layer nodes in layer order.
  const std::vector<int>& layer_nodes() const { return layer_nodes_; }
  WeightDType dtype() const { return dtype_; }

 private:
  int add_node(const std::string& name, int parent);
  std::vector<SizedNode> nodes_;
  std::unordered_map<std::string, int> index_;
  std::vector<std::vector<std::string>> tied_groups_;
  std::vector<int> layer_nodes_;
  WeightDType dtype_ = WeightDType::kF32;
};

// Whether a module is a linear layer (…_proj or lm_head), for quantized formats.
bool is_linear_module(const std::string& module);

}  // namespace plexus
