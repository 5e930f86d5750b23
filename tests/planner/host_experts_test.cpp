// Experts kept in host memory, planned and predicted: on real mixture-of-experts shapes whose
// weights do not fit the accelerator, `stages` keeps the per-token-read parts (attention, norms,
// router, head) on it and the experts of the fewest first layers on the host (an automatic
// --n-cpu-moe) instead of offloading whole layers; the cost model reads the routed experts at the
// host's memory bandwidth and sends the hidden states over the host link both ways; dense models,
// models that fit and accelerate's strategies are planned as before.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "model/make_model.h"
#include "planner/cost_model.h"
#include "planner/host_experts.h"
#include "planner/moe_reads.h"
#include "planner/planner.h"
#include "planner/sized_tree.h"
#include "planner/stage_layout.h"
#include "test_models.h"

namespace plexus {
namespace {

ModuleTree preset_tree(const std::string& preset) { return ModuleTree::from_config(preset_config(preset, *preset_arch(preset), 0)); }

PlanRequest experts_request(const std::string& budgets, Strategy s = Strategy::kStages, std::int64_t batch = 1) {
  PlanRequest r;
  r.strategy = s;
  r.dtype = WeightDType::kBF16;
  r.budgets = parse_max_memory(budgets);
  r.runtime.context = 4096;
  r.runtime.batch = batch;
  r.runtime.prefill_chunk = 512;
  return r;
}

struct ExpertCase {
  const char* preset;
  const char* budgets;  // the accelerator holds well under half of the bf16 weights
};
constexpr ExpertCase kCases[] = {{"mixtral-8x7b", "0=40GiB,cpu=256GiB"},
                           {"qwen3-30b-a3b", "0=24GiB,cpu=128GiB"},
                           {"gpt-oss-20b", "0=16GiB,cpu=64GiB"}};

TEST(HostExperts, StagesKeepsTheDensePartsOnTheAcceleratorAndTheFewestLayersExpertsOnTheHost) {
  for (const ExpertCase& k : kCases) {
    const ModuleTree tree = preset_tree(k.preset);
    const ModelConfig& c = tree.config();
    const PlanRequest r = experts_request(k.budgets);
    const Plan plan = plan_model(tree, r);
    const int n = n_cpu_moe_of(plan);
    ASSERT_GT(n, 0) << k.preset;
    ASSERT_LT(n, c.num_layers) << k.preset << ": some layers keep their experts on the accelerator";
    EXPECT_TRUE(fits_accelerators(tree, plan)) << k.preset;
    EXPECT_EQ(smallest_cpu_moe_layers(tree, r), n) << k.preset;
    // Every tensor a token reads whole stays on the accelerator; only the first n layers' experts
    // (and the embedding, a row lookup, if it had to) are on the host.
    for (const auto& [name, dev] : plan.placement) {
      const ParamInfo* p = tree.find(name);
      ASSERT_NE(p, nullptr) << name;
      if (is_expert_param(c, *p) && p->layer < n) {
        EXPECT_EQ(dev, DeviceId::cpu()) << k.preset << ": " << name;
      } else if (p->module != "model.embed_tokens") {
        EXPECT_EQ(dev, DeviceId::accelerator(0)) << k.preset << ": " << name;
      }
    }
    // The smallest such n: one layer fewer leaves some layer or the head streaming (or no plan).
    PlanRequest fewer = r;
    fewer.cpu_moe_layers = n - 1;
    bool fewer_fits = false;
    try {
      fewer_fits = n > 1 && fits_accelerators(tree, plan_model(tree, fewer));
    } catch (const InputError&) {
    }
    EXPECT_FALSE(fewer_fits) << k.preset << " fits with --n-cpu-moe " << n - 1;
    // The same plan as --n-cpu-moe n asks for, and the note says so and why.
    PlanRequest asked = r;
    asked.cpu_moe_layers = n;
    EXPECT_EQ(plan_model(tree, asked).device_map.to_json(), plan.device_map.to_json()) << k.preset;
    bool said = false;
    for (const std::string& note : plan.notes) said = said || note.find("automatic --n-cpu-moe " + std::to_string(n)) != std::string::npos;
    EXPECT_TRUE(said) << k.preset;
    // Offloading whole layers instead (what stages did before) streams some, and a decode step
    // copies more bytes than the host reads of its routed experts.
    PlanRequest plain = r;
    plain.auto_host_experts = false;
    const Plan offload = plan_model(tree, plain);
    EXPECT_TRUE(offload.host_expert_layers.empty());
    EXPECT_FALSE(fits_accelerators(tree, offload)) << k.preset;
    EXPECT_GT(slow_path_bytes_per_step(tree, offload), 2 * slow_path_bytes_per_step(tree, plan)) << k.preset;
  }
}

TEST(HostExperts, SlowPathBytesAreOffloadedLayersWholeAndTheRoutedHostExperts) {
  const ModuleTree tree = preset_tree("mixtral-8x7b");
  const ModelConfig& c = tree.config();
  const SizedTree sized = SizedTree::build(tree, WeightDType::kBF16);
  PlanRequest r = experts_request("0=40GiB,cpu=256GiB");
  r.cpu_moe_layers = 3;
  const Plan three = plan_model(tree, r);  // the rest still does not fit: some layers stream
  double want = 0;
  for (int l = 0; l < 3; ++l) want += static_cast<double>(layer_expert_bytes(sized, c, l)) * 2 / 8;  // k = 2 of E = 8
  const StageLayout layout = make_stage_layout(tree, three.device_map, 1);
  int streamed = 0;
  for (int l = 0; l < c.num_layers; ++l) {
    if (layout.layers[static_cast<std::size_t>(l)].residence != Residence::kDevice) {
      want += static_cast<double>(packed_layer_bytes(sized, c, l));
      ++streamed;
    }
  }
  ASSERT_GT(streamed, 0);
  // The head follows the last layers to the host here (stages fills the accelerator in order); it
  // streams then too.
  if (layout.head.residence != Residence::kDevice) want += static_cast<double>(head_matrix_bytes(sized));
  EXPECT_DOUBLE_EQ(slow_path_bytes_per_step(tree, three), want);
}

TEST(HostExperts, DenseFittingAndAccelerateRequestsAreUnchanged) {
  // A dense model that does not fit: the same offload with or without the choice.
  const ModuleTree dense = testing::llama3_8b();
  PlanRequest d = experts_request("0=6GiB,cpu=64GiB");
  const Plan a = plan_model(dense, d);
  d.auto_host_experts = false;
  EXPECT_EQ(plan_model(dense, d).device_map.to_json(), a.device_map.to_json());
  EXPECT_EQ(smallest_cpu_moe_layers(dense, d), std::nullopt);
  const ModuleTree moe = preset_tree("mixtral-8x7b");
  // A mixture that fits: nothing moves to the host.
  const Plan fits = plan_model(moe, experts_request("0=80GiB,1=80GiB,cpu=256GiB"));
  EXPECT_TRUE(fits.host_expert_layers.empty());
  EXPECT_TRUE(fits_accelerators(moe, fits));
  // accelerate's strategies place as accelerate does (whole layers offloaded).
  for (const Strategy s : {Strategy::kSequential, Strategy::kBalanced, Strategy::kAuto}) {
    const Plan p = plan_model(moe, experts_request("0=40GiB,cpu=256GiB", s));
    EXPECT_TRUE(p.host_expert_layers.empty()) << strategy_name(s);
    EXPECT_FALSE(fits_accelerators(moe, p)) << strategy_name(s);
  }
  // Without a cpu budget nothing may leave the accelerator: the model does not fit (exit 2).
  EXPECT_THROW(plan_model(moe, experts_request("0=40GiB")), InputError);
  // Where the run cannot compute host-kept experts (CUDA, for now) stages offloads whole layers.
  PlanRequest cuda = experts_request("0=40GiB,cpu=256GiB");
  cuda.auto_host_experts = false;
  EXPECT_TRUE(plan_model(moe, cuda).host_expert_layers.empty());
}

// Roofline facts: an H100 (PCIe 4 host link, 32 GB/s) and a host of `host_bw` bytes/s whose
// FLOP/s never bind.
FactsOf h100_with_host(double host_bw, double host_link = 0) {
  DeviceFacts g = *builtin_gpu_facts("h100-sxm");
  if (host_link > 0) g.host_copy_bandwidth = host_link;
  HostCalibration cal;
  HostThroughput t;
  t.threads = 16;
  t.memory_bandwidth = host_bw;
  t.flops_f32 = t.flops_16bit = 1e18;
  cal.by_threads = {t};
  cal.copy_bandwidth = host_bw;
  cal.disk_read_bandwidth = 2e9;
  cal.handoff_s = 20e-6;
  const DeviceFacts h = host_facts(cal, 16, "test");
  return [g, h](int d) { return d == kHostDevice ? h : g; };
}

TEST(HostExperts, CostModelReadsTheRoutedExpertsOnTheHostAndSendsTheHiddenStatesBothWays) {
  const ModuleTree tree = preset_tree("mixtral-8x7b");
  const ModelConfig& c = tree.config();
  const SizedTree sized = SizedTree::build(tree, WeightDType::kBF16);
  const Plan host = plan_model(tree, experts_request("0=40GiB,cpu=256GiB"));
  const int n = n_cpu_moe_of(host);
  ASSERT_GT(n, 0);
  double experts = 0;
  for (int l = 0; l < n; ++l) experts += static_cast<double>(layer_expert_bytes(sized, c, l));
  auto step = [&](const FactsOf& f) { return 1 / predict_plan(tree, host, f, false).decode_tokens_per_s_1; };
  // One token reads k = 2 of the 8 experts of each host-kept layer at the host's bandwidth.
  EXPECT_NEAR(step(h100_with_host(100e9)) - step(h100_with_host(200e9)), experts * 2 / 8 * (1 / 100e9 - 1 / 200e9), 1e-9);
  // Each of the n layers sends one token's float32 hidden state to the host and back.
  const double trip = 2.0 * n * static_cast<double>(c.hidden_size) * 4;
  EXPECT_NEAR(step(h100_with_host(100e9, 16e9)) - step(h100_with_host(100e9, 32e9)), trip * (1 / 16e9 - 1 / 32e9), 1e-12);
  // The host dominates the step and the prediction says so.
  const Prediction p = predict_plan(tree, host, h100_with_host(100e9), false);
  EXPECT_EQ(p.bottleneck.resource, "host_experts");
  EXPECT_EQ(p.host_expert_layers, n);
  EXPECT_GT(p.host_experts_share, 0.5);
  EXPECT_LE(p.host_experts_share, 1.0);
  const Json j = prediction_to_json(p);
  EXPECT_EQ(j["host_expert_layers"], n);
  EXPECT_EQ(j["facts"].back()["device"], "cpu");
  EXPECT_NE(prediction_to_text(p).find("the host computes the experts of " + std::to_string(n) + " layer(s)"), std::string::npos);
  // Offloading whole layers instead is bound by the host link and predicted slower.
  PlanRequest plain = experts_request("0=40GiB,cpu=256GiB");
  plain.auto_host_experts = false;
  const Prediction offload = predict_plan(tree, plan_model(tree, plain), h100_with_host(100e9), false);
  EXPECT_EQ(offload.bottleneck.resource, "offload_stream");
  EXPECT_EQ(offload.host_expert_layers, 0);
  EXPECT_FALSE(prediction_to_json(offload).contains("host_expert_layers"));
  EXPECT_GT(p.decode_tokens_per_s_1, 2 * offload.decode_tokens_per_s_1);
  // A batch of 64 tokens routes to E·(1 − (1 − k/E)^64) of each layer's experts: nearly all 8.
  PlanRequest r64 = experts_request("0=40GiB,cpu=256GiB", Strategy::kStages, 64);
  r64.runtime.context = 512;  // 64 sequences' f32 KV cache of 4096 positions is 64 GiB alone
  const Plan b64 = plan_model(tree, r64);
  double experts64 = 0;
  for (const int l : b64.host_expert_layers) experts64 += static_cast<double>(layer_expert_bytes(sized, c, l));
  auto step64 = [&](const FactsOf& f) { return 64 / predict_plan(tree, b64, f, false).decode_tokens_per_s_batch; };
  EXPECT_NEAR(step64(h100_with_host(100e9)) - step64(h100_with_host(200e9)),
              experts64 * expected_experts_read(8, 2, 64) / 8 * (1 / 100e9 - 1 / 200e9), 1e-9);
  EXPECT_GT(expected_experts_read(8, 2, 64), 7.99);
}

// Virtual devices of one host read the host-kept experts in place, like their own weights: the
// same prediction as with the experts on the device (no trips, no separate host part).
TEST(HostExperts, VirtualDevicesReadHostExpertsInPlace) {
  const ModelConfig c = preset_config("tiny", Arch::kMixtral, 256);
  const ModuleTree tree = ModuleTree::from_config(c);
  PlanRequest r = experts_request("0=1GiB,cpu=1GiB");
  r.runtime.context = 64;
  const Plan whole = plan_model(tree, r);
  r.cpu_moe_layers = static_cast<int>(c.num_layers);
  const Plan host = plan_model(tree, r);
  ASSERT_EQ(host.host_expert_layers.size(), static_cast<std::size_t>(c.num_layers));
  HostCalibration cal;
  HostThroughput t;
  t.threads = 1;
  t.memory_bandwidth = 10e9;
  t.flops_f32 = t.flops_16bit = 50e9;
  cal.by_threads = {t};
  cal.copy_bandwidth = 10e9;
  cal.disk_read_bandwidth = 5e9;
  const FactsOf facts = [cal](int) { return virtual_device_facts(cal, 1, "test"); };
  const Prediction a = predict_plan(tree, whole, facts, true), b = predict_plan(tree, host, facts, true);
  EXPECT_DOUBLE_EQ(a.decode_tokens_per_s_1, b.decode_tokens_per_s_1);
  EXPECT_EQ(b.host_expert_layers, 0);
}

}  // namespace
}  // namespace plexus
