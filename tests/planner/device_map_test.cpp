// DeviceMap as a value: lookup, JSON, expansion, accelerate's clean-up, custom-map validation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "planner/accelerate_planner.h"
#include "planner/planner.h"
#include "test_models.h"

namespace plexus {
namespace {

using testing::tiny_llama;
using testing::qwen2_05b;

std::string error_of(const ModuleTree& t, const Json& map, const PlanRequest& r) {
  try {
    plan_from_device_map(t, DeviceMap::from_json(map, "map.json"), r);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

PlanRequest two_devices() {
  PlanRequest r;
  r.budgets = parse_max_memory("0=1GB,1=1GB,cpu=1GB");
  r.dtype = WeightDType::kF32;
  return r;
}

TEST(DeviceMap, LongestDottedPrefixWins) {
  DeviceMap m = DeviceMap::from_json(Json{{"model", 0}, {"model.layers.1", "cpu"}, {"lm_head", "disk"}}, "t");
  EXPECT_EQ(*m.device_of("model.layers.1.mlp.up_proj.weight"), DeviceId::cpu());
  EXPECT_EQ(*m.device_of("model.layers.10.mlp.up_proj.weight"), DeviceId::accelerator(0));
  EXPECT_EQ(*m.device_of("lm_head.weight"), DeviceId::disk());
  EXPECT_FALSE(m.device_of("lm_headx.weight").has_value());
  EXPECT_TRUE(prefix_covers("", "anything"));
  EXPECT_FALSE(prefix_covers("model.layers.1", "model.layers.10"));
  EXPECT_EQ(DeviceMap::from_json(m.to_json(), "t"), m);
  EXPECT_THROW(DeviceMap::from_json(Json::array(), "t"), InputError);
  EXPECT_THROW(DeviceMap::from_json(Json{{"model", "gpu"}}, "t"), InputError);
}

TEST(DeviceMap, CleanGroupsModulesOnOneDevice) {
  DeviceMap m;
  m.set("model.embed_tokens", DeviceId::accelerator(0));
  m.set("model.layers.0", DeviceId::accelerator(0));
  m.set("model.layers.1", DeviceId::accelerator(1));
  m.set("model.norm", DeviceId::accelerator(1));
  m.set("lm_head", DeviceId::accelerator(1));
  EXPECT_EQ(accelerate_clean_device_map(m), m);
  m.set("model.layers.1", DeviceId::accelerator(0));
  const DeviceMap c = accelerate_clean_device_map(m);
  EXPECT_EQ(c.to_json(), (Json{{"model.embed_tokens", 0}, {"model.layers", 0}, {"model.norm", 1}, {"lm_head", 1}}));
  DeviceMap all;
  all.set("model", DeviceId::cpu());
  all.set("lm_head", DeviceId::cpu());
  EXPECT_EQ(accelerate_clean_device_map(all).to_json(), (Json{{"", "cpu"}}));
}

TEST(DeviceMap, ExpandsTiedParametersUnderBothNames) {
  const ModuleTree t = qwen2_05b();
  DeviceMap m = DeviceMap::from_json(Json{{"model", 0}, {"lm_head", 1}}, "t");
  const auto placement = expand_placement(m, t);
  ASSERT_EQ(placement.size(), t.params().size());
  EXPECT_EQ(placement.front().first, "model.embed_tokens.weight");
  EXPECT_EQ(placement.back().first, "lm_head.weight");
  EXPECT_EQ(placement.back().second, DeviceId::accelerator(1));
}

TEST(CustomDeviceMap, AcceptsAValidMapAndReportsIt) {
  const ModuleTree t = tiny_llama();
  const Json map{{"model.embed_tokens", 0}, {"model.layers.0", 0}, {"model.layers.1", 0},
                 {"model.layers.2", 1},     {"model.layers.3", 1}, {"model.norm", 1},
                 {"lm_head", "cpu"}};
  const Plan p = plan_from_device_map(t, DeviceMap::from_json(map, "m"), two_devices());
  EXPECT_TRUE(p.custom);
  ASSERT_EQ(p.devices.size(), 3u);
  EXPECT_EQ(p.devices[0].layers, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.devices[1].layers, (std::vector<int>{2, 3}));
  EXPECT_EQ(p.devices[2].weights_bytes, 32000 * 64 * 4);
  std::int64_t sum = 0;
  for (const auto& d : p.devices) sum += d.weights_bytes;
  EXPECT_EQ(sum, p.model_bytes);
}

TEST(CustomDeviceMap, SaysWhatIsWrong) {
  const ModuleTree t = tiny_llama();
  const PlanRequest r = two_devices();
  EXPECT_NE(error_of(t, Json{{"model", 0}}, r).find("lm_head.weight"), std::string::npos);
  EXPECT_NE(error_of(t, Json{{"", 0}, {"lm_head", 1}}, r).find("more than once"), std::string::npos);
  EXPECT_NE(error_of(t, Json{{"", 0}, {"model.layers.9", 1}}, r).find("model.layers.9"), std::string::npos);
  EXPECT_NE(error_of(t, Json{{"", 5}}, r).find("device 5"), std::string::npos);
  EXPECT_NE(error_of(t, Json{{"model", 0}, {"lm_head", 1}, {"model.layers.2.mlp", 1}}, r).find("more than once"),
            std::string::npos);
  EXPECT_NE(error_of(t, Json{{"model.embed_tokens", 0}, {"model.layers", 0}, {"model.norm", 0}, {"lm_head", 0},
                             {"model.layers.1.mlp", 1}},
                     r)
                .find("more than once"),
            std::string::npos);
  Json split{{"model.embed_tokens", 0}, {"model.layers.0", 0}, {"model.layers.1.self_attn", 0},
             {"model.layers.1.mlp", 1}, {"model.layers.1.input_layernorm", 1},
             {"model.layers.1.post_attention_layernorm", 1}, {"model.layers.2", 1}, {"model.layers.3", 1},
             {"model.norm", 1}, {"lm_head", 1}};
  EXPECT_NE(error_of(t, split, r).find("splits decoder layer 1"), std::string::npos);
  PlanRequest small = r;
  small.budgets = parse_max_memory("0=1MB,1=1GB");
  EXPECT_NE(error_of(t, Json{{"", 0}}, small).find("budget"), std::string::npos);
  EXPECT_NE(error_of(t, Json{{"", "disk"}}, r).find("--offload-disk"), std::string::npos);
  PlanRequest disk_ok = r;
  disk_ok.allow_disk = true;
  EXPECT_EQ(error_of(t, Json{{"", "disk"}}, disk_ok), "");
}

TEST(CustomDeviceMap, AFileNestedPastTheLimitIsAnInputError) {
  // A device-map entry nested 60000 deep crashed (stack overflow).
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("plexus_deep_map_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << "{\"model\": " << std::string(60000, '[') << std::string(60000, ']') << "}";
  try {
    load_device_map_file(path);
    FAIL() << "loaded a 60000-deep device map";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path.string() + ": JSON nested deeper than 256 levels", 0), 0u) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace plexus
