// Printing plans and estimates.
#include "planner/plan_report.h"

#include <cstdio>

#include "core/units.h"
#include "planner/report_text.h"

namespace plexus {
namespace {

using report_text::pad;
using report_text::rpad;
using report_text::bytes;

}  // namespace

std::string format_ranges(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(v[i]);
    if (j > i) s += "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return s;
}

Json device_report_to_json(const DeviceReport& d) {
  Json x;
  x["device"] = d.device.to_json();
  x["budget_bytes"] = d.budget_bytes ? Json(*d.budget_bytes) : Json(nullptr);
  x["weights_bytes"] = d.weights_bytes;
  x["kv_cache_bytes"] = d.kv_cache_bytes;
  x["activation_bytes"] = d.activation_bytes;
  x["streaming_bytes"] = d.streaming_bytes;
  x["streaming_slots"] = d.streaming_slots;
  x["run_buffers_bytes"] = d.run_buffers_bytes;
  x["total_bytes"] = d.total_bytes;
  x["capacity_bytes"] = d.capacity_bytes ? Json(*d.capacity_bytes) : Json(nullptr);
  x["read_bytes_per_token"] = d.read_bytes_per_token;
  x["layers"] = d.layers;
  x["embedding"] = d.holds_embedding;
  x["lm_head"] = d.holds_lm_head;
  return x;
}

Json plan_to_json(const Plan& p) {
  Json j;
  j["strategy"] = p.custom ? std::string("custom") : std::string(strategy_name(p.strategy));
  j["dtype"] = std::string(weight_dtype_name(p.dtype));
  j["device_map"] = (p.hf_device_map ? *p.hf_device_map : p.device_map).to_json();
  j["placement"] = placement_to_json(p.placement);
  j["model_bytes"] = p.model_bytes;
  j["parameters"] = p.parameters;
  j["active_parameters"] = p.active_parameters;
  j["active_bytes"] = p.active_bytes;
  j["experts_on_cpu"] = p.host_expert_layers;  // layers whose experts the host keeps and computes (--n-cpu-moe)
  j["context"] = p.runtime.context;
  j["batch"] = p.runtime.batch;
  j["batch_tokens"] = p.runtime.prefill_chunk;
  Json devs = Json::array();
  for (const DeviceReport& d : p.devices) devs.push_back(device_report_to_json(d));
  j["devices"] = devs;
  j["notes"] = p.notes;
  return j;
}

std::string plan_to_table(const Plan& p) {
  std::string out = "strategy " + (p.custom ? std::string("custom") : std::string(strategy_name(p.strategy))) +
                    ", dtype " + std::string(weight_dtype_name(p.dtype)) + ", weights " +
                    format_bytes(static_cast<std::uint64_t>(p.model_bytes));
  if (p.runtime.context > 0) {
    out += ", run buffers for " + std::to_string(p.runtime.context) + " tokens × batch " + std::to_string(p.runtime.batch) +
           ", " + std::to_string(p.runtime.prefill_chunk) + " tokens per forward";
  } else {
    out += ", weights only (--context 0: no run buffers)";
  }
  out += "\n\n";
  out += pad("device", 8) + pad("layers", 14) + pad("other", 18) + rpad("weights", 12) + rpad("kv cache", 12) +
         rpad("scratch", 12) + rpad("streaming", 15) + rpad("total", 12) + rpad("budget", 12) + rpad("used", 8) +
         rpad("read/token", 12) + "\n";
  for (const DeviceReport& d : p.devices) {
    std::string other;
    if (d.holds_embedding) other += "embed";
    if (d.holds_lm_head) other += std::string(other.empty() ? "" : "+") + "lm_head";
    // Budgets that limit the weights only (accelerate's max_memory) show the weights' share and
    // a "+": the run buffers come on top.
    const bool on_top = d.capacity_bytes && d.budget_bytes && *d.capacity_bytes > *d.budget_bytes;
    const std::int64_t need = on_top ? d.weights_bytes : d.total_bytes;
    std::string pct = "-";
    if (d.budget_bytes && *d.budget_bytes > 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f%%%s", 100.0 * static_cast<double>(need) / static_cast<double>(*d.budget_bytes),
                    on_top ? "+" : "");
      pct = buf;
    }
    out += pad(d.device.to_string(), 8) + pad(d.layers.empty() ? "-" : format_ranges(d.layers), 14) +
           pad(other.empty() ? "-" : other, 18) + rpad(bytes(d.weights_bytes), 12) + rpad(bytes(d.kv_cache_bytes), 12) +
           rpad(bytes(d.activation_bytes), 12) +
           rpad(d.streaming_bytes > 0 ? bytes(d.streaming_bytes) + (d.streaming_slots == 1 ? " (1)" : "") : "-", 15) +
           rpad(bytes(d.total_bytes), 12) +
           rpad(d.budget_bytes ? format_bytes(*d.budget_bytes) : std::string("-"), 12) + rpad(pct, 8) +
           rpad(bytes(d.read_bytes_per_token), 12) + "\n";
  }
  for (const std::string& n : p.notes) out += "note: " + n + "\n";
  return out;
}

Json estimate_to_json(const ModelEstimate& e, const ModelConfig& c) {
  Json j;
  j["architecture"] = std::string(arch_name(c.arch));
  j["parameters"] = e.num_params;
  j["active_parameters"] = e.active_params;
  j["num_layers"] = c.num_layers;
  Json d = Json::array();
  for (const DTypeEstimate& x : e.per_dtype) {
    Json o;
    o["dtype"] = x.name;
    o["format"] = x.format;  // the projections' storage: float32 ... | q8_0 | q4_k | q4_0
    o["total_bytes"] = x.total_bytes;
    o["active_bytes"] = x.active_bytes;
    o["largest_layer_bytes"] = x.largest_layer_bytes;
    o["largest_layer"] = x.largest_layer;
    o["training_adam_bytes"] = x.training_adam_bytes;
    o["kv_cache_bytes_per_token"] = x.kv_bytes_per_token;
    d.push_back(o);
  }
  j["dtypes"] = d;
  Json kv = Json::array();
  for (const KvCell& k : e.kv_table) kv.push_back({{"context", k.context}, {"batch", k.batch}, {"bytes", k.bytes}});
  j["kv_cache_16bit"] = kv;
  return j;
}

std::string estimate_to_table(const ModelEstimate& e, const ModelConfig& c) {
  // A mixture of experts also shows what one token reads (its active parameters and bytes).
  const bool moe = c.is_moe();
  std::string out = std::string(arch_name(c.arch)) + ": " + std::to_string(e.num_params) + " parameters";
  if (moe) {
    char active[160];
    std::snprintf(active, sizeof active, " (%.2fB total, %lld active per token: %.2fB, %lld of %lld experts)",
                  static_cast<double>(e.num_params) / 1e9, static_cast<long long>(e.active_params),
                  static_cast<double>(e.active_params) / 1e9, static_cast<long long>(c.moe.experts_per_token),
                  static_cast<long long>(c.moe.num_experts));
    out += active;
  }
  out += ", " + std::to_string(c.num_layers) + " layers\n\n";
  out += pad("dtype", 10) + rpad("total", 12) + (moe ? rpad("active", 12) : std::string()) + rpad("largest layer", 15) +
         pad("", 2) + pad("(module)", 20) + rpad("train w/ Adam", 15) + rpad("KV/token", 12) + "\n";
  for (const DTypeEstimate& x : e.per_dtype) {
    const std::string label = x.format == x.name ? x.name : x.name + " " + x.format;
    out += pad(label, 10) + rpad(bytes(x.total_bytes), 12) + (moe ? rpad(bytes(x.active_bytes), 12) : std::string()) +
           rpad(bytes(x.largest_layer_bytes), 15) + pad("", 2) + pad(x.largest_layer, 20) +
           rpad(bytes(x.training_adam_bytes), 15) + rpad(bytes(x.kv_bytes_per_token), 12) + "\n";
  }
  out += "\nKV cache (16-bit) by context × batch:\n" + pad("context", 10);
  std::vector<std::int64_t> batches;
  for (const KvCell& k : e.kv_table) {
    if (k.context == e.kv_table.front().context) batches.push_back(k.batch);
  }
  if (batches.empty()) return out;
  for (std::int64_t b : batches) out += rpad("batch " + std::to_string(b), 14);
  out += "\n";
  for (std::size_t i = 0; i < e.kv_table.size(); i += batches.size()) {
    out += pad(std::to_string(e.kv_table[i].context), 10);
    for (std::size_t k = 0; k < batches.size() && i + k < e.kv_table.size(); ++k) out += rpad(bytes(e.kv_table[i + k].bytes), 14);
    out += "\n";
  }
  return out;
}

}  // namespace plexus
