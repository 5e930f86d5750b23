// The flat parameter layout: sorted names, tied weights once, aligned offsets, contiguous layers,
// and the upcast load of a bf16 checkpoint.
#include "train/param_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/dtype.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "test_util.h"

namespace plexus {
namespace {

TEST(ParamLayout, SortedAlignedTiedOnceLayersContiguous) {
  testing::TempDir dir("param_layout");
  const std::string model = dir.path() + "/m";
  ASSERT_EQ(testing::run_plexus("make-model " + model + " --preset tiny --vocab 300 --dtype bf16").exit_code, 0);
  testing::patch_config(model, Json::object({{"tie_word_embeddings", true}}));
  const ModelConfig c = load_model_config(model);
  const ParamLayout layout = ParamLayout::of(c);
  EXPECT_EQ(layout.find("lm_head.weight") == nullptr, c.tie_word_embeddings);
  ASSERT_NE(layout.find("model.embed_tokens.weight"), nullptr);
  std::int64_t params = 0;
  for (std::size_t i = 0; i < layout.slots().size(); ++i) {
    const ParamSlot& s = layout.slots()[i];
    EXPECT_EQ(s.offset % ParamLayout::kParamAlign, 0) << s.name;
    if (i > 0) {
      EXPECT_LT(layout.slots()[i - 1].name, s.name);
      EXPECT_GE(s.offset, layout.slots()[i - 1].offset + layout.slots()[i - 1].count);
    }
    params += s.count;
  }
  EXPECT_EQ(params, layout.parameters());
  // Every tensor of layer l lies in layer_range(l), and nothing else does.
  for (int l = 0; l < c.num_layers; ++l) {
    const auto [b, e] = layout.layer_range(l);
    for (const ParamSlot& s : layout.slots()) {
      const bool inside = s.offset >= b && s.offset < e;
      EXPECT_EQ(inside, s.layer == l) << s.name << " layer " << l;
    }
  }
  std::int64_t outside = 0;
  for (const auto& [b, e] : layout.non_layer_ranges()) outside += e - b;
  std::int64_t in_layers = 0;
  for (int l = 0; l < c.num_layers; ++l) in_layers += layout.layer_range(l).second - layout.layer_range(l).first;
  EXPECT_EQ(outside + in_layers, layout.total());

  std::vector<float> flat(static_cast<std::size_t>(layout.total()), -1.0f);
  const Checkpoint ck(model);
  load_params(ck, layout, flat);
  const TensorRef t = ck.get("model.layers.1.mlp.up_proj.weight");
  ASSERT_EQ(t.info->dtype, DType::kBF16);
  const ParamSlot& s = layout.at("model.layers.1.mlp.up_proj.weight");
  const auto* raw = static_cast<const std::uint16_t*>(t.data);
  for (std::int64_t i = 0; i < s.count; i += 97) EXPECT_EQ(flat[s.offset + i], bf16_to_f32(raw[i]));
  const ModelTensors w = view_tensors(c, layout, flat.data());
  EXPECT_EQ(w.lm_head == w.embed, c.tie_word_embeddings);
  EXPECT_EQ(w.layers[1].up, flat.data() + s.offset);
  EXPECT_EQ(w.layers[0].q_bias, nullptr);

}

}  // namespace
}  // namespace plexus
