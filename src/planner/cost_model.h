// Predicting a plan's speed and energy: a roofline over device facts (pure). Per computing
// device, each forward takes max(bytes read / memory bandwidth, FLOPs / FLOP/s) (on a calibrated
// host: the measured weight rate for its token count) — and the offloaded weights' copy,
// overlapped with it when two streaming slots exist, added when one — pipelined over the stages
// in micro-batches as the executor runs them (virtual devices of one host also bound by the host
// doing all their work with all its threads), plus the activations' hops between devices and, on
// a calibrated host, the hand-offs between threads that sleep in between (a forward's start and
// end, each stage, each streamed module's copy; none when the host alone computes in place). Tensor
// parallelism: each rank computes its shard (the tree given is one rank's), and every layer adds
// two all-reduces of the tokens' hidden states, each latency + 2(N−1)/N · bytes / link bandwidth.
// Mixture-of-experts layers read the experts their tokens route to (planner/moe_reads.h); a layer
// whose experts the host keeps (--n-cpu-moe) on a separate accelerator costs the device its
// attention and router, then the host reading and computing the routed experts, then the hidden
// states' trips to the host and back (the device waits), the host computing for every device.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "core/json.h"
#include "planner/device_facts.h"
#include "planner/planner.h"

namespace plexus {

struct Bottleneck {
  DeviceId device = DeviceId::cpu();
  // "compute" | "memory_bandwidth" | "link" | "offload_stream" | "communication" (tp collectives) |
  // "host_experts" (the host computing the experts it keeps, and the hidden states' trips there and back)
  std::string resource;
};

struct Prediction {
  std::int64_t batch = 1;                 // the plan's --max-sequences
  double prefill_tokens_per_s = 0;        // a --context-token prompt in --batch-tokens chunks
  double decode_tokens_per_s_1 = 0;       // one sequence
  double decode_positions = 0;            // the decode figures are at this many tokens of context (KV read per token)
  double decode_tokens_per_s_1_at_start = 0;  // one sequence at its first position (no KV cache to read yet)
  double decode_tokens_per_s_batch = 0;   // --max-sequences sequences decoded together
  double seconds_to_first_token = 0;      // prefill of a prompt_tokens-token prompt
  double prompt_tokens = 0;               // the prompt predicted (PredictShape::prompt_tokens, else --context)
  std::optional<double> joules_per_token; // decode at --max-sequences; none without power facts
  Bottleneck bottleneck;                  // of decode at --max-sequences
  // Tensor parallelism (tensor_parallel > 1): the collectives' share of a decode step at --max-sequences
  // (all-reduces and the logits' all-gather), and the all-reduces' bytes per token of one rank
  // (2 × layers × hidden × 4: what ExecStats' communication counts for an in-process group).
  int tensor_parallel = 1;
  double communication_share = 0;
  double all_reduce_bytes_per_token = 0;
  // Layers whose experts the host keeps and computes for a separate accelerator (--n-cpu-moe, or
  // stages' own choice), and the host's share of a decode step at --max-sequences (its expert
  // compute and the hidden states' trips there and back, which the device waits for). 0: none.
  int host_expert_layers = 0;
  double host_experts_share = 0;
  // The facts used, per computing device (and the host's, "cpu", when it computes experts).
  std::vector<std::pair<DeviceId, DeviceFacts>> facts;
};

// The workload predicted: a prompt of `prompt_tokens` (prefill, first token), then decode at
// `decode_positions` positions on average. Zero: the plan's --context, and half of it.
struct PredictShape {
  double prompt_tokens = 0;
  double decode_positions = 0;
  int micro_batches = 0;       // --micro-batches; 0: the executor's default (one per stage, one when weights stream)
  // Virtual devices of one host: how many could compute at once (host threads / each one's).
  // Set, the stages still pipeline their micro-batches, but a step takes no less than the host
  // computing all of their work with all its threads (the larger of the two), and copies overlap
  // the compute only when it is above 1. 0: separate devices.
  double concurrency = 0;
  // Ranks of a tensor-parallel group (--tp): the tree is one rank's shard and each plan device is
  // a stage of this many devices computing together. Per layer and forward of n tokens, two
  // all-reduces of n × hidden float32 (after o_proj and down_proj) and, with the head, an
  // all-gather of the n rows of logits, at DeviceFacts::collective_latency_s and link_bandwidth.
  int tensor_parallel = 1;
};

// Facts of a computing device: an accelerator ordinal, or kHostDevice.
using FactsOf = std::function<DeviceFacts(int device)>;

// Predicts `plan` (which must have run buffers: context > 0). `shared_host`: the accelerators
// are virtual devices of one host, whose power counts once.
Prediction predict_plan(const ModuleTree& tree, const Plan& plan, const FactsOf& facts, bool shared_host,
                        const PredictShape& shape = {});

Json prediction_to_json(const Prediction& p);
// Two lines for the text report.
std::string prediction_to_text(const Prediction& p);
// "decode 65.2 tok/s (batch 4), 18.5 tok/s (batch 1)" (batch 1 once); "first token after 86.18
// ms (a 14-token prompt)": pieces of the text report, for the runner-ups too.
std::string decode_text(const Prediction& p);
std::string first_token_text(const Prediction& p);

}  // namespace plexus
