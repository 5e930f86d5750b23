// Tensor × pipeline parallel plans: what each of the N × M devices holds (split weights once
// over the ranks, replicated ones on every rank, lm_head rows by vocabulary, the KV cache by kv
// heads or one replicated kv head a rank), and the cost model's collectives for such a run.
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/tensor_split.h"
#include "planner/cost_model.h"
#include "planner/parallel_plan.h"
#include "planner/planner.h"
#include "planner/sized_tree.h"
#include "test_models.h"

namespace plexus {
namespace {

using namespace plexus::testing;

PlanRequest request_for(const std::string& budgets, std::int64_t context = 1024) {
  PlanRequest r;
  r.dtype = WeightDType::kBF16;
  r.budgets = parse_max_memory(budgets);
  r.runtime.context = context;
  r.runtime.prefill_chunk = 128;
  return r;
}

// Bytes of the parameters every rank holds whole: the embedding and the norms.
std::int64_t replicated_bytes(const ModuleTree& t, const SizedTree& sized) {
  std::int64_t b = sized.size_of("model.embed_tokens.weight");
  for (const ParamInfo& p : t.params()) {
    if (p.name.find("norm") != std::string::npos) b += sized.size_of(p.name);
  }
  return b;
}

std::int64_t sum_weights(const ParallelPlan& p) {
  std::int64_t b = 0;
  for (const ParallelDevice& d : p.devices) b += d.report.weights_bytes;
  return b;
}

TEST(ParallelPlan, SplitWeightsSumToTheWholeAndReplicatedOnesCountOnEveryRank) {
  const ModuleTree full = tiny_llama();  // 4 heads, 2 kv heads, intermediate 176, vocab 32000, untied
  const SizedTree sized = SizedTree::build(full, WeightDType::kBF16);
  const std::int64_t replicated = replicated_bytes(full, sized);
  std::int64_t kv_proj = 0;  // k_proj and v_proj of every layer
  for (const ParamInfo& p : full.params()) {
    if (p.name.find("k_proj") != std::string::npos || p.name.find("v_proj") != std::string::npos) kv_proj += sized.size_of(p.name);
  }
  ASSERT_EQ(kv_proj, 4 * 2 * (2 * 16) * 64 * 2);
  for (int tp : {2, 4}) {
    const ModuleTree shard = shard_module_tree(full, TensorSplit{0, tp});
    const PlanRequest r = request_for("0=1GiB");
    const Plan plan = plan_model(shard, r);
    std::string all;
    for (int d = 0; d < tp; ++d) all += (d ? "," : "") + std::to_string(d) + "=1GiB";
    const ParallelPlan p = parallel_plan(full, plan, r, tp, 1, parse_max_memory(all));
    ASSERT_EQ(p.devices.size(), static_cast<std::size_t>(tp)) << tp;
    // tp 2: every split weight once over the ranks. tp 4: the 2 kv heads' k and v rows are held
    // by two ranks each (one replicated kv head a rank), so they count twice.
    const std::int64_t kv_copies = tp == 4 ? kv_proj : 0;
    EXPECT_EQ(sum_weights(p), sized.total_bytes() + (tp - 1) * replicated + kv_copies) << tp;
    EXPECT_EQ(p.weights_bytes, sum_weights(p));
    for (int d = 0; d < tp; ++d) {
      const ParallelDevice& x = p.devices[static_cast<std::size_t>(d)];
      EXPECT_EQ(x.device, DeviceId::accelerator(d));
      EXPECT_EQ(x.tp_rank, d);
      EXPECT_EQ(x.pp_stage, 0);
      EXPECT_EQ(x.budget_bytes, 1ull << 30);
      // Each rank: 1/tp of the split weights (k and v: one kv head of 2 at tp 4), the replicated ones whole.
      const std::int64_t kv_rank = tp == 4 ? kv_proj / 2 : kv_proj / tp;
      EXPECT_EQ(x.report.weights_bytes, (sized.total_bytes() - replicated - kv_proj) / tp + kv_rank + replicated)
          << tp << " rank " << d;
      EXPECT_EQ(x.report.layers, (std::vector<int>{0, 1, 2, 3}));
      EXPECT_TRUE(x.report.holds_embedding && x.report.holds_lm_head);
    }
  }
}

TEST(ParallelPlan, TiedEmbeddingStaysWholeAndItsHeadIsSplit) {
  const ModuleTree full = smollm_135m();  // 9 heads, 3 kv heads, tied embeddings
  const SizedTree sized = SizedTree::build(full, WeightDType::kBF16);
  const std::int64_t embed = sized.size_of("model.embed_tokens.weight");
  const PlanRequest r = request_for("0=4GiB");
  const ParallelPlan p = parallel_plan(full, plan_model(shard_module_tree(full, TensorSplit{0, 3}), r), r, 3, 1,
                                       parse_max_memory("0=4GiB,1=4GiB,2=4GiB"));
  // Every rank: the embedding whole, a third of the vocabulary's head rows (49152 / 3) untied.
  EXPECT_EQ(sum_weights(p), sized.total_bytes() + 2 * replicated_bytes(full, sized) + embed);
}

TEST(ParallelPlan, LmHeadRowsOfAnUnevenVocabularySumToTheVocabulary) {
  const ModuleTree full = tree_of("llama", 64, 2, 4, 2, 16, 176, 301, false);
  const SizedTree sized = SizedTree::build(full, WeightDType::kBF16);
  const ModuleTree shard = shard_module_tree(full, TensorSplit{0, 2});
  const PlanRequest r = request_for("0=1GiB");
  const ParallelPlan p = parallel_plan(full, plan_model(shard, r), r, 2, 1, parse_max_memory("0=1GiB,1=1GiB"));
  ASSERT_EQ(p.devices.size(), 2u);
  // Rank 0 holds ceil(301 / 2) = 151 rows, rank 1 the other 150: 64 columns of bf16 each.
  EXPECT_EQ(p.devices[0].report.weights_bytes - p.devices[1].report.weights_bytes, 64 * 2);
  EXPECT_EQ(sum_weights(p), sized.total_bytes() + replicated_bytes(full, sized));
}

TEST(ParallelPlan, KvCacheSplitByKvHeadsOrOneReplicatedHeadPerRank) {
  const ModuleTree full = tiny_llama();  // 2 kv heads
  const PlanRequest r = request_for("0=1GiB");
  const Plan whole = plan_model(full, r);
  const std::int64_t kv = whole.devices.front().kv_cache_bytes;
  ASSERT_GT(kv, 0);
  // tp 2: one kv head each, half the cache; tp 4: the two kv heads replicated, one per rank.
  for (int tp : {2, 4}) {
    std::string all;
    for (int d = 0; d < tp; ++d) all += (d ? "," : "") + std::to_string(d) + "=1GiB";
    const ParallelPlan p = parallel_plan(full, plan_model(shard_module_tree(full, TensorSplit{0, tp}), r), r, tp, 1,
                                         parse_max_memory(all));
    for (const ParallelDevice& d : p.devices) EXPECT_EQ(d.report.kv_cache_bytes, kv / 2) << "tp " << tp;
  }
  // A model whose 8 kv heads split over 4 ranks: a quarter each.
  const ModuleTree big = llama3_8b();
  const PlanRequest rb = request_for("0=80GiB", 4096);
  const std::int64_t kv8 = plan_model(big, rb).devices.front().kv_cache_bytes;
  const ParallelPlan p4 = parallel_plan(big, plan_model(shard_module_tree(big, TensorSplit{0, 4}), rb), rb, 4, 1,
                                        parse_max_memory("0=80GiB,1=80GiB,2=80GiB,3=80GiB"));
  for (const ParallelDevice& d : p4.devices) EXPECT_EQ(d.report.kv_cache_bytes, kv8 / 4);
}

TEST(ParallelPlan, PipelineStagesAreGroupsOfTensorParallelDevices) {
  const ModuleTree full = llama3_8b();
  const ModuleTree shard = shard_module_tree(full, TensorSplit{0, 2});
  // One rank's plan over two stages (group budgets: accelerator s is stage s).
  const PlanRequest r = request_for("0=6GiB,1=6GiB", 4096);
  const Plan plan = plan_model(shard, r);
  const ParallelPlan p = parallel_plan(full, plan, r, 2, 2, parse_max_memory("0=6GiB,1=7GiB,2=6GiB,3=8GiB"));
  ASSERT_EQ(p.devices.size(), 4u);
  for (int d = 0; d < 4; ++d) {
    const ParallelDevice& x = p.devices[static_cast<std::size_t>(d)];
    EXPECT_EQ(x.device, DeviceId::accelerator(d));
    EXPECT_EQ(x.tp_rank, d % 2);
    EXPECT_EQ(x.pp_stage, d / 2);
    // The device's own budget; its stage's layers, as the rank's plan put them on the stage.
    EXPECT_EQ(x.budget_bytes, parse_max_memory("0=6GiB,1=7GiB,2=6GiB,3=8GiB").get(DeviceId::accelerator(d)));
    EXPECT_EQ(x.report.layers, plan.devices[static_cast<std::size_t>(d / 2)].layers);
  }
  EXPECT_TRUE(p.devices[0].report.holds_embedding && p.devices[1].report.holds_embedding);
  EXPECT_TRUE(p.devices[2].report.holds_lm_head && p.devices[3].report.holds_lm_head);
  EXPECT_FALSE(p.devices[2].report.holds_embedding);
  // Both ranks of a stage hold the same bytes (8 kv heads and 128256 vocabulary rows split evenly).
  EXPECT_EQ(p.devices[0].report.total_bytes, p.devices[1].report.total_bytes);
  EXPECT_EQ(p.devices[2].report.total_bytes, p.devices[3].report.total_bytes);
  const Json j = parallel_devices_to_json(p);
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[3]["device"], 3);
  EXPECT_EQ(j[3]["tp_rank"], 1);
  EXPECT_EQ(j[3]["pp_stage"], 1);
  EXPECT_EQ(j[3]["weights_bytes"], p.devices[3].report.weights_bytes);
  EXPECT_NE(parallel_plan_to_table(p).find("tensor parallel 2 × pipeline parallel 2: 4 devices"), std::string::npos);
}

TEST(ParallelPlan, HeadsThatDoNotSplitAreAnInputError) {
  const ModuleTree full = tiny_llama();
  const PlanRequest r = request_for("0=1GiB");
  const Plan plan = plan_model(full, r);
  try {
    parallel_plan(full, plan, r, 3, 1, parse_max_memory("0=1GiB,1=1GiB,2=1GiB"));
    FAIL() << "tp 3 on 4 heads";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("4 attention heads, 2 kv heads"), std::string::npos) << m;
    EXPECT_NE(m.find("--tp 1, 2, 4 work"), std::string::npos) << m;
  }
}

// Facts of a GPU with a given collective latency and link.
FactsOf gpu_with_link(double latency, double link) {
  DeviceFacts f = *builtin_gpu_facts("h100-sxm");
  f.collective_latency_s = latency;
  f.link_bandwidth = link;
  return [f](int) { return f; };
}

TEST(CostModelTensorParallel, CollectivesAddTwoAllReducesPerLayerAndTheLogitsGather) {
  const ModuleTree full = llama3_8b();  // 32 layers, hidden 4096, vocab 128256
  const ModuleTree shard = shard_module_tree(full, TensorSplit{0, 2});
  const Plan plan = plan_model(shard, request_for("0=80GiB", 4096));
  PredictShape shape;
  shape.tensor_parallel = 2;
  const Prediction free_link = predict_plan(shard, plan, gpu_with_link(0, 1e30), false, shape);
  const Prediction slow = predict_plan(shard, plan, gpu_with_link(1e-3, 1e9), false, shape);
  // One token: 64 all-reduces of 4096 float32 (a ring moves 2(n-1)/n = 1 of them) and one gather
  // of 2 × 64128 float32 logits (half of them cross), each 1 ms of latency, at 1 GB/s.
  const double comm = 64 * (1e-3 + 4096.0 * 4 / 1e9) + 1e-3 + 0.5 * 2 * 64128 * 4 / 1e9;
  EXPECT_NEAR(1 / slow.decode_tokens_per_s_1 - 1 / free_link.decode_tokens_per_s_1, comm, 1e-9);
  EXPECT_EQ(slow.bottleneck.resource, "communication");
  EXPECT_GT(slow.communication_share, 0.5);
  EXPECT_EQ(slow.tensor_parallel, 2);
  EXPECT_DOUBLE_EQ(slow.all_reduce_bytes_per_token, 2.0 * 32 * 4096 * 4);
  EXPECT_NEAR(free_link.communication_share, 0, 1e-12);
  const Json j = prediction_to_json(slow);
  EXPECT_EQ(j["tensor_parallel"], 2);
  EXPECT_TRUE(j.contains("communication_share"));
  EXPECT_NE(prediction_to_text(slow).find("tensor parallel 2"), std::string::npos);
}

TEST(CostModelTensorParallel, EachRankReadsHalfTheSplitWeights) {
  const ModuleTree full = llama3_8b();
  const Plan one = plan_model(full, request_for("0=80GiB", 4096));
  const ModuleTree shard = shard_module_tree(full, TensorSplit{0, 2});
  const Plan rank = plan_model(shard, request_for("0=80GiB", 4096));
  PredictShape shape;
  shape.tensor_parallel = 2;
  const FactsOf h100 = gpu_with_link(0, 1e30);
  const Prediction a = predict_plan(full, one, h100, false);
  const Prediction b = predict_plan(shard, rank, h100, false, shape);
  // Decode reads the weights (less the embedding's rows) and the KV cache once per token: a rank
  // reads half of each (the embedding and norms are not read per token).
  EXPECT_NEAR(b.decode_tokens_per_s_1 / a.decode_tokens_per_s_1, 2.0, 0.01);
  // Energy: two devices working.
  ASSERT_TRUE(a.joules_per_token && b.joules_per_token);
  EXPECT_NEAR(*b.joules_per_token / *a.joules_per_token, 1.0, 0.01);
  // Without tensor_parallel the prediction is the one of the whole model: no collectives.
  const Prediction c = predict_plan(full, one, h100, false, PredictShape{});
  EXPECT_EQ(c.tensor_parallel, 1);
  EXPECT_FALSE(prediction_to_json(c).contains("tensor_parallel"));
  EXPECT_EQ(c.decode_tokens_per_s_1, a.decode_tokens_per_s_1);
}

TEST(CostModelTensorParallel, DefaultLinkFacts) {
  // NVLink GPUs: 10 µs a collective; PCIe ones 25 µs; virtual devices one thread hand-off.
  EXPECT_DOUBLE_EQ(builtin_gpu_facts("h100-sxm")->collective_latency_s, 10e-6);
  EXPECT_DOUBLE_EQ(builtin_gpu_facts("l40s")->collective_latency_s, 25e-6);
  HostCalibration c;  // a calibration file without hand-off measurements
  HostThroughput t;
  t.threads = 4;
  t.memory_bandwidth = 20e9;
  t.flops_f32 = t.flops_16bit = 100e9;
  c.by_threads.push_back(t);
  c.copy_bandwidth = 8e9;
  c.disk_read_bandwidth = 2e9;
  EXPECT_DOUBLE_EQ(virtual_device_facts(c, 2, "t").collective_latency_s, kDefaultHandoffS);
  c.handoff_s = 30e-6;
  EXPECT_DOUBLE_EQ(virtual_device_facts(c, 2, "t").collective_latency_s, 30e-6);
  EXPECT_DOUBLE_EQ(virtual_device_facts(c, 2, "t").link_bandwidth, c.copy_bandwidth);
}

}  // namespace
}  // namespace plexus
