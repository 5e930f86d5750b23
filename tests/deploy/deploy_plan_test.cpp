// plexus deploy's core: the inventory read back from `detect --json`, device selection
// (--devices, --auto-select, all, CPU), the plan's numbers per engine, names and --env.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "backend/device_info.h"
#include "core/error.h"
#include "core/json.h"
#include "deploy/deploy_plan.h"
#include "deploy/device_selection.h"
#include "deploy/gpu_models.h"
#include "deploy/model_facts.h"

namespace plexus::deploy {
namespace {

const std::string kPlanData = std::string(PLEXUS_SOURCE_DIR) + "/tests/deploy/data";

Inventory inventory(const std::string& name) {
  return inventory_from_json(read_json_file(kPlanData + "/" + name), name);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

DeployRequest request(const std::string& model, Target target = Target::kDocker, ApiType api = ApiType::kPlexus) {
  DeployRequest r;
  r.model = kPlanData + "/" + model;
  r.target = target;
  r.api_type = api;
  return r;
}

TEST(InventoryJson, RoundTripsEveryField) {
  Inventory inv;
  DeviceInfo d;
  d.index = 0;
  d.kind = DeviceKind::kCuda;
  d.name = "NVIDIA H100 80GB HBM3";
  d.uuid = "GPU-1";
  d.memory_total_bytes = 80ULL << 30;
  d.memory_free_bytes = 79ULL << 30;
  d.memory_used_bytes = 1ULL << 30;
  d.compute_capability = "9.0";
  d.driver_version = "550.54.15";
  d.pci_bus_id = "00000000:18:00.0";
  d.power_limit_w = 700.0;
  d.temperature_c = 31.5;
  d.sm_clock_mhz = 1980;
  d.memory_clock_mhz = 2619;
  d.max_sm_clock_mhz = 1980;
  d.max_memory_clock_mhz = 2619;
  d.processes = 2;
  d.cuda_device = "cuda:0";
  d.problems = {"temperature: not supported"};
  inv.devices.push_back(d);
  DeviceInfo v;  // a virtual device with the optional fields empty
  v.index = 1;
  v.kind = DeviceKind::kVirtual;
  v.name = "virtual cpu 1";
  v.threads = 4;
  v.virtual_on_gpu = 0;
  inv.devices.push_back(v);
  inv.topology = {{"X", "SHM"}, {"SHM", "X"}};
  inv.p2p = {{"X", "NS"}, {"NS", "X"}};
  inv.host.cpu_model = "Xeon";
  inv.host.logical_cores = 8;
  inv.host.physical_cores = 4;
  inv.host.sockets = 1;
  inv.host.numa_nodes = 1;
  inv.host.memory_total_bytes = 64ULL << 30;
  inv.host.memory_available_bytes = 60ULL << 30;
  inv.host.isa.avx2 = true;
  inv.host.isa.amx_int8 = true;
  inv.nvml_status = "ok: driver 550.54.15, 1 GPUs";
  inv.rocm_status = "unavailable: none";
  inv.cuda_status = "ok: CUDA runtime 12.4";
  inv.virtual_devices = true;
  const Json j = to_json(inv);
  const Inventory back = inventory_from_json(j, "inv.json");
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.devices[0].compute_capability, "9.0");
  EXPECT_FALSE(back.devices[1].memory_total_bytes.has_value());
  EXPECT_EQ(back.host.logical_cores, 8);
}

TEST(InventoryJson, TestInventoriesAreDetectShaped) {
  for (const char* name : {"h100x2.json", "l4x4.json", "cpu_only.json"}) {
    const Json j = read_json_file(kPlanData + "/" + name);
    EXPECT_EQ(to_json(inventory_from_json(j, name)), j) << name;
  }
}

TEST(InventoryJson, MalformedNamesFileAndField) {
  EXPECT_NE(error_of([] { inventory_from_json(Json::array(), "inv.json"); }).find("inv.json"), std::string::npos);
  EXPECT_NE(error_of([] { inventory_from_json(Json{{"host", Json::object()}}, "inv.json"); }).find("'devices'"), std::string::npos);
  Json j = read_json_file(kPlanData + "/l4x4.json");
  j["devices"][1]["memory_free_bytes"] = "lots";
  const std::string e = error_of([&] { inventory_from_json(j, "l4x4.json"); });
  EXPECT_NE(e.find("l4x4.json: devices[1]"), std::string::npos) << e;
  EXPECT_NE(e.find("memory_free_bytes"), std::string::npos) << e;
  Json k = read_json_file(kPlanData + "/l4x4.json");
  k["devices"][0]["kind"] = "tpu";
  EXPECT_NE(error_of([&] { inventory_from_json(k, "x.json"); }).find("'tpu'"), std::string::npos);
  Json t = read_json_file(kPlanData + "/l4x4.json");
  t["topology"].erase(0);
  EXPECT_NE(error_of([&] { inventory_from_json(t, "x.json"); }).find("'topology'"), std::string::npos);
  Json h = read_json_file(kPlanData + "/l4x4.json");
  h.erase("host");
  EXPECT_NE(error_of([&] { inventory_from_json(h, "x.json"); }).find("'host'"), std::string::npos);
}

TEST(DeviceSelection, NamedDevicesMustExist) {
  const std::vector<SelectedGpu> gpus = inventory_gpus(inventory("l4x4.json"), "l4x4.json");
  ASSERT_EQ(gpus.size(), 4u);
  const DeviceSelection s = select_named(gpus, {3, 1});
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[0].index, 3);
  EXPECT_EQ(s.gpus[1].index, 1);
  const std::string e = error_of([&] { select_named(gpus, {0, 7}); });
  EXPECT_NE(e.find("--devices: GPU 7 does not exist"), std::string::npos) << e;
  EXPECT_NE(e.find("3 (NVIDIA L4, 14.0 GiB free)"), std::string::npos) << e;
}

TEST(DeviceSelection, VirtualDevicesAreNotGpus) {
  Inventory inv = inventory("cpu_only.json");
  DeviceInfo v;
  v.kind = DeviceKind::kVirtual;
  v.name = "virtual 0";
  inv.devices.push_back(v);
  EXPECT_TRUE(inventory_gpus(inv, "x").empty());
  EXPECT_NE(select_all({}, 16).reason.find("no GPU"), std::string::npos);
}

TEST(DeviceSelection, AutoSelectTakesTheFewestWithTheMostFreeMemory) {
  const std::vector<SelectedGpu> gpus = inventory_gpus(inventory("l4x4.json"), "l4x4.json");  // free 12, 16, 10, 14 GiB
  // Fits when the picked GPUs have 28 GiB free together.
  const FitCheck fit = [](const std::vector<SelectedGpu>& pick) {
    FitResult f;
    std::uint64_t free = 0;
    for (const SelectedGpu& g : pick) free += g.memory_free_bytes;
    f.fits = free >= (28ULL << 30);
    f.per_gpu_bytes = 13LL << 30;
    f.why = "too small";
    return f;
  };
  const DeviceSelection s = auto_select(gpus, fit, [](int) { return true; });
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[0].index, 1);
  EXPECT_EQ(s.gpus[1].index, 3);
  EXPECT_NE(s.reason.find("GPUs 1,3: the plan needs 13.0 GiB per GPU for 2 GPUs"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("GPU 0, the next, has 12.0 GiB free"), std::string::npos) << s.reason;
  // Only even counts allowed and 4 needed.
  const FitCheck big = [](const std::vector<SelectedGpu>& pick) {
    FitResult f;
    f.fits = pick.size() == 4;
    f.why = "needs 4";
    return f;
  };
  EXPECT_EQ(auto_select(gpus, big, [](int k) { return k % 2 == 0; }).gpus.size(), 4u);
  const FitCheck none = [](const std::vector<SelectedGpu>&) { return FitResult{false, 0, "the model needs 200 GiB"}; };
  const std::string e = error_of([&] { auto_select(gpus, none, [](int) { return true; }); });
  EXPECT_NE(e.find("--auto-select"), std::string::npos) << e;
  EXPECT_NE(e.find("the model needs 200 GiB"), std::string::npos) << e;
}

// The GPU model table: a whole word of the name, the longer keys first.
TEST(DeviceSelection, GpuModelsGiveSlurmTypes) {
  auto type = [](const std::string& name) {
    const GpuModel* m = gpu_model_of(name);
    return m ? std::string(m->gres_type) : std::string("(none)");
  };
  EXPECT_EQ(type("NVIDIA A100-SXM4-80GB"), "a100");
  EXPECT_EQ(type("NVIDIA A10"), "a10");
  EXPECT_EQ(type("NVIDIA H100 80GB HBM3"), "h100");
  EXPECT_EQ(type("NVIDIA GH200 480GB"), "gh200");
  EXPECT_EQ(type("NVIDIA L40S"), "l40s");
  EXPECT_EQ(type("NVIDIA L4"), "l4");
  EXPECT_EQ(type("Tesla V100-SXM2-16GB"), "v100");
  EXPECT_EQ(type("NVIDIA GeForce RTX 4090"), "rtx_4090");
  EXPECT_EQ(type("NVIDIA Graphics Device"), "(none)");
  const SlurmGpuType two = slurm_gpu_type({{0, "NVIDIA A100-SXM4-80GB", 0, 0, {}}, {1, "NVIDIA A100-SXM4-80GB", 0, 0, {}}}, {});
  EXPECT_EQ(two.type, "a100");
  const SlurmGpuType mixed = slurm_gpu_type({{0, "NVIDIA A100-SXM4-80GB", 0, 0, {}}, {1, "NVIDIA H100 80GB HBM3", 0, 0, {}}}, {});
  EXPECT_EQ(mixed.type, "");
  EXPECT_NE(mixed.reason.find("different models (a100, h100)"), std::string::npos) << mixed.reason;
  EXPECT_EQ(slurm_gpu_type({{0, "NVIDIA A100", 0, 0, {}}}, std::string("none")).type, "");
}

TEST(DeviceSelection, CudaArchitectures) {
  auto arch = [](const std::string& name, std::optional<std::string> cc) { return cuda_architecture({0, name, 0, 0, cc}); };
  EXPECT_EQ(arch("anything", "9.0"), "90");
  EXPECT_EQ(arch("anything", "10.0"), "100");
  EXPECT_EQ(arch("NVIDIA H100 80GB HBM3", std::nullopt), "90");
  EXPECT_EQ(arch("NVIDIA H200", std::nullopt), "90");
  EXPECT_EQ(arch("NVIDIA A100-SXM4-80GB", std::nullopt), "80");
  EXPECT_EQ(arch("NVIDIA A10", std::nullopt), "86");
  EXPECT_EQ(arch("NVIDIA L4", std::nullopt), "89");
  EXPECT_EQ(arch("NVIDIA L40S", std::nullopt), "89");
  EXPECT_EQ(arch("NVIDIA GeForce RTX 4090", std::nullopt), "89");
  EXPECT_EQ(arch("NVIDIA B200", std::nullopt), "100");
  const std::string e = error_of([&] { arch("NVIDIA Quantum 9000", std::nullopt); });
  EXPECT_NE(e.find("inventory from the target"), std::string::npos) << e;
  EXPECT_EQ(cuda_architectures({{0, "a", 0, 0, "9.0"}, {1, "b", 0, 0, "8.0"}, {2, "c", 0, 0, "9.0"}}),
            (std::vector<std::string>{"80", "90"}));
}

TEST(DeployPlan, AutoSelectPicksTwoOfFourGpus) {
  DeployRequest r = request("llama-8b-config");
  r.auto_select = true;
  const DeployPlan p = plan_deployment(r, inventory("l4x4.json"));
  ASSERT_EQ(p.devices.gpus.size(), 2u);
  EXPECT_EQ(p.devices.gpus[0].index, 1);
  EXPECT_EQ(p.devices.gpus[1].index, 3);
  EXPECT_NE(p.devices.reason.find("it does not fit 1 GPU"), std::string::npos) << p.devices.reason;
  EXPECT_EQ(p.gpus_per_node, 2);
  EXPECT_EQ(p.cuda_architectures, std::vector<std::string>{"89"});  // "NVIDIA L4", no compute capability in the inventory
  EXPECT_GT(p.numbers.gpu_bytes_needed, 10LL << 30);
  EXPECT_LE(p.numbers.gpu_bytes_needed, 16LL << 30);
  EXPECT_EQ(p.numbers.context, 4096);
  EXPECT_EQ(p.numbers.max_sequences, 8);
  EXPECT_EQ(p.numbers.plexus_plan_args, (std::vector<std::string>{"--context", "4096"}));
  EXPECT_EQ(p.numbers.shm_bytes, 16LL << 30);
  EXPECT_EQ(p.numbers.host_memory_bytes, 4LL << 30);  // nothing offloaded: the process and 1 GiB per GPU
  EXPECT_EQ(p.cpus, 16);  // 2 of the 4 GPUs: half of the 32 cores
}

TEST(DeployPlan, CpusAreTheGpusShareLeavingSomeToTheSystem) {
  EXPECT_EQ(cpus_for(64, 2, 2), 60);  // every GPU: all cores but 64/16
  EXPECT_EQ(cpus_for(32, 2, 4), 16);
  EXPECT_EQ(cpus_for(16, 0, 0), 15);  // CPU deployment
  EXPECT_EQ(cpus_for(1, 0, 0), 1);
  EXPECT_EQ(cpus_for(8, 1, 8), 1);
}

TEST(DeployPlan, ModelThatFitsNoSelectionIsAnInputError) {
  DeployRequest r = request("llama-70b-config");
  r.auto_select = true;
  EXPECT_NE(error_of([&] { plan_deployment(r, inventory("l4x4.json")); }).find("--auto-select: the plan does not fit even the 4 GPUs"),
            std::string::npos);
  r.auto_select = false;
  const std::string e = error_of([&] { plan_deployment(r, inventory("l4x4.json")); });
  EXPECT_NE(e.find("the plan does not fit GPUs 0,1,2,3"), std::string::npos) << e;
  EXPECT_EQ(e.find("--max-memory"), std::string::npos) << e;  // the planner's advice for this machine is cut
  r.devices = std::vector<long long>{0, 9};
  EXPECT_NE(error_of([&] { plan_deployment(r, inventory("l4x4.json")); }).find("GPU 9 does not exist"), std::string::npos);
  r.auto_select = true;
  EXPECT_NE(error_of([&] { plan_deployment(r, inventory("l4x4.json")); }).find("--devices and --auto-select"), std::string::npos);
}

// vLLM and TGI are sized from config.json and the safetensors headers (here the index's
// metadata.total_size: Llama 3.1 8B's 16060522496 bytes), not plexus's plan.
TEST(DeployPlan, VllmNumbers) {
  DeployRequest r = request("llama-8b-hub", Target::kDocker, ApiType::kVllm);
  r.plan.context = 200000;  // above the model's 131072 positions: clamped
  r.max_sequences = 1;
  const DeployPlan p = plan_deployment(r, inventory("h100x2.json"));
  EXPECT_EQ(p.numbers.tensor_parallel, 2);
  EXPECT_EQ(p.numbers.pipeline_parallel, 1);
  EXPECT_EQ(p.numbers.context, 131072);
  // Per GPU: half the weights; K and V of 32 layers × 4 of the 8 KV heads × 128 × 2 bytes for
  // 131072 tokens; 256 tokens × (4 × 128256 + 32 × 4096) of activations.
  EXPECT_EQ(p.numbers.gpu_bytes_needed, 16060522496LL / 2 + 2LL * 32 * 4 * 128 * 2 * 131072 + 256LL * (4 * 128256 + 32 * 4096));
  EXPECT_EQ(p.numbers.weights_bytes, 16060522496LL);
  EXPECT_DOUBLE_EQ(p.numbers.gpu_memory_utilization, 0.90);  // vLLM's default suffices
  EXPECT_EQ(p.cuda_architectures, std::vector<std::string>{"90"});
  EXPECT_NE(p.sizing.find("metadata.total_size of model.safetensors.index.json"), std::string::npos) << p.sizing;
  EXPECT_NE(p.sizing.find("num_hidden_layers 32 × num_key_value_heads 8 × head_dim 128 (hidden_size 4096 / num_attention_heads 32)"),
            std::string::npos)
      << p.sizing;
  // Two nodes under slurm: TP within a node, PP across nodes.
  r.target = Target::kSlurm;
  r.nodes = 2;
  const DeployPlan s = plan_deployment(r, inventory("h100x2.json"));
  EXPECT_EQ(s.numbers.tensor_parallel, 2);
  EXPECT_EQ(s.numbers.pipeline_parallel, 2);
  // Sizing that needs more than 90 % of the GPU raises the fraction (capped by what is free).
  DeployRequest big = request("llama-8b-hub", Target::kDocker, ApiType::kVllm);
  big.plan.context = 125000;
  big.max_sequences = 8;
  big.devices = std::vector<long long>{0, 1};
  const DeployPlan b = plan_deployment(big, inventory("h100x2.json"));
  // 68.7 GiB on a GPU of 80: (68.7 × 1.05 + 1) / 80 = 0.914, rounded up.
  EXPECT_NEAR(b.numbers.gpu_memory_utilization, 0.92, 1e-9);
  // Beyond 0.95 (or what is free) with the margins: refused.
  big.plan.context = 131072;
  const std::string e = error_of([&] { plan_deployment(big, inventory("h100x2.json")); });
  EXPECT_NE(e.find("vLLM needs 0.96 of the smallest GPU"), std::string::npos) << e;
}

TEST(DeployPlan, VllmTensorParallelDividesTheHeads) {
  EXPECT_EQ(vllm_tensor_parallel(8, 64, 8), 8);
  EXPECT_EQ(vllm_tensor_parallel(6, 32, 8), 2);  // 6 and 3 do not divide 32 heads: TP 2, PP 3
  EXPECT_EQ(vllm_tensor_parallel(4, 32, 2), 4);  // more ranks than KV heads: vLLM replicates them
  EXPECT_EQ(vllm_tensor_parallel(3, 32, 8), 1);
  EXPECT_EQ(vllm_tensor_parallel(1, 32, 8), 1);
}

TEST(DeployPlan, TgiShardsMustDivideTheHeads) {
  DeployRequest r = request("llama-8b-hub", Target::kDocker, ApiType::kTgi);
  const DeployPlan p = plan_deployment(r, inventory("h100x2.json"));
  EXPECT_EQ(p.numbers.tensor_parallel, 2);
  r.devices = std::vector<long long>{0, 1, 3};
  const std::string e = error_of([&] { plan_deployment(r, inventory("l4x4.json")); });
  EXPECT_NE(e.find("--num-shard 3"), std::string::npos) << e;
  EXPECT_NE(e.find("32 attention heads"), std::string::npos) << e;
}

TEST(DeployPlan, TeiIsForEmbeddingModelsOnly) {
  DeployRequest tei = request("bert-config", Target::kKubernetes, ApiType::kTei);
  const DeployPlan p = plan_deployment(tei, inventory("l4x4.json"));
  EXPECT_TRUE(p.embedding_model);
  ASSERT_EQ(p.devices.gpus.size(), 1u);
  EXPECT_EQ(p.devices.gpus[0].index, 1);  // the most free memory
  EXPECT_EQ(p.numbers.context, 512);      // max_position_embeddings
  EXPECT_EQ(p.numbers.gpu_bytes_needed, 133440000 + kTeiBatchBytes);  // the index's total_size + TEI's buffers
  DeployRequest causal = request("llama-8b-config", Target::kDocker, ApiType::kTei);
  EXPECT_NE(error_of([&] { plan_deployment(causal, inventory("l4x4.json")); }).find("LlamaForCausalLM (a causal LM)"), std::string::npos);
  DeployRequest plexus = request("bert-config");
  EXPECT_NE(error_of([&] { plan_deployment(plexus, inventory("l4x4.json")); }).find("use --api-type tei"), std::string::npos);
}

TEST(DeployPlan, CpuDeploymentPlansOnHostMemory) {
  const DeployPlan p = plan_deployment(request("llama-8b-config", Target::kKubernetes), inventory("cpu_only.json"));
  EXPECT_TRUE(p.devices.gpus.empty());
  EXPECT_NE(p.devices.reason.find("no GPU"), std::string::npos);
  EXPECT_EQ(p.gpus_per_node, 0);
  EXPECT_EQ(p.numbers.gpu_bytes_needed, 0);
  EXPECT_GT(p.numbers.host_memory_bytes, 16LL << 30);  // the weights (15 GiB) and KV cache live in host memory
  EXPECT_TRUE(p.cuda_architectures.empty());
  EXPECT_EQ(p.cpus, 15);
}

TEST(DeployPlan, PlexusParallelShapeAndPlanArgs) {
  DeployRequest r = request("llama-8b-config");
  r.plan.tensor_parallel = 2;
  r.plan.dtype = "float16";
  r.plan.strategy = "balanced";
  const DeployPlan p = plan_deployment(r, inventory("h100x2.json"));
  EXPECT_EQ(p.numbers.tensor_parallel, 2);
  EXPECT_EQ(p.numbers.plexus_plan_args,
            (std::vector<std::string>{"--strategy", "balanced", "--dtype", "float16", "--tp", "2", "--context", "4096"}));
  r.devices = std::vector<long long>{0, 1, 2};
  EXPECT_NE(error_of([&] { plan_deployment(r, inventory("l4x4.json")); }).find("needs exactly 2 GPUs"), std::string::npos);
}

TEST(DeployPlan, NodesAndGpusPerNode) {
  DeployRequest r = request("llama-8b-config");
  r.nodes = 2;
  EXPECT_NE(error_of([&] { plan_deployment(r, inventory("h100x2.json")); }).find("--nodes 2"), std::string::npos);
  r.target = Target::kSlurm;
  r.nodes = 1;
  // batch.sbatch: rank 0 + 1 worker per node share the node's 60 usable cores.
  EXPECT_EQ(plan_deployment(r, inventory("h100x2.json")).cpus, 30);
  r.nodes = 2;
  r.gpus_per_node = 4;  // two replicas of the 2-GPU plan per node
  EXPECT_EQ(plan_deployment(r, inventory("h100x2.json")).gpus_per_node, 4);
  r.gpus_per_node = 3;
  EXPECT_NE(error_of([&] { plan_deployment(r, inventory("h100x2.json")); }).find("multiple"), std::string::npos);
  DeployRequest d = request("llama-8b-config");
  d.gpus_per_node = 4;
  EXPECT_NE(error_of([&] { plan_deployment(d, inventory("h100x2.json")); }).find("--gpus-per-node 4"), std::string::npos);
  DeployRequest cpu = request("llama-8b-config");
  cpu.gpus_per_node = 1;
  EXPECT_NE(error_of([&] { plan_deployment(cpu, inventory("cpu_only.json")); }).find("no GPU"), std::string::npos);
}

TEST(ModelFacts, EmbeddingArchitectures) {
  for (const char* a : {"BertModel", "XLMRobertaModel", "NomicBertModel", "MistralModel", "Qwen2Model",
                        "XLMRobertaForSequenceClassification", "BertForSequenceClassification"}) {
    EXPECT_TRUE(is_embedding_architecture(a)) << a;
  }
  for (const char* a : {"LlamaForCausalLM", "Qwen2ForCausalLM", "", "T5ForConditionalGeneration"}) {
    EXPECT_FALSE(is_embedding_architecture(a)) << a;
  }
}

TEST(ModelFacts, AppNameIsADns1123Label) {
  EXPECT_EQ(app_name_for("tiny-llama"), "plexus-tiny-llama");
  EXPECT_EQ(app_name_for("Llama-3.1_8B Instruct"), "plexus-llama-3-1-8b-instruct");
  EXPECT_EQ(app_name_for("..weird__"), "plexus-weird");
  EXPECT_EQ(app_name_for(""), "plexus");
  const std::string long_name = app_name_for(std::string(100, 'a'));
  EXPECT_EQ(long_name.size(), 63u);
  EXPECT_EQ(app_name_for(std::string(55, 'a') + "-b-c").back(), 'a');  // cut at 63, no trailing '-'
}

TEST(ModelFacts, EnvEntries) {
  EXPECT_EQ(parse_env_entry("HF_HUB_OFFLINE=1"), (std::pair<std::string, std::string>{"HF_HUB_OFFLINE", "1"}));
  EXPECT_EQ(parse_env_entry("A=b=c"), (std::pair<std::string, std::string>{"A", "b=c"}));
  EXPECT_EQ(parse_env_entry("EMPTY="), (std::pair<std::string, std::string>{"EMPTY", ""}));
  EXPECT_NE(error_of([] { parse_env_entry("NOEQUALS"); }).find("--env NOEQUALS has no '='"), std::string::npos);
  EXPECT_NE(error_of([] { parse_env_entry("1A=b"); }).find("'1A'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_env_entry("=b"); }).find("--env =b"), std::string::npos);
  EXPECT_NE(error_of([] { parse_env_entry("A-B=c"); }).find("'A-B'"), std::string::npos);
}

}  // namespace
}  // namespace plexus::deploy
