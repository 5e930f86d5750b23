// Mixtures of experts in the planner: active parameters of the real shapes (computed here from
// the published config numbers), the experts a batch reads, accelerate's strategies placing whole
// decoder layers, and the cost model reading k of E experts per token.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "model/make_model.h"
#include "planner/memory_estimate.h"
#include "planner/moe_reads.h"
#include "planner/planner.h"
#include "planner/sized_tree.h"

namespace plexus {
namespace {

// Parameters of a Mixtral / Qwen3-MoE config, from its numbers alone: embedding and head, per
// layer attention (+ q/k norms for Qwen3), router, experts (3·H·Ie each) and two norms, final norm.
struct Counts {
  double total = 0, active = 0;
};
Counts count(const ModelConfig& c) {
  const double H = static_cast<double>(c.hidden_size), L = static_cast<double>(c.num_layers);
  const double attention = H * static_cast<double>(2 * c.q_dim() + 2 * c.kv_dim()) + (c.qk_norm ? 2.0 * static_cast<double>(c.head_dim) : 0.0);
  const double E = static_cast<double>(c.moe.num_experts), k = static_cast<double>(c.moe.experts_per_token);
  const double expert = 3 * H * static_cast<double>(c.moe.expert_intermediate_size);
  const double shared = static_cast<double>(c.vocab_size) * H * (c.tie_word_embeddings ? 1 : 2) + H + L * (attention + E * H + 2 * H);
  return {shared + L * E * expert, shared + L * k * expert};
}

TEST(MoePlan, RealShapePresetsHaveTheirPublishedTotalAndActiveParameters) {
  struct Want {
    const char* preset;
    double total_lo, total_hi, active_lo, active_hi;  // billions, as the model cards round them
  };
  for (const Want& w : {Want{"mixtral-8x7b", 46.65, 46.75, 12.85, 12.95}, Want{"qwen3-30b-a3b", 30.45, 30.55, 3.25, 3.40}}) {
    const ModelConfig c = preset_config(w.preset, *preset_arch(w.preset), 0);
    const ModelEstimate e = estimate_model(ModuleTree::from_config(c), QuantMix::kQ8_0);  // one mix: fewer rows to size
    const Counts n = count(c);
    EXPECT_EQ(static_cast<double>(e.num_params), n.total) << w.preset;
    EXPECT_EQ(static_cast<double>(e.active_params), n.active) << w.preset;
    EXPECT_GT(e.num_params / 1e9, w.total_lo) << w.preset;
    EXPECT_LT(e.num_params / 1e9, w.total_hi) << w.preset;
    EXPECT_GT(e.active_params / 1e9, w.active_lo) << w.preset;
    EXPECT_LT(e.active_params / 1e9, w.active_hi) << w.preset;
    // bfloat16: the active bytes are two per active parameter.
    EXPECT_EQ(e.per_dtype[1].active_bytes, 2 * e.active_params) << w.preset;
  }
  // The CPU benchmark preset: 2-4B stored, about 0.5B read per token.
  const ModelConfig b = preset_config("moe-cpu-bench", Arch::kQwen3Moe, 0);
  const ModelEstimate e = estimate_model(ModuleTree::from_config(b));
  EXPECT_EQ(static_cast<double>(e.active_params), count(b).active);
  EXPECT_GT(e.num_params, 2'000'000'000);
  EXPECT_LT(e.num_params, 4'000'000'000);
  EXPECT_GT(e.active_params, 400'000'000);
  EXPECT_LT(e.active_params, 600'000'000);
}

TEST(MoePlan, DenseModelsAreAllActive) {
  const ModelConfig c = preset_config("tiny", Arch::kQwen3, 0);
  const ModelEstimate e = estimate_model(ModuleTree::from_config(c));
  EXPECT_EQ(e.active_params, e.num_params);
  EXPECT_EQ(e.per_dtype[0].active_bytes, e.per_dtype[0].total_bytes);
}

TEST(MoePlan, ExpectedExpertsReadGrowsFromKToE) {
  EXPECT_DOUBLE_EQ(expected_experts_read(8, 2, 1), 2.0);
  EXPECT_DOUBLE_EQ(expected_experts_read(8, 2, 2), 8.0 * (1 - 0.75 * 0.75));  // 3.5
  EXPECT_NEAR(expected_experts_read(128, 8, 4096), 128.0, 1e-9);
  double last = 0;
  for (double n : {1.0, 2.0, 4.0, 16.0, 64.0}) {
    const double x = expected_experts_read(128, 8, n);
    EXPECT_GT(x, last);
    EXPECT_LE(x, 128.0);
    last = x;
  }
}

// accelerate's no-split unit is the decoder layer, experts and router included: planning a tiny
// Mixtral / Qwen3-MoE over budgets that force a split places whole layers, every expert tensor
// under its layer's prefix on the layer's device.
TEST(MoePlan, AccelerateStrategiesPlaceWholeMoeLayers) {
  for (const Arch arch : {Arch::kMixtral, Arch::kQwen3Moe}) {
    const ModelConfig c = preset_config("tiny", arch, 256);  // a small vocabulary: the layers are most of the bytes
    const ModuleTree tree = ModuleTree::from_config(c);
    const std::int64_t total = SizedTree::build(tree, WeightDType::kF32).total_bytes();
    for (const Strategy s : {Strategy::kSequential, Strategy::kBalanced, Strategy::kBalancedLow0, Strategy::kAuto}) {
      PlanRequest r;
      r.strategy = s;
      r.dtype = WeightDType::kF32;
      const auto third = static_cast<std::uint64_t>(total / 3);
      r.budgets = Budgets({{DeviceId::accelerator(0), third}, {DeviceId::accelerator(1), third},
                           {DeviceId::cpu(), static_cast<std::uint64_t>(total)}});
      const Plan plan = plan_model(tree, r);
      const std::string what = std::string(arch_name(arch)) + " " + std::string(strategy_name(s));
      std::map<int, DeviceId> layer_device;
      int experts = 0;
      for (const auto& [name, dev] : plan.placement) {
        const ParamInfo* p = tree.find(name);
        ASSERT_NE(p, nullptr) << name;
        if (p->layer < 0) continue;
        const auto [it, first] = layer_device.emplace(p->layer, dev);
        EXPECT_TRUE(it->second == dev) << what << ": " << name << " is apart from its layer";
        if (is_expert_param(c, *p)) {
          ++experts;
          EXPECT_EQ(name.rfind(ModuleTree::layer_prefix(p->layer) + ".", 0), 0u) << name;
        }
      }
      EXPECT_GT(experts, 0) << what;
      // The map names whole layers (or coarser), never a part of one.
      for (const auto& [module, dev] : plan.device_map.entries()) {
        EXPECT_EQ(module.find(".experts"), std::string::npos) << what << ": " << module;
        EXPECT_EQ(module.find(".self_attn"), std::string::npos) << what << ": " << module;
      }
      std::set<std::string> devices;
      for (const auto& [l, d] : layer_device) devices.insert(d.to_string());
      EXPECT_GE(devices.size(), 2u) << what << ": the budgets were meant to split the layers";
    }
  }
}

// One device, one sequence: a token reads the active bytes (k of E experts), so a plan's
// read_bytes_per_token is its active_bytes less the embedding (a row lookup) plus the KV cache.
TEST(MoePlan, ReadBytesPerTokenCountsKOfEExperts) {
  const ModelConfig c = preset_config("tiny", Arch::kMixtral, 0);
  const ModuleTree tree = ModuleTree::from_config(c);
  PlanRequest r;
  r.dtype = WeightDType::kF32;
  r.budgets = Budgets({{DeviceId::accelerator(0), 1ull << 30}});
  const Plan plan = plan_model(tree, r);
  ASSERT_EQ(plan.devices.size(), 1u);
  const SizedTree sized = SizedTree::build(tree, WeightDType::kF32);
  EXPECT_LT(plan.active_bytes, plan.model_bytes);
  EXPECT_EQ(plan.active_bytes, active_weight_bytes(sized, c));
  EXPECT_EQ(plan.devices[0].read_bytes_per_token,
            plan.active_bytes - sized.size_of("model.embed_tokens") + plan.devices[0].kv_cache_bytes);
  EXPECT_EQ(plan.parameters, estimate_model(tree).num_params);
  EXPECT_EQ(plan.active_parameters, estimate_model(tree).active_params);
}

}  // namespace
}  // namespace plexus
