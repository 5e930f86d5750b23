// The quantisation policy: projections only.
#include "model/quant_policy.h"

#include "core/error.h"

namespace plexus {

bool quantised_by_policy(std::string_view name) {
  constexpr std::string_view kSuffixes[] = {
      ".self_attn.q_proj.weight", ".self_attn.k_proj.weight", ".self_attn.v_proj.weight",
      ".self_attn.o_proj.weight", ".mlp.gate_proj.weight",    ".mlp.up_proj.weight",
      ".mlp.down_proj.weight"};
  for (std::string_view s : kSuffixes) {
    if (name.size() > s.size() && name.substr(name.size() - s.size()) == s) return true;
  }
  return false;
}

void check_quantisable(DType t, const std::string& name, std::int64_t cols) {
  const std::int64_t block = dtype_block_elems(t);
  if (cols % block != 0) {
    throw InputError("cannot quantise '" + name + "' to " + std::string(dtype_torch_name(t)) + ": its " +
                     std::to_string(cols) + " columns are not a multiple of the format's block of " +
                     std::to_string(block) + " (use a format with a smaller block, e.g. q8_0, or none)");
  }
}

DType quantize_flag(std::string_view flag, std::string_view value) {
  DType t;
  if (!parse_quant_type(value, &t)) {
    throw InputError(std::string(flag) + ": unknown quantisation '" + std::string(value) + "'; expected " +
                     std::string(kQuantizeChoices));
  }
  return t;
}

}  // namespace plexus
