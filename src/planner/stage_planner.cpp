// The "stages" strategy: binary search on the largest per-accelerator load (bytes read per
// generated token), with a greedy contiguous fill under load and memory limits as the
// feasibility test — exact for ordered, unsplittable units.
#include "planner/stage_planner.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/checked.h"
#include "core/units.h"
#include "compute/kv_cache.h"
#include "planner/memory_estimate.h"
#include "model/llama_family.h"
#include "planner/run_buffers.h"

namespace plexus {
namespace {

constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max() / 4;

struct Unit {
  int node = -1;
  std::int64_t mem = 0;        // bytes it occupies: weights + KV cache (+ logits for lm_head)
  std::int64_t load = 0;       // bytes it reads per generated token (the embedding: one row, ~0)
  bool is_embedding = false;
  bool is_tied_head = false;   // shares storage with the embedding: a copy elsewhere costs memory
};

// The placement units in forward order: decoder layers and the modules outside them.
void collect_units(const SizedTree& t, int node, std::vector<int>* out) {
  const SizedNode& n = t.node(node);
  if (n.is_tensor) return;
  if (n.no_split || n.children.empty()) {
    if (!n.name.empty()) out->push_back(node);
    return;
  }
  for (int c : n.children) collect_units(t, c, out);
}

struct Fill {
  bool ok = false;
  std::size_t placed = 0;          // units placed on accelerators (a prefix)
  std::vector<int> device_of;      // per placed unit: index into the accelerator list
  std::int64_t max_load = 0;
};

// Greedy contiguous fill of `units` over accelerators: each takes units while its load stays
// within `limit` and its memory within cap[i]. A tied head away from the embedding's device
// needs its own copy of the shared matrix (`tied_bytes`).
Fill greedy(const std::vector<Unit>& units, const std::vector<std::int64_t>& cap, std::int64_t limit,
            std::int64_t tied_bytes) {
  Fill f;
  std::size_t dev = 0;
  std::int64_t load = 0, mem = 0;
  int embed_device = -1;
  for (const Unit& u : units) {
    while (dev < cap.size()) {
      std::int64_t m = u.mem;
      if (u.is_tied_head && embed_device != static_cast<int>(dev)) m += tied_bytes;
      if (load + u.load <= limit && mem + m <= cap[dev]) {
        load += u.load;
        mem += m;
        break;
      }
      ++dev;
      load = mem = 0;
    }
    if (dev >= cap.size()) break;
    if (u.is_embedding) embed_device = static_cast<int>(dev);
    f.device_of.push_back(static_cast<int>(dev));
    f.max_load = std::max(f.max_load, load);
    ++f.placed;
  }
  f.ok = f.placed == units.size();
  return f;
}

// The smallest load limit under which the greedy fill still places every unit.
Fill balance(const std::vector<Unit>& units, const std::vector<std::int64_t>& cap, std::int64_t tied_bytes) {
  Fill best = greedy(units, cap, kUnbounded, tied_bytes);
  if (!best.ok || units.empty()) return best;
  std::int64_t lo = 0, hi = best.max_load;
  for (const Unit& u : units) lo = std::max(lo, u.load);
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    Fill f = greedy(units, cap, mid, tied_bytes);
    if (f.ok) {
      hi = f.max_load;
    } else {
      lo = mid + 1;
    }
  }
  return greedy(units, cap, hi, tied_bytes);
}

struct Solution {
  std::vector<DeviceId> where;        // per unit
  std::int64_t on_accelerators = 0;   // per-token load kept on the accelerators
  std::int64_t max_load = 0;          // largest accelerator load
  std::vector<std::string> notes;
};

// Places `units`: all on the accelerators, balanced, when they fit; otherwise the embedding goes
// to the host first, then the longest prefix that fits stays on the accelerators (balanced) and
// the rest goes to cpu, then disk.
// `host_only`: the budgets name no accelerator, so the host computes everything.
Solution solve(const std::vector<Unit>& units, const std::vector<DeviceId>& accels, const std::vector<std::int64_t>& cap,
               std::int64_t cpu_left, std::int64_t tied_bytes, bool host_only) {
  Solution out;
  Fill fill = balance(units, cap, tied_bytes);
  std::vector<DeviceId> where(units.size(), DeviceId::disk());
  std::size_t first = 0;  // first unit of the accelerator sequence
  if (!fill.ok) {
    // The embedding is a row lookup per token: the cheapest module to serve from the host.
    if (!units.empty() && units.front().is_embedding && !host_only) {
      if (units.front().mem <= cpu_left) {
        where[0] = DeviceId::cpu();
        cpu_left -= units.front().mem;
      }
      out.notes.push_back("model.embed_tokens (" + format_bytes(static_cast<std::uint64_t>(units.front().mem)) +
                          ") is served from " + where[0].to_string() +
                          ": a per-token row lookup, so the accelerators keep the compute-heavy layers");
      first = 1;
    }
    std::vector<Unit> rest(units.begin() + static_cast<std::ptrdiff_t>(first), units.end());
    fill = balance(rest, cap, tied_bytes);
    if (!fill.ok) {
      const Fill most = greedy(rest, cap, kUnbounded, tied_bytes);
      std::vector<Unit> prefix(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(most.placed));
      fill = balance(prefix, cap, tied_bytes);
    }
  }
  for (std::size_t i = 0; i < fill.placed; ++i) {
    where[first + i] = accels[static_cast<std::size_t>(fill.device_of[i])];
    out.on_accelerators += units[first + i].load;
  }
  out.max_load = fill.max_load;
  const bool embed_on_cpu = first == 1 && where[0] == DeviceId::cpu();
  for (std::size_t i = first + fill.placed; i < units.size(); ++i) {
    std::int64_t m = units[i].mem;
    if (units[i].is_tied_head && !embed_on_cpu) m += tied_bytes;
    if (m <= cpu_left) {
      where[i] = DeviceId::cpu();
      cpu_left -= m;
    } else {
      cpu_left = 0;  // keep order: once something spills to disk, the rest follows
    }
  }
  if (!host_only && first + fill.placed < units.size()) {
    out.notes.push_back(std::to_string(units.size() - first - fill.placed) +
                        " module(s) did not fit the accelerators and are offloaded to cpu/disk");
  }
  out.where = std::move(where);
  return out;
}

}  // namespace

StagePlan plan_stages(const SizedTree& t, const ModelConfig& c, const Budgets& budgets, const RunShape& shape,
                      const std::vector<std::int64_t>& extra) {
  StagePlan out;
  std::vector<int> nodes;
  collect_units(t, SizedTree::kRoot, &nodes);
  const bool run = shape.context > 0;
  const std::int64_t kv_layer =
      run ? checked_mul(KvCache::bytes_for(1, c.num_kv_heads, c.head_dim, shape.context), shape.batch, "the KV cache per layer") : 0;
  const std::int64_t tokens = std::max<std::int64_t>(1, shape.batch_tokens);
  // One stage's scratch: the layer workspace and the stage's activations.
  const std::int64_t act =
      run ? Workspace::bytes_for(c.layer_shape(), tokens, shape.context, shape.accelerator_threads) + shape.accelerator_kernel_scratch +
                tokens * c.hidden_size * 4
          : 0;
  const std::int64_t logits = run ? logits_chunk_rows(c.vocab_size, tokens) * (c.hidden_size + c.vocab_size) * 4 : 0;

  // Bytes of storage shared by the embedding and a tied head.
  std::int64_t tied_bytes = 0;
  for (const auto& g : t.tied_groups()) {
    for (const std::string& name : g) tied_bytes += t.size_of(name);  // duplicates count 0
  }

  std::vector<Unit> units;
  for (int n : nodes) {
    const SizedNode& sn = t.node(n);
    Unit u;
    u.node = n;
    u.mem = sn.bytes + (sn.no_split ? kv_layer : 0);
    u.load = u.mem;
    u.is_embedding = sn.name == "model.embed_tokens";
    if (u.is_embedding) u.load = 0;
    if (sn.name == "lm_head") {
      u.is_tied_head = tied_bytes > 0;
      u.mem += logits;
      // Per generated token it reads its matrix and writes the batch's logits rows.
      u.load = sn.bytes + (u.is_tied_head ? tied_bytes : 0) + (run ? logits_bytes(c, shape.batch) : 0);
    }
    units.push_back(u);
  }

  std::vector<DeviceId> accels;
  std::vector<std::int64_t> cap;
  for (const DeviceBudget& b : budgets.list()) {
    if (!b.device.is_accelerator()) continue;
    const std::size_t o = static_cast<std::size_t>(b.device.ordinal());
    const std::int64_t reserve = act + (o < extra.size() ? extra[o] : 0);
    const std::int64_t room = static_cast<std::int64_t>(b.bytes) - reserve;
    if (room <= 0) {
      out.notes.push_back("device " + b.device.to_string() + " cannot hold the run buffers (" +
                          format_bytes(static_cast<std::uint64_t>(reserve)) + "); left empty");
      continue;
    }
    accels.push_back(b.device);
    cap.push_back(room);
  }
  const auto cpu_budget = budgets.get(DeviceId::cpu());
  const std::int64_t cpu_total = cpu_budget ? static_cast<std::int64_t>(*cpu_budget) : 0;

  const bool host_only = budgets.accelerators().empty();
  Solution best = solve(units, accels, cap, cpu_total, tied_bytes, host_only);
  // A tied head can also ride with the embedding (no second copy of the shared matrix; the last
  // stage hands its hidden state back to the first device): keep whichever is better.
  if (tied_bytes > 0 && units.size() >= 2 && units.front().is_embedding && units.back().is_tied_head) {
    std::vector<Unit> folded(units.begin(), units.end() - 1);
    folded.front().mem += units.back().mem;
    folded.front().load += units.back().load;
    folded.front().is_embedding = false;  // it now computes the logits: no longer a cheap lookup
    Solution alt = solve(folded, accels, cap, cpu_total, 0, host_only);
    alt.where.push_back(alt.where.front());
    if (alt.on_accelerators > best.on_accelerators ||
        (alt.on_accelerators == best.on_accelerators && alt.max_load <= best.max_load)) {
      best = std::move(alt);
      const DeviceId e = best.where.front();
      if (e.is_accelerator() && best.where.size() > 2 && !(best.where[best.where.size() - 2] == e)) {
        best.notes.push_back("lm_head shares its weights with model.embed_tokens and stays on device " +
                             e.to_string() + ": the last stage hands its hidden state back");
      }
    }
  }
  out.notes.insert(out.notes.end(), best.notes.begin(), best.notes.end());
  if (host_only) {  // a plan for the host: it computes every module from its own memory
    const std::size_t on_disk = static_cast<std::size_t>(std::count(best.where.begin(), best.where.end(), DeviceId::disk()));
    out.notes.push_back("no accelerators: the host computes the whole model (embedding, " + std::to_string(c.num_layers) +
                        " layers, head) from its own memory" +
                        (on_disk ? ", " + std::to_string(on_disk) + " module(s) beyond the cpu budget read from disk"
                                 : std::string(", the weights read in place")));
  }
  for (std::size_t i = 0; i < units.size(); ++i) out.map.set(t.node(units[i].node).name, best.where[i]);
  return out;
}

}  // namespace plexus
