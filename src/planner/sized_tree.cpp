// Builds the sized module hierarchy from parameter names.
#include "planner/sized_tree.h"

#include <algorithm>
#include <map>

#include "model/quant_policy.h"

namespace plexus {

bool is_linear_module(const std::string& module) {
  const std::size_t dot = module.rfind('.');
  const std::string leaf = dot == std::string::npos ? module : module.substr(dot + 1);
  return leaf == "lm_head" || (leaf.size() > 5 && leaf.compare(leaf.size() - 5, 5, "_proj") == 0);
}

std::int64_t block_matrix_bytes(DType t, const std::vector<std::int64_t>& shape) {
  const std::int64_t cols = shape.empty() ? 1 : shape.back();
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows = checked_mul(rows, shape[i], "a tensor's row count");
  const std::int64_t block = dtype_block_elems(t);
  const std::int64_t blocks = (cols + block - 1) / block;
  return checked_mul(rows, checked_mul(blocks, dtype_block_bytes(t), "a row's bytes"), "a tensor's bytes");
}

std::int64_t param_bytes(const ParamInfo& p, WeightDType dtype, bool as_stored) {
  if (p.dtype && dtype_is_block(*p.dtype)) return block_matrix_bytes(*p.dtype, p.shape);
  if (as_stored && p.dtype) {
    return checked_mul(p.numel(), static_cast<std::int64_t>(dtype_size(*p.dtype)), "a tensor's bytes");
  }
  if (const std::optional<DType> b = weight_block_format(dtype); b && quantised_by_policy(p.name)) {
    return block_matrix_bytes(*b, p.shape);
  }
  return bytes_for(p.numel(), weight_bits_other(dtype));
}

int SizedTree::add_node(const std::string& name, int parent) {
  const int id = static_cast<int>(nodes_.size());
  SizedNode n;
  n.name = name;
  n.parent = parent;
  nodes_.push_back(std::move(n));
  index_.emplace(name, id);
  return id;
}

int SizedTree::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

std::int64_t SizedTree::size_of(const std::string& name) const {
  const int i = find(name);
  return i < 0 ? 0 : nodes_[static_cast<std::size_t>(i)].bytes;
}

SizedTree SizedTree::build(const ModuleTree& tree, WeightDType dtype, SizedTreeOptions options) {
  SizedTree t;
  t.dtype_ = dtype;
  t.add_node("", -1);
  // Module node for a dotted path, creating its ancestors in registration order.
  auto module_node = [&t, &options](const std::string& path) {
    int cur = kRoot;
    std::size_t start = 0;
    while (start <= path.size()) {
      std::size_t dot = path.find('.', start);
      if (dot == std::string::npos) dot = path.size();
      const std::string name = path.substr(0, dot);
      int next = t.find(name);
      if (next < 0) {
        for (const auto& [empty, before] : options.empty_modules) {
          if (before != name || t.find(empty) >= 0) continue;
          const int id = t.add_node(empty, cur);
          t.nodes_[static_cast<std::size_t>(cur)].children.push_back(id);
        }
        next = t.add_node(name, cur);
        t.nodes_[static_cast<std::size_t>(cur)].children.push_back(next);
      }
      cur = next;
      start = dot + 1;
    }
    return cur;
  };
  auto add_tensor = [&t](int module, const std::string& name, std::int64_t bytes, bool counted, bool buffer) {
    const int id = t.add_node(name, module);
    SizedNode& n = t.nodes_[static_cast<std::size_t>(id)];
    n.is_tensor = true;
    n.is_buffer = buffer;
    n.counted = counted;
    n.bytes = counted ? bytes : 0;
    n.layer = t.nodes_[static_cast<std::size_t>(module)].layer;
    t.nodes_[static_cast<std::size_t>(module)].tensors.push_back(id);
    if (!counted) return id;
    for (int a = module; a >= 0; a = t.nodes_[static_cast<std::size_t>(a)].parent) {
      t.nodes_[static_cast<std::size_t>(a)].bytes += bytes;
      t.nodes_[static_cast<std::size_t>(a)].counted = true;
    }
    return id;
  };

  std::map<std::string, std::vector<std::string>> ties;  // storage owner -> other names
  const auto& params = tree.params();
  const bool as_stored = tree.quantized();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    const int m = module_node(p.module);
    if (p.layer >= 0) {
      const std::string lp = options.layer_prefix + std::to_string(p.layer);
      const int ln = t.find(lp);
      if (ln >= 0 && !t.nodes_[static_cast<std::size_t>(ln)].no_split) {
        t.nodes_[static_cast<std::size_t>(ln)].no_split = true;
        t.layer_nodes_.push_back(ln);
      }
      // every node from the layer down carries the layer index
      for (int a = m; a >= 0 && t.nodes_[static_cast<std::size_t>(a)].name.size() >= lp.size();
           a = t.nodes_[static_cast<std::size_t>(a)].parent) {
        t.nodes_[static_cast<std::size_t>(a)].layer = p.layer;
      }
    }
    const bool duplicate = p.tied_to.has_value();
    const int id = add_tensor(m, p.name, param_bytes(p, dtype, as_stored), !duplicate, false);
    t.nodes_[static_cast<std::size_t>(id)].param_index = static_cast<int>(i);
    if (duplicate) ties[*p.tied_to].push_back(p.name);
  }
  if (options.rotary_buffer_per_layer) {
    const ModelConfig& c = tree.config();
    const int bits = std::min(32, weight_bits_other(dtype));
    for (int l = 0; l < c.num_layers; ++l) {
      const int m = module_node(ModuleTree::layer_prefix(l) + ".self_attn.rotary_emb");
      t.nodes_[static_cast<std::size_t>(m)].layer = l;
      add_tensor(m, t.nodes_[static_cast<std::size_t>(m)].name + ".inv_freq", bytes_for(c.head_dim / 2, bits), true,
                 true);
    }
  }
  for (auto& [owner, others] : ties) {
    std::vector<std::string> g = others;
    g.push_back(owner);
    std::sort(g.begin(), g.end());
    t.tied_groups_.push_back(std::move(g));
  }
  return t;
}

}  // namespace plexus
