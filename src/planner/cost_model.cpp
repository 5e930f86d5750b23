// The roofline cost model of a plan.
#include "planner/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "planner/moe_reads.h"
#include "planner/run_buffers.h"
#include "planner/sized_tree.h"
#include "planner/stage_layout.h"

namespace plexus {

namespace {

// What one computing device does per forward.
struct DeviceWork {
  int device = kHostDevice;
  int layers = 0;
  int slots = 2;
  double resident_bytes = 0;   // weights read from the device's memory
  double host_bytes = 0;       // streamed in from host memory (cpu offload)
  double disk_bytes = 0;       // streamed in from the mmapped checkpoint (disk offload)
  int streamed = 0;            // modules (layers, head) streamed in: one copy each, then a hand-off to the compute
  double params = 0;           // multiply-adds per token
  bool head = false;
  // Mixture-of-experts layers: their experts' bytes among resident_bytes and among host + disk
  // bytes, of which a forward of n tokens reads expected_experts_read(E, k, n) / E (a streamed
  // layer is still copied whole).
  double resident_expert_bytes = 0, streamed_expert_bytes = 0;
  // Mixture-of-experts layers computed here whose experts the host keeps and computes
  // (ModulePlace::host_experts, on a separate device: a virtual device of the host reads them in
  // place like its own weights): those experts' bytes, their multiply-adds per token (k experts
  // each), and how many layers send their tokens' hidden states to the host and back.
  double host_expert_bytes = 0, host_expert_params = 0;
  int host_expert_layers = 0;
  double expert_fraction_unread(const ModelConfig& c, double tokens) const {
    if (!c.is_moe()) return 0;
    return 1.0 - expected_experts_read(c.moe.num_experts, c.moe.experts_per_token, tokens) / static_cast<double>(c.moe.num_experts);
  }
};

struct Time {
  double total = 0, memory = 0, compute = 0, stream = 0, comm = 0;
  double host = 0;  // the host computing this device's host-kept experts, and the hidden states' trips there and back
};

// Tensor parallelism's collectives in one forward of `tokens` tokens on a device of a group of
// `n` ranks: two all-reduces of (tokens, hidden) float32 per layer, a ring's 2(n−1)/n of the
// bytes over each link, and with the head an all-gather of every rank's (tokens, vocab_width)
// logits, (n−1)/n of them; each collective also costs its latency.
double collective_seconds(const DeviceFacts& f, int n, int layers, bool head, double tokens, double hidden,
                          double vocab_width) {
  const double latency = f.collective_latency_s, bw = f.link_bandwidth;
  const double ring = 2.0 * (n - 1) / n;
  double s = 2.0 * layers * (latency + ring * tokens * hidden * 4 / bw);
  if (head) s += latency + (n - 1.0) / n * tokens * vocab_width * n * 4 / bw;
  return s;
}

// One forward of `tokens` tokens attending to `kv_tokens` positions on average, reading the
// weights once. Decode also reads each sequence's float32 KV cache; prefill's attention reuses
// the keys it reads across a chunk's queries from cache, so only its FLOPs count.
// Seconds per weight byte of a forward of `tokens` tokens on a calibrated host: interpolated
// between the measured token counts, growing with the last measured rate per token beyond them.
double seconds_per_weight_byte(const DeviceFacts& f, double tokens) {
  const auto& r = f.weight_rate_by_tokens;
  if (tokens <= r.front().first) return 1 / r.front().second;
  for (std::size_t i = 1; i < r.size(); ++i) {
    if (tokens <= r[i].first) {
      const double a = 1 / r[i - 1].second, b = 1 / r[i].second;
      return a + (b - a) * (tokens - r[i - 1].first) / (r[i].first - r[i - 1].first);
    }
  }
  return tokens / r.back().first / r.back().second;
}

// Seconds per weight byte that was just copied into a streaming slot, given `per_byte` for
// weights in memory at the same token count: the part of one token's rate spent reading memory
// (1 / rate in memory - 1 / rate from the slot) is already paid by the copy. Unmeasured: `per_byte`.
double seconds_per_streamed_weight_byte(const DeviceFacts& f, double per_byte) {
  if (f.streamed_weight_rate <= 0 || f.weight_rate_by_tokens.empty()) return per_byte;
  const double from_slot = 1 / f.streamed_weight_rate;
  const double memory_part = std::max(0.0, 1 / f.weight_rate_by_tokens.front().second - from_slot);
  return std::max(from_slot, per_byte - memory_part);
}

// The host's part of a forward of `tokens` tokens through the layers of `w` whose experts it
// keeps (w.host_expert_layers): it reads the experts the tokens route to (expected_experts_read
// of E) from its memory — on a calibrated host at its measured rate for the tokens each expert
// gets, two pool launches per layer (gate/up, down); else the larger of the bytes at its memory
// bandwidth and the k experts' FLOPs per token at its FLOP/s — and every such layer sends the
// tokens' float32 hidden states from the device to the host and back over the device's host link
// (host_copy_bandwidth), each way a hand-off (the host's handoff_s, kDefaultHandoffS unmeasured).
// The device waits meanwhile: the layer's attention comes before its experts and the next layer
// after them.
double host_experts_seconds(const DeviceWork& w, const DeviceFacts& device, const DeviceFacts& host, const ModelConfig& c,
                            double flops_per_s, double tokens) {
  if (w.host_expert_layers == 0) return 0;
  const double E = static_cast<double>(c.moe.num_experts), k = static_cast<double>(c.moe.experts_per_token);
  const double experts = expected_experts_read(c.moe.num_experts, c.moe.experts_per_token, tokens);
  const double read = w.host_expert_bytes * experts / E;
  double compute = 0;
  if (!host.weight_rate_by_tokens.empty()) {
    compute = read * seconds_per_weight_byte(host, tokens * k / experts) + 2.0 * w.host_expert_layers * host.launch_overhead_s;
  } else {
    compute = std::max(read / host.memory_bandwidth, tokens * 2.0 * w.host_expert_params / flops_per_s);
  }
  const double handoff = host.handoff_s > 0 ? host.handoff_s : kDefaultHandoffS;
  const double trips = w.host_expert_layers * (2.0 * tokens * static_cast<double>(c.hidden_size) * 4 / device.host_copy_bandwidth + 2 * handoff);
  return compute + trips;
}

// `copies_add`: the copies take the cores the compute uses (a shared host without spare cores),
// so they add to the work instead of hiding behind it. `host_part`: host_experts_seconds, added
// to the device's work (it waits for the host).
Time device_time(const DeviceWork& w, const DeviceFacts& f, const ModelConfig& c, double flops_per_s, double tokens,
                 double kv_tokens, bool decode, bool copies_add, double host_part = 0) {
  Time t;
  t.host = host_part;
  const double kv_bytes = decode ? tokens * kv_tokens * 2.0 * static_cast<double>(c.kv_dim()) * 4 * w.layers : 0;
  const double unread = w.expert_fraction_unread(c, tokens);  // of the experts' bytes: those no token routes to
  const double resident_read = w.resident_bytes - unread * w.resident_expert_bytes;
  const double streamed_read = w.host_bytes + w.disk_bytes - unread * w.streamed_expert_bytes;
  const double weight_bytes = resident_read + streamed_read;
  const double attention = 4.0 * kv_tokens * static_cast<double>(c.q_dim()) * w.layers;
  if (!f.weight_rate_by_tokens.empty()) {
    // A calibrated host: the matmul kernels' measured rate for this many tokens (reads, bf16
    // conversion and FMAs together), the KV cache at memory bandwidth, attention at FLOP/s, and
    // five pool launches per layer (q/k/v, attention, o, gate/up with silu, down) plus the head's.
    const double per_byte = seconds_per_weight_byte(f, tokens);
    const double kernels = resident_read * per_byte + streamed_read * seconds_per_streamed_weight_byte(f, per_byte);
    const double rest = kv_bytes / f.memory_bandwidth + tokens * attention / flops_per_s +
                        (5.0 * w.layers + (w.head ? 1 : 0)) * f.launch_overhead_s;
    const bool bound_by_reads = tokens < 4;  // fewer tokens than the kernels' row-block path takes
    (bound_by_reads ? t.memory : t.compute) = kernels + rest;
    // Each streamed module's copy ends in a hand-off: the queue waiting for it wakes (or the copy
    // thread waiting for a free slot does, hidden when the compute is longer).
    t.stream = w.host_bytes / f.host_copy_bandwidth +
               w.disk_bytes / std::min(f.disk_read_bandwidth, f.host_copy_bandwidth) + w.streamed * f.handoff_s;
    // The copy is the streamed weights' one trip through memory (the kernel then reads the slot
    // from cache): a spare core hides it behind the compute, or it adds.
    const double work = t.memory + t.compute + t.host;
    t.total = w.slots >= 2 && !copies_add ? std::max(work, t.stream) : work + t.stream;
    return t;
  }
  t.memory = (weight_bytes + kv_bytes) / f.memory_bandwidth;
  t.compute = tokens * (2.0 * w.params + attention) / flops_per_s;
  t.stream = w.host_bytes / f.host_copy_bandwidth +
             w.disk_bytes / std::min(f.disk_read_bandwidth, f.host_copy_bandwidth);
  const double work = std::max(t.memory, t.compute) + t.host;
  t.total = w.slots >= 2 && !copies_add ? std::max(work, t.stream) : work + t.stream;
  return t;
}

double flops_for(const DeviceFacts& f, WeightDType d) {
  switch (d) {
    case WeightDType::kF32: return f.flops_f32;
    case WeightDType::kBF16:
    case WeightDType::kF16: return f.flops_16bit;
    case WeightDType::kInt8:
    case WeightDType::kInt4: return f.flops_int8 > 0 ? f.flops_int8 : f.flops_16bit;
  }
  return f.flops_16bit;
}

struct Step {
  double seconds = 0;
  double busy_sum = 0;  // summed device time
  std::vector<Time> per_device;
  double hops = 0;
};

}  // namespace

Prediction predict_plan(const ModuleTree& tree, const Plan& plan, const FactsOf& facts, bool shared_host,
                        const PredictShape& shape) {
  if (plan.runtime.context <= 0) throw InputError("a prediction needs a context: plan with --context N (not 0)");
  const ModelConfig& c = tree.config();
  int n_acc = 0;
  for (const DeviceId& d : plan.planned_budgets.accelerators()) n_acc = std::max(n_acc, d.ordinal() + 1);
  const StageLayout layout = make_stage_layout(tree, plan.device_map, n_acc);
  const SizedTree sized = SizedTree::build(tree, plan.dtype);
  // Multiply-adds per token of layer l: attention, then the dense MLP or the router and k experts.
  const double attention_params = static_cast<double>(c.hidden_size) * (2.0 * c.q_dim() + 2.0 * c.kv_dim());
  const double expert_params = c.is_moe() ? static_cast<double>(c.moe.experts_per_token) * 3.0 * static_cast<double>(c.hidden_size) *
                                                static_cast<double>(c.moe.expert_intermediate_size)
                                          : 0.0;
  auto layer_params = [&c, attention_params, expert_params](int l) {
    const double H = static_cast<double>(c.hidden_size);
    if (!c.moe_layer(l)) return attention_params + 3.0 * H * static_cast<double>(c.intermediate_size);
    return attention_params + H * static_cast<double>(c.moe.num_experts) + expert_params;
  };
  const int tp = std::max(1, shape.tensor_parallel);
  // A tensor-parallel rank's head computes its vocabulary rows.
  const ParamInfo* head_param = tp > 1 ? tree.find("lm_head.weight") : nullptr;
  const double vocab_rows = head_param && head_param->shape.size() == 2 ? static_cast<double>(head_param->shape[0])
                                                                         : static_cast<double>(c.vocab_size);
  const double head_params = static_cast<double>(c.hidden_size) * vocab_rows;

  std::vector<DeviceWork> work;
  auto at = [&work](int device) -> DeviceWork& {
    for (DeviceWork& w : work)
      if (w.device == device) return w;
    work.push_back(DeviceWork{});
    work.back().device = device;
    return work.back();
  };
  auto add = [](DeviceWork& w, Residence r, double bytes) {
    (r == Residence::kDevice ? w.resident_bytes : r == Residence::kHost ? w.host_bytes : w.disk_bytes) += bytes;
    if (r != Residence::kDevice) ++w.streamed;
  };
  for (const Stage& s : layout.stages) {
    DeviceWork& w = at(s.device);
    for (int l = s.first_layer; l < s.end_layer; ++l) {
      const Residence r = layout.layers[static_cast<std::size_t>(l)].residence;
      if (layout.layers[static_cast<std::size_t>(l)].host_experts && !shared_host) {
        add(w, r, static_cast<double>(packed_layer_bytes(sized, c, l, false)));
        w.host_expert_bytes += static_cast<double>(layer_expert_bytes(sized, c, l));
        w.host_expert_params += expert_params;
        ++w.host_expert_layers;
        w.params += layer_params(l) - expert_params;
        ++w.layers;
        continue;
      }
      add(w, r, static_cast<double>(packed_layer_bytes(sized, c, l)));
      (r == Residence::kDevice ? w.resident_expert_bytes : w.streamed_expert_bytes) +=
          static_cast<double>(layer_expert_bytes(sized, c, l));
      w.params += layer_params(l);
      ++w.layers;
    }
    if (s.head) {
      add(w, layout.head.residence, static_cast<double>(head_matrix_bytes(sized)));
      w.params += head_params;
      w.head = true;
    }
  }
  for (DeviceWork& w : work) {
    const DeviceId id = w.device == kHostDevice ? DeviceId::cpu() : DeviceId::accelerator(w.device);
    for (const DeviceReport& r : plan.devices)
      if (r.device == id && r.streaming_slots > 0) w.slots = r.streaming_slots;
  }
  std::vector<DeviceFacts> f;
  for (const DeviceWork& w : work) f.push_back(facts(w.device));
  int host_expert_layers = 0;
  for (const DeviceWork& w : work) host_expert_layers += w.host_expert_layers;
  const DeviceFacts host_expert_facts = host_expert_layers > 0 ? facts(kHostDevice) : DeviceFacts{};

  const double H = static_cast<double>(c.hidden_size);
  // The executor's micro-batches: one per stage unless weights stream (then one), never more than
  // the tokens. Each device runs every micro-batch (re-reading its weights each time) and the
  // stages pipeline them: a step takes the first micro-batch's way through all devices plus
  // (m - 1) of the slowest device's turns. Virtual devices also share the host's cores and
  // memory: together they go no faster than the host computing all of their work with all of its
  // threads, a second bound on the step.
  const bool shared = shape.concurrency > 0;
  const bool direct = layout.stages.size() == 1 && layout.stages.front().device == kHostDevice && !layout.streams();
  const double micro = shape.micro_batches > 0 ? shape.micro_batches
                                               : (layout.streams() ? 1.0 : static_cast<double>(layout.stages.size()));
  const DeviceFacts host = shared ? facts(kHostDevice) : DeviceFacts{};
  // Copies hide behind compute on a shared host only when cores are left over for them.
  const bool copies_overlap = !shared_host || shape.concurrency > 1;
  // A group's ranks on virtual devices of one host that cannot all compute at once take turns
  // (their compute and their collectives' meetings).
  const double turns = tp > 1 && shared && shape.concurrency < tp ? tp / shape.concurrency : 1.0;
  auto step = [&](double tokens, double kv_tokens, bool decode) {
    Step s;
    const double m = std::max(1.0, std::min(micro, tokens));
    double first = 0, slowest = 0, on_host = 0, host_experts = 0;
    for (std::size_t i = 0; i < work.size(); ++i) {
      const double host_part = host_experts_seconds(work[i], f[i], host_expert_facts, c, flops_for(host_expert_facts, plan.dtype), tokens / m);
      Time t = device_time(work[i], f[i], c, flops_for(f[i], plan.dtype), tokens / m, kv_tokens, decode, !copies_overlap, host_part);
      host_experts += m * host_part;  // one host computes every device's host-kept experts
      if (tp > 1) {
        t.total *= turns, t.memory *= turns, t.compute *= turns, t.stream *= turns;
        // Oversubscribed, a collective also waits for the ranks that are not running.
        t.comm = turns * collective_seconds(f[i], tp, work[i].layers, work[i].head, tokens / m, H, vocab_rows);
        t.total += t.comm;
      } else if (shared) {
        on_host += m * device_time(work[i], host, c, flops_for(host, plan.dtype), tokens / m, kv_tokens, decode, !copies_overlap).total;
      }
      first += t.total;
      slowest = std::max(slowest, t.total);
      t.total *= m, t.memory *= m, t.compute *= m, t.stream *= m, t.comm *= m, t.host *= m;
      s.per_device.push_back(t);
      s.busy_sum += t.total;
    }
    for (std::size_t k = 1; k < layout.stages.size(); ++k) {  // over the receiving device's link
      for (std::size_t j = 0; j < work.size(); ++j) {
        if (work[j].device == layout.stages[k].device) s.hops += tokens * H * 4 / f[j].link_bandwidth;
      }
    }
    // Hand-offs between threads that sleep in between: the forward's start and end (caller and
    // device queue) and each stage waiting for the previous one (on the first micro-batch; later
    // ones mostly find theirs done). None when the host alone computes everything in place: the
    // executor calls that work on the caller's thread.
    double handoff = 0;
    for (const DeviceFacts& x : f) handoff = std::max(handoff, x.handoff_s);
    if (direct) handoff = 0;
    const double pipeline = first + (m - 1) * slowest;
    s.seconds = std::max({pipeline, on_host, host_experts}) + s.hops + (static_cast<double>(layout.stages.size()) + 1) * handoff;
    return s;
  };

  Prediction p;
  p.batch = plan.runtime.batch;
  const double ctx = shape.prompt_tokens > 0 ? shape.prompt_tokens : static_cast<double>(plan.runtime.context);
  const double half = shape.decode_positions > 0 ? shape.decode_positions : static_cast<double>(plan.runtime.context) / 2;
  const double b = static_cast<double>(plan.runtime.batch);
  p.decode_positions = half;
  p.decode_tokens_per_s_1 = 1.0 / step(1, half, true).seconds;
  p.decode_tokens_per_s_1_at_start = 1.0 / step(1, 0, true).seconds;
  const Step sb = step(b, half, true);
  p.decode_tokens_per_s_batch = b / sb.seconds;
  // Prefill of a context-long prompt, --batch-tokens at a time (weights read once per chunk).
  const double chunk = std::min(ctx, static_cast<double>(plan.runtime.prefill_chunk));
  const double chunks = std::ceil(ctx / chunk);
  const double prefill_s = chunks * step(chunk, half, false).seconds;
  p.prefill_tokens_per_s = ctx / prefill_s;
  p.seconds_to_first_token = prefill_s;
  p.prompt_tokens = ctx;

  // Bottleneck of decode at --batch: the slowest device, and what bounds it.
  std::size_t worst = 0;
  for (std::size_t i = 1; i < sb.per_device.size(); ++i)
    if (sb.per_device[i].total > sb.per_device[worst].total) worst = i;
  const Time& t = sb.per_device[worst];
  // A plan device of a tensor-parallel plan is a stage: named by its rank 0's device, s·tp.
  auto run_device = [tp](int device) { return device == kHostDevice ? DeviceId::cpu() : DeviceId::accelerator(device * tp); };
  p.bottleneck.device = run_device(work[worst].device);
  if (sb.hops > t.total) {
    p.bottleneck.resource = "link";
  } else if (tp > 1 && t.comm >= std::max({t.memory, t.compute, t.stream})) {
    p.bottleneck.resource = "communication";
  } else if (t.host > 0 && t.host >= std::max({t.memory, t.compute, t.stream})) {
    p.bottleneck.resource = "host_experts";
  } else if (t.stream >= std::max(t.memory, t.compute)) {
    p.bottleneck.resource = "offload_stream";
  } else {
    p.bottleneck.resource = t.compute > t.memory ? "compute" : "memory_bandwidth";
  }

  // Energy per decoded token at --batch: idle power for the whole step, busy power while working.
  bool have_power = true;
  for (const DeviceFacts& x : f) have_power = have_power && x.idle_w && x.busy_w;
  if (have_power) {
    double joules = 0;
    if (shared_host) {
      joules = *f[0].busy_w * sb.seconds;  // one host, working throughout the step
    } else {
      // A device waiting for the host's experts idles; the host works meanwhile (when its power is known).
      double on_host = 0;
      for (std::size_t i = 0; i < f.size(); ++i) {
        joules += *f[i].idle_w * sb.seconds + (*f[i].busy_w - *f[i].idle_w) * (sb.per_device[i].total - sb.per_device[i].host);
        on_host += sb.per_device[i].host;
      }
      if (host_expert_facts.idle_w && host_expert_facts.busy_w) joules += (*host_expert_facts.busy_w - *host_expert_facts.idle_w) * on_host;
    }
    if (!shared_host) joules *= tp;  // every stage is tp devices working alike
    p.joules_per_token = joules / b;
  }
  if (tp > 1) {
    p.tensor_parallel = tp;
    double comm = 0;
    for (const Time& x : sb.per_device) comm += x.comm;
    p.communication_share = sb.seconds > 0 ? comm / sb.seconds : 0;
    p.all_reduce_bytes_per_token = 2.0 * c.num_layers * H * 4;
  }
  if (host_expert_layers > 0) {
    p.host_expert_layers = host_expert_layers;
    double on_host = 0;
    for (const Time& x : sb.per_device) on_host += x.host;
    p.host_experts_share = sb.seconds > 0 ? std::min(1.0, on_host / sb.seconds) : 0;
  }
  for (std::size_t i = 0; i < work.size(); ++i) p.facts.emplace_back(run_device(work[i].device), f[i]);
  if (host_expert_layers > 0) p.facts.emplace_back(DeviceId::cpu(), host_expert_facts);
  return p;
}

Json prediction_to_json(const Prediction& p) {
  Json facts = Json::array();
  for (const auto& [d, f] : p.facts) {
    Json x = device_facts_to_json(f);
    x["device"] = d.to_json();
    facts.push_back(x);
  }
  Json decode = Json::object();
  decode["batch_1"] = p.decode_tokens_per_s_1;
  decode["batch_" + std::to_string(p.batch)] = p.decode_tokens_per_s_batch;
  Json j = {{"prefill_tokens_per_s", p.prefill_tokens_per_s},
            {"decode_tokens_per_s", decode},
            {"decode_positions", p.decode_positions},
            {"decode_tokens_per_s_at_start", {{"batch_1", p.decode_tokens_per_s_1_at_start}}},
            {"seconds_to_first_token", p.seconds_to_first_token},
            {"prompt_tokens", p.prompt_tokens},
            {"joules_per_token", p.joules_per_token ? Json(*p.joules_per_token) : Json(nullptr)},
            {"bottleneck", {{"device", p.bottleneck.device.to_json()}, {"resource", p.bottleneck.resource}}},
            {"facts", facts}};
  if (p.host_expert_layers > 0) {
    j["host_expert_layers"] = p.host_expert_layers;
    j["host_experts_share"] = p.host_experts_share;
  }
  if (p.tensor_parallel > 1) {
    j["tensor_parallel"] = p.tensor_parallel;
    j["communication_share"] = p.communication_share;
    j["all_reduce_bytes_per_token"] = p.all_reduce_bytes_per_token;
  }
  return j;
}

namespace {

std::string seconds_text(double s) {
  char buf[64];
  if (s < 1) std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

}  // namespace

std::string decode_text(const Prediction& p) {
  char buf[256];
  if (p.batch == 1) {
    std::snprintf(buf, sizeof buf, "decode %.1f tok/s (batch 1)", p.decode_tokens_per_s_1);
  } else {
    std::snprintf(buf, sizeof buf, "decode %.1f tok/s (batch %lld), %.1f tok/s (batch 1)", p.decode_tokens_per_s_batch,
                  static_cast<long long>(p.batch), p.decode_tokens_per_s_1);
  }
  return buf;
}

std::string first_token_text(const Prediction& p) {
  return "first token after " + seconds_text(p.seconds_to_first_token) + " (a " +
         std::to_string(static_cast<long long>(std::llround(p.prompt_tokens))) + "-token prompt)";
}

std::string prediction_to_text(const Prediction& p) {
  char buf[512];
  // The KV cache read per token grows with the positions: say where the figures are, and the start.
  std::snprintf(buf, sizeof buf, " %lld tokens into a sequence, %.1f tok/s (batch 1) at its start; prefill %.0f tok/s; ",
                static_cast<long long>(std::llround(p.decode_positions)), p.decode_tokens_per_s_1_at_start,
                p.prefill_tokens_per_s);
  std::string s = "predicted: " + decode_text(p) + buf + first_token_text(p) + "; ";
  if (p.joules_per_token) {
    std::snprintf(buf, sizeof buf, "%.3f J/token; ", *p.joules_per_token);
    s += buf;
  } else {
    s += "energy unknown (no power facts); ";
  }
  s += "bottleneck: device " + p.bottleneck.device.to_string() + ", " + p.bottleneck.resource;
  if (p.host_expert_layers > 0) {
    std::snprintf(buf, sizeof buf, "; the host computes the experts of %d layer(s): %.0f%% of a decode step", p.host_expert_layers,
                  100 * p.host_experts_share);
    s += buf;
  }
  if (p.tensor_parallel > 1) {
    std::snprintf(buf, sizeof buf, "; tensor parallel %d: collectives %.0f%% of a decode step, all-reduces of %.1f KiB per token",
                  p.tensor_parallel, 100 * p.communication_share, p.all_reduce_bytes_per_token / 1024);
    s += buf;
  }
  s += "\n";
  std::string sources;
  for (const auto& [d, f] : p.facts) {
    const std::string one = f.name + " [" + f.source + "]";
    if (sources.find(one) == std::string::npos) sources += (sources.empty() ? "" : "; ") + one;
  }
  return s + "facts: " + sources + "\n";
}

}  // namespace plexus
