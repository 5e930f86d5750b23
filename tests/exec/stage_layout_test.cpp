// Device map -> stages: compute devices of offloaded modules, stage boundaries, map errors.
#include <gtest/gtest.h>

#include "core/error.h"
#include "planner/stage_layout.h"
#include "model/make_model.h"

namespace plexus {
namespace {

ModuleTree tree() { return ModuleTree::from_config(preset_config("tiny", Arch::kLlama, 1000)); }  // 4 layers
DeviceMap map_of(const Json& j) { return DeviceMap::from_json(j, "test map"); }

TEST(StageLayout, ConsecutiveModulesOnOneDeviceFormAStage) {
  const StageLayout s = make_stage_layout(tree(), map_of({{"model.embed_tokens", 0}, {"model.layers.0", 0}, {"model.layers.1", 1},
                                                          {"model.layers.2", 1}, {"model.layers.3", 1}, {"model.norm", 2}, {"lm_head", 2}}), 3);
  ASSERT_EQ(s.stages.size(), 3u);
  EXPECT_TRUE(s.stages[0].embed);
  EXPECT_EQ(s.stages[0].first_layer, 0);
  EXPECT_EQ(s.stages[0].end_layer, 1);
  EXPECT_EQ(s.stages[1].device, 1);
  EXPECT_EQ(s.stages[1].first_layer, 1);
  EXPECT_EQ(s.stages[1].end_layer, 4);
  EXPECT_TRUE(s.stages[2].head);
  EXPECT_EQ(s.stages[2].n_layers(), 0);
  EXPECT_FALSE(s.streams());
}

TEST(StageLayout, OffloadedModulesComputeOnThePrecedingAccelerator) {
  const StageLayout s = make_stage_layout(tree(), map_of({{"model.embed_tokens", "cpu"}, {"model.layers.0", 1}, {"model.layers.1", "disk"},
                                                          {"model.layers.2", 0}, {"model.layers.3", "cpu"}, {"model.norm", "cpu"}, {"lm_head", "cpu"}}), 2);
  EXPECT_EQ(s.embed.device, 1) << "nothing before it: the next accelerator";
  EXPECT_EQ(s.embed.residence, Residence::kHost);
  EXPECT_EQ(s.layers[1].device, 1);
  EXPECT_EQ(s.layers[1].residence, Residence::kDisk);
  EXPECT_EQ(s.layers[3].device, 0);
  EXPECT_EQ(s.head.device, 0);
  ASSERT_EQ(s.stages.size(), 2u);
  EXPECT_EQ(s.stages[0].end_layer, 2);
  EXPECT_TRUE(s.stages[1].head);
  EXPECT_TRUE(s.streams());
  EXPECT_NE(describe_layout(s).find("stage 1  device 0: layers 2-3 (1 streamed from cpu/disk), head (streamed from cpu)"), std::string::npos)
      << describe_layout(s);
}

TEST(StageLayout, AllOffloadedUsesDeviceZeroOrTheHost) {
  EXPECT_EQ(make_stage_layout(tree(), map_of({{"", "disk"}}), 2).stages.at(0).device, 0);
  const StageLayout host = make_stage_layout(tree(), map_of({{"", "cpu"}}), 0);
  ASSERT_EQ(host.stages.size(), 1u);
  EXPECT_EQ(host.stages[0].device, kHostDevice);
}

TEST(StageLayout, BadMapsAreInputErrors) {
  EXPECT_THROW(make_stage_layout(tree(), map_of({{"", 2}}), 2), InputError);
  EXPECT_THROW(make_stage_layout(tree(), map_of({{"", 0}, {"model.layers.2.self_attn", 1}}), 2), InputError);
}

}  // namespace
}  // namespace plexus
