// The stages strategy: contiguous, balanced, every accelerator used, KV and activations reserved,
// offload only when the accelerators are full; and where it beats accelerate.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "planner/memory_estimate.h"
#include "planner/planner.h"
#include "test_models.h"

namespace plexus {
namespace {

using namespace plexus::testing;

PlanRequest request(Strategy s, WeightDType d, const std::string& budgets, std::int64_t context = 0) {
  PlanRequest r;
  r.strategy = s;
  r.dtype = d;
  r.budgets = parse_max_memory(budgets);
  r.runtime.context = context;
  return r;
}

// Bytes an accelerator reads per generated token: its weights and KV cache, except the
// embedding, of which a token reads one row (untied models only here).
std::int64_t max_accelerator_load(const Plan& p, std::int64_t embed_bytes) {
  std::int64_t m = 0;
  for (const auto& d : p.devices) {
    if (!d.device.is_accelerator()) continue;
    m = std::max(m, d.weights_bytes + d.kv_cache_bytes - (d.holds_embedding ? embed_bytes : 0));
  }
  return m;
}

// Layers in order: each device's layers are one run, and devices follow each other.
void expect_contiguous(const Plan& p) {
  int next = 0;
  for (const auto& d : p.devices) {
    for (int l : d.layers) EXPECT_EQ(l, next++) << "device " << d.device.to_string();
  }
}

TEST(Stages, UsesEveryDeviceAndBalancesTheLoad) {
  const ModuleTree t = llama3_8b();
  const Plan p = plan_model(t, request(Strategy::kStages, WeightDType::kBF16, "0=10GiB,1=10GiB,2=10GiB,3=10GiB"));
  ASSERT_EQ(p.devices.size(), 4u);
  expect_contiguous(p);
  for (const auto& d : p.devices) EXPECT_FALSE(d.layers.empty()) << d.device.to_string();
  const Plan acc = plan_model(t, request(Strategy::kAuto, WeightDType::kBF16, "0=10GiB,1=10GiB,2=10GiB,3=10GiB"));
  const std::int64_t embed = 128256LL * 4096 * 2;
  EXPECT_LT(max_accelerator_load(p, embed), max_accelerator_load(acc, embed));
  std::int64_t reported = 0;
  for (const auto& d : p.devices) reported = std::max(reported, d.read_bytes_per_token);
  EXPECT_EQ(reported, max_accelerator_load(p, embed));
  // 15 GB read per token over 4 devices: within one layer of a perfect quarter.
  EXPECT_LT(max_accelerator_load(p, embed), (p.model_bytes - embed) / 4 + 436224000);
}

TEST(Stages, ReservesKvCacheAndActivationsWithinBudgets) {
  const ModuleTree t = llama3_8b();
  const PlanRequest r = request(Strategy::kStages, WeightDType::kBF16, "0=6GiB,1=6GiB,2=6GiB", 8192);
  const Plan p = plan_model(t, r);
  expect_contiguous(p);
  std::int64_t kv = 0;
  for (const auto& d : p.devices) {
    ASSERT_TRUE(d.budget_bytes.has_value());
    EXPECT_EQ(d.total_bytes, d.weights_bytes + d.kv_cache_bytes + d.activation_bytes + d.streaming_bytes);
    EXPECT_LE(d.total_bytes, static_cast<std::int64_t>(*d.budget_bytes));
    // The run keeps K and V in float32: 2 × 8 kv heads × 128 × 4 bytes per token and layer.
    EXPECT_EQ(d.kv_cache_bytes, static_cast<std::int64_t>(d.layers.size()) * p.runtime.context * 2 * 1024 * 4);
    EXPECT_GT(d.activation_bytes, 0);
    kv += d.kv_cache_bytes;
  }
  EXPECT_EQ(kv, kv_bytes_per_token(t.config(), WeightDType::kF32) * p.runtime.context);
}

// accelerate sends the whole model to disk when the embedding fits no GPU (golden case 1000-40).
TEST(Stages, KeepsGpusBusyWhereAccelerateSendsEverythingToDisk) {
  const ModuleTree t = smollm_135m();
  const std::string budgets = "0=48.0MB,1=43.0MB,2=48.0MB,3=33.0MB";
  const Plan acc = plan_model(t, request(Strategy::kAuto, WeightDType::kF16, budgets));
  EXPECT_EQ(acc.device_map.to_json(), (Json{{"", "disk"}}));
  PlanRequest r = request(Strategy::kStages, WeightDType::kF16, budgets);
  r.allow_disk = true;
  const Plan p = plan_model(t, r);
  expect_contiguous(p);
  std::int64_t on_gpus = 0;
  for (const auto& d : p.devices) {
    if (d.device.is_accelerator()) {
      EXPECT_FALSE(d.layers.empty()) << d.device.to_string();
      on_gpus += d.weights_bytes;
    }
  }
  EXPECT_GT(on_gpus, p.model_bytes / 2);
  EXPECT_EQ(*p.device_map.device_of("model.embed_tokens.weight"), DeviceId::disk());
}

TEST(Stages, OffloadsToCpuBeforeDiskAndEmbeddingFirst) {
  const ModuleTree t = llama3_8b();
  const Plan p = plan_model(t, request(Strategy::kStages, WeightDType::kBF16, "0=5GiB,1=5GiB,cpu=64GiB"));
  EXPECT_EQ(*p.device_map.device_of("model.embed_tokens.weight"), DeviceId::cpu());
  EXPECT_EQ(*p.device_map.device_of("model.layers.0.mlp.up_proj.weight"), DeviceId::accelerator(0));
  EXPECT_EQ(*p.device_map.device_of("lm_head.weight"), DeviceId::cpu());
  for (const auto& d : p.devices) EXPECT_NE(d.device, DeviceId::disk());
}

TEST(Stages, TiedHeadOnAnotherDeviceCountsItsCopy) {
  const ModuleTree t = qwen2_05b();
  const Plan p = plan_model(t, request(Strategy::kStages, WeightDType::kBF16, "0=1GiB,1=1GiB"));
  const DeviceId e = *p.device_map.device_of("model.embed_tokens.weight");
  const DeviceId h = *p.device_map.device_of("lm_head.weight");
  std::int64_t total = 0;
  for (const auto& d : p.devices) total += d.weights_bytes;
  const std::int64_t embed = 151936LL * 896 * 2;
  EXPECT_EQ(total, p.model_bytes + (e == h ? 0 : embed));
  for (const auto& d : p.devices) EXPECT_LE(d.weights_bytes, 1LL << 30);
}

TEST(Stages, ModelThatFitsNowhereGetsNumbersAndWayOut) {
  const ModuleTree t = llama3_70b();
  try {
    plan_model(t, request(Strategy::kStages, WeightDType::kBF16, "0=18GiB,1=18GiB,2=18GiB,3=18GiB"));
    FAIL();
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("needs 131.42 GiB"), std::string::npos) << m;
    EXPECT_NE(m.find("devices 0,1,2,3 allow 72.00 GiB"), std::string::npos) << m;
    EXPECT_NE(m.find("cpu="), std::string::npos) << m;
    EXPECT_NE(m.find("int8"), std::string::npos) << m;
  }
}

// No accelerators: a plan for the host, which computes every module where it lies (no streaming
// slots, nothing said to have missed an accelerator).
TEST(Stages, HostOnlyPlansOnCpu) {
  const ModuleTree t = tiny_llama();
  const Plan p = plan_model(t, request(Strategy::kStages, WeightDType::kF32, "cpu=1GiB", 128));
  EXPECT_EQ(p.device_map.to_json(), (Json{{"", "cpu"}}));
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].layers.size(), 4u);
  EXPECT_EQ(p.devices[0].streaming_bytes, 0);
  EXPECT_GT(p.devices[0].kv_cache_bytes, 0);
  std::string notes;
  for (const std::string& n : p.notes) notes += n + "\n";
  EXPECT_EQ(notes.find("did not fit"), std::string::npos) << notes;
  EXPECT_NE(notes.find("no accelerators: the host computes the whole model (embedding, 4 layers, head)"), std::string::npos) << notes;
}

TEST(Stages, IsDeterministicAndHandlesHypotheticalDevices) {
  const ModuleTree t = llama_405b();
  const PlanRequest r = request(Strategy::kStages, WeightDType::kInt4, "0=80GiB,1=80GiB,2=80GiB,3=80GiB,7=141GiB", 8192);
  const Plan a = plan_model(t, r), b = plan_model(t, r);
  EXPECT_EQ(a.device_map, b.device_map);
  expect_contiguous(a);
  EXPECT_EQ(a.devices.back().device, DeviceId::accelerator(7));
  EXPECT_FALSE(a.devices.back().layers.empty());
  EXPECT_EQ(a.devices.size(), 5u);
}

}  // namespace
}  // namespace plexus
