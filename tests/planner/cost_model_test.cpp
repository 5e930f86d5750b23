// The roofline cost model against hand-computed bounds: decode on a GPU reads every weight once
// per token (memory bound), large batches turn compute bound, offloaded weights are bound by the
// host link, streamed weights are copied once and read from their slot, sleeping threads' hand-offs
// add, energy follows the power facts; and the facts' JSON round trips.
#include <gtest/gtest.h>

#include "core/error.h"
#include "planner/cost_model.h"
#include "planner/planner.h"
#include "planner/stage_layout.h"
#include "test_models.h"

namespace plexus {
namespace {

using namespace plexus::testing;

HostThroughput measured(int threads, double bw, double f32, double f16) {
  HostThroughput h;
  h.threads = threads;
  h.memory_bandwidth = bw;
  h.flops_f32 = f32;
  h.flops_16bit = f16;
  return h;
}

Plan plan_for(const ModuleTree& t, const std::string& budgets, Strategy s = Strategy::kStages, std::int64_t batch = 1) {
  PlanRequest r;
  r.strategy = s;
  r.dtype = WeightDType::kBF16;
  r.budgets = parse_max_memory(budgets);
  r.runtime.context = 4096;
  r.runtime.batch = batch;
  r.runtime.prefill_chunk = 512;
  return plan_model(t, r);
}

FactsOf gpu(const std::string& name) {
  const DeviceFacts f = *builtin_gpu_facts(name);
  return [f](int) { return f; };
}

TEST(CostModel, DecodeOnOneGpuReadsTheWeightsOncePerToken) {
  const ModuleTree t = llama3_8b();
  const Plan p = plan_for(t, "0=80GiB");
  const Prediction x = predict_plan(t, p, gpu("h100-sxm"), false);
  // 16 GB of bf16 weights (less the embedding, a row lookup; norms are a rounding error) + the
  // float32 KV cache at half the context, at 3.35 TB/s.
  const double weights = static_cast<double>(p.model_bytes - 128256LL * 4096 * 2);
  const double kv = static_cast<double>(p.runtime.context / 2) * 32 * 2 * 1024 * 4;
  EXPECT_NEAR(x.decode_tokens_per_s_1, 3350e9 / (weights + kv), 1.0);
  EXPECT_EQ(x.bottleneck.resource, "memory_bandwidth");
  EXPECT_EQ(x.bottleneck.device, DeviceId::accelerator(0));
  // Prefill is compute bound: ~2 × 8e9 FLOP per token at 989 TFLOP/s, a few tens of thousands tokens/s.
  EXPECT_GT(x.prefill_tokens_per_s, 20000);
  EXPECT_LT(x.prefill_tokens_per_s, 989e12 / (2 * 7e9));
  EXPECT_NEAR(x.seconds_to_first_token, static_cast<double>(p.runtime.context) / x.prefill_tokens_per_s, 1e-9);
  ASSERT_TRUE(x.joules_per_token.has_value());
  EXPECT_NEAR(*x.joules_per_token, 700.0 / x.decode_tokens_per_s_1, 0.05);  // busy the whole step
}

TEST(CostModel, BatchesAmortiseTheWeightsUntilComputeBinds) {
  const ModuleTree t = llama3_8b();
  const Prediction one = predict_plan(t, plan_for(t, "0=80GiB", Strategy::kStages, 1), gpu("h100-sxm"), false);
  const Prediction b64 = predict_plan(t, plan_for(t, "0=80GiB", Strategy::kStages, 64), gpu("h100-sxm"), false);
  EXPECT_GT(b64.decode_tokens_per_s_batch, 10 * one.decode_tokens_per_s_batch);
  EXPECT_EQ(b64.decode_tokens_per_s_1, one.decode_tokens_per_s_1);
  EXPECT_LT(*b64.joules_per_token, *one.joules_per_token);
}

TEST(CostModel, FasterMemoryPredictsFasterDecode) {
  const ModuleTree t = llama3_8b();
  const Plan p = plan_for(t, "0=80GiB");
  EXPECT_GT(predict_plan(t, p, gpu("h200"), false).decode_tokens_per_s_1,
            1.3 * predict_plan(t, p, gpu("h100-sxm"), false).decode_tokens_per_s_1);
  EXPECT_LT(predict_plan(t, p, gpu("rtx-4090"), false).decode_tokens_per_s_1,
            predict_plan(t, p, gpu("a100-80gb"), false).decode_tokens_per_s_1);
}

TEST(CostModel, OffloadedWeightsAreBoundByTheHostLink) {
  const ModuleTree t = llama3_8b();
  const Plan p = plan_for(t, "0=6GiB,cpu=64GiB");
  const Prediction x = predict_plan(t, p, gpu("a100-80gb"), false);
  EXPECT_EQ(x.bottleneck.resource, "offload_stream");
  std::int64_t on_cpu = 0;
  for (const DeviceReport& d : p.devices)
    if (d.device == DeviceId::cpu()) on_cpu += d.weights_bytes;
  EXPECT_LT(x.decode_tokens_per_s_1, 32e9 / static_cast<double>(on_cpu - 128256LL * 4096 * 2) * 1.01);
}

TEST(CostModel, VirtualDevicesSumTheirStages) {
  const ModuleTree t = smollm_135m();
  HostCalibration c;
  c.by_threads = {measured(1, 10e9, 50e9, 50e9)};
  c.copy_bandwidth = 10e9;
  c.disk_read_bandwidth = 5e9;
  c.idle_w = 10;
  c.busy_w = 40;
  const FactsOf facts = [c](int) { return virtual_device_facts(c, 1, "test"); };
  const Prediction one = predict_plan(t, plan_for(t, "0=1GiB"), facts, true);
  const Prediction two = predict_plan(t, plan_for(t, "0=1GiB,1=1GiB"), facts, true);
  // The same bytes at the same bandwidth, one stage after the other: about the same speed.
  EXPECT_NEAR(two.decode_tokens_per_s_1 / one.decode_tokens_per_s_1, 1.0, 0.05);
  EXPECT_NEAR(*one.joules_per_token, 40.0 / one.decode_tokens_per_s_1, 1e-6);  // one host, busy
}

// One thread: 10 GB/s from memory at one token, 40 GB/s at eight; copies 10 GB/s, disk 5 GB/s.
HostCalibration one_thread_calibration() {
  HostCalibration c;
  c.by_threads = {measured(1, 10e9, 50e9, 50e9)};
  c.by_threads[0].weight_rate_by_tokens = {{1, 10e9}, {8, 40e9}};
  c.copy_bandwidth = 10e9;
  c.disk_read_bandwidth = 5e9;
  return c;
}

TEST(CostModel, StreamedWeightsAreCopiedOnceAndReadFromTheSlot) {
  const ModuleTree t = smollm_135m();
  HostCalibration c = one_thread_calibration();
  const Plan p = plan_for(t, "0=100MiB,cpu=1GiB", Strategy::kAuto);
  double streamed = 0;
  for (const DeviceReport& d : p.devices)
    if (d.device == DeviceId::cpu()) streamed = static_cast<double>(d.weights_bytes);
  ASSERT_GT(streamed, 0);
  auto predict = [&](const HostCalibration& cal) {
    const FactsOf facts = [cal](int) { return virtual_device_facts(cal, 1, "test"); };
    return predict_plan(t, p, facts, true).decode_tokens_per_s_1;
  };
  const double unmeasured = predict(c);
  // Measured: the copies into slots at 20 GB/s (not the large memcpy's 10), and the kernel reads
  // a just-copied slot at 40 GB/s (not memory's 10): one thread, so the copy adds to the compute.
  c.slot_copy_bandwidth = 20e9;
  c.by_threads[0].streamed_weight_rate = 40e9;
  const double measured_slot = predict(c);
  const double saved = streamed * (1 / 10e9 - 1 / 20e9) + streamed * (1 / 10e9 - 1 / 40e9);
  // (The cpu's planned bytes include the f32 norm vectors, which are not streamed: 0.1 % at most.)
  EXPECT_NEAR(1 / unmeasured - 1 / measured_slot, saved, 1e-3 * saved);
  EXPECT_DOUBLE_EQ(virtual_device_facts(c, 1, "x").host_copy_bandwidth, 20e9);
}

TEST(CostModel, EachStageAndStreamedModuleCostsAHandOff) {
  const ModuleTree t = smollm_135m();
  HostCalibration c = one_thread_calibration();
  auto seconds = [&](const Plan& p, double handoff) {
    HostCalibration cal = c;
    cal.handoff_s = handoff;
    const FactsOf facts = [cal](int) { return virtual_device_facts(cal, 1, "test"); };
    return 1 / predict_plan(t, p, facts, true).decode_tokens_per_s_1;
  };
  // Resident on two devices: the start, the end and each stage's wait.
  const Plan two = plan_for(t, "0=1GiB,1=1GiB");
  const double stages = static_cast<double>(make_stage_layout(t, two.device_map, 2).stages.size());
  EXPECT_NEAR(seconds(two, 1e-4) - seconds(two, 0), (stages + 1) * 1e-4, 1e-12);
  // Streamed on one thread (copies add): one more per streamed module.
  const Plan streamed = plan_for(t, "0=100MiB,cpu=1GiB", Strategy::kAuto);
  const StageLayout l = make_stage_layout(t, streamed.device_map, 1);
  double modules = l.head.residence != Residence::kDevice ? 1 : 0;
  for (const ModulePlace& m : l.layers) modules += m.residence != Residence::kDevice ? 1 : 0;
  ASSERT_GT(modules, 0);
  EXPECT_NEAR(seconds(streamed, 1e-4) - seconds(streamed, 0), (static_cast<double>(l.stages.size()) + 1 + modules) * 1e-4,
              1e-12);
}

// Flat weight rates (per thread count) and nothing else costing: the step is its weight reads.
HostCalibration flat_calibration() {
  HostCalibration c;
  c.by_threads = {measured(1, 1e15, 1e15, 1e15), measured(2, 1e15, 1e15, 1e15)};
  c.by_threads[0].weight_rate_by_tokens = {{1, 10e9}, {64, 10e9}};
  c.by_threads[1].weight_rate_by_tokens = {{1, 20e9}, {64, 20e9}};
  c.copy_bandwidth = 1e15;
  c.disk_read_bandwidth = 1e15;
  return c;
}

// The executor cuts a batch into one micro-batch per stage, so 4 virtual devices at batch 4 read
// their weights once per sequence, and 4 devices of one thread on 2 cores go no faster than the
// host computing everything with both threads: at most the host's throughput at batch 1 (a bit
// less here: device 0 also computes the tied head, and the pipeline waits for it).
TEST(CostModel, VirtualDevicesRunTheExecutorsMicroBatchesOnTheHostsCores) {
  const ModuleTree t = smollm_135m();
  const HostCalibration c = flat_calibration();
  const FactsOf facts = [c](int d) { return d == kHostDevice ? host_facts(c, 2, "t") : virtual_device_facts(c, 1, "t"); };
  PredictShape shared;
  shared.concurrency = 2;  // 2 host threads, one per device
  const Plan four = plan_for(t, "0=1GiB,1=1GiB,2=1GiB,3=1GiB,cpu=4GiB", Strategy::kStages, 4);
  ASSERT_GE(make_stage_layout(t, four.device_map, 4).stages.size(), 4u);  // 5: the tied head rides with the embedding
  const Prediction x = predict_plan(t, four, facts, true, shared);
  const Prediction host = predict_plan(t, plan_for(t, "cpu=4GiB"), facts, true);
  EXPECT_LE(x.decode_tokens_per_s_batch, host.decode_tokens_per_s_1 * (1 + 1e-9));
  EXPECT_GT(x.decode_tokens_per_s_batch, host.decode_tokens_per_s_1 * 0.9);
  // One sequence: one micro-batch through the stages, one device (one thread) at a time.
  EXPECT_NEAR(x.decode_tokens_per_s_1 / host.decode_tokens_per_s_1, 0.5, 0.01);
}

// Without accelerators the host computes the whole model from its own memory: nothing streams,
// and the work runs on the caller's thread (no hand-offs), however slowly threads wake here.
TEST(CostModel, TheHostAloneReadsInPlaceWithoutHandOffs) {
  const ModuleTree t = smollm_135m();
  HostCalibration c = flat_calibration();
  const Plan p = plan_for(t, "cpu=4GiB");
  auto predict = [&](double handoff) {
    c.handoff_s = handoff;
    return predict_plan(t, p, [c](int) { return host_facts(c, 2, "t"); }, true);
  };
  const Prediction slow = predict(1e-3), fast = predict(0);
  EXPECT_EQ(slow.decode_tokens_per_s_1, fast.decode_tokens_per_s_1);
  EXPECT_EQ(slow.bottleneck.resource, "memory_bandwidth");
  EXPECT_EQ(slow.bottleneck.device, DeviceId::cpu());
}

TEST(CostModel, NeedsAContextAndKnowsItsGpus) {
  const ModuleTree t = tiny_llama();
  PlanRequest r;
  r.budgets = parse_max_memory("0=1GiB");
  EXPECT_THROW(predict_plan(t, plan_model(t, r), gpu("h100-sxm"), false), InputError);
  for (const std::string& n : builtin_gpu_names()) EXPECT_TRUE(builtin_gpu_facts(n).has_value()) << n;
  EXPECT_TRUE(builtin_gpu_facts("H100_SXM").has_value());
  EXPECT_FALSE(builtin_gpu_facts("h100").has_value());
}

TEST(DeviceFacts, CalibrationRoundTripsAndRejectsBadFiles) {
  HostCalibration c;
  c.cpu = "test cpu";
  c.by_threads = {measured(1, 10e9, 50e9, 40e9), measured(4, 30e9, 180e9, 150e9)};
  c.by_threads[1].weight_rate_by_tokens = {{1, 30e9}, {8, 60e9}};
  c.by_threads[1].launch_overhead_s = 2e-6;
  c.by_threads[1].streamed_weight_rate = 45e9;
  c.copy_bandwidth = 12e9;
  c.slot_copy_bandwidth = 15e9;
  c.handoff_s = 5e-5;
  c.disk_read_bandwidth = 3e9;
  const HostCalibration back = host_calibration_from_json(host_calibration_to_json(c), "x");
  EXPECT_EQ(back.by_threads.size(), 2u);
  EXPECT_EQ(back.by_threads[1].flops_f32, 180e9);
  EXPECT_FALSE(back.idle_w.has_value());
  EXPECT_EQ(back.by_threads[1].weight_rate_by_tokens, c.by_threads[1].weight_rate_by_tokens);
  EXPECT_EQ(back.by_threads[1].launch_overhead_s, 2e-6);
  EXPECT_EQ(back.by_threads[1].streamed_weight_rate, 45e9);
  EXPECT_EQ(back.slot_copy_bandwidth, 15e9);
  EXPECT_EQ(back.handoff_s, 5e-5);
  // Two threads: the one-thread entry scaled; eight: no more than the four measured.
  EXPECT_DOUBLE_EQ(virtual_device_facts(back, 2, "x").memory_bandwidth, 20e9);
  EXPECT_DOUBLE_EQ(virtual_device_facts(back, 8, "x").memory_bandwidth, 30e9);
  Json bad = host_calibration_to_json(c);
  bad["by_threads"][0]["flops_f32"] = -1;
  EXPECT_THROW(host_calibration_from_json(bad, "x"), InputError);
  EXPECT_THROW(host_calibration_from_json(Json{{"format", "other"}}, "x"), InputError);
}

}  // namespace
}  // namespace plexus
