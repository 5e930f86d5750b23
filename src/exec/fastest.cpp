// Planning every strategy on every device subset and ranking the predictions.
#include "exec/fastest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "planner/host_experts.h"

namespace plexus {

namespace {

constexpr Strategy kAll[] = {Strategy::kStages, Strategy::kSequential, Strategy::kBalanced, Strategy::kBalancedLow0,
                             Strategy::kAuto};

std::vector<std::vector<DeviceId>> subsets(const std::vector<DeviceId>& acc) {
  std::vector<std::vector<DeviceId>> out;
  if (acc.size() <= 4) {
    for (unsigned mask = 1; mask < (1u << acc.size()); ++mask) {
      std::vector<DeviceId> s;
      for (std::size_t i = 0; i < acc.size(); ++i)
        if (mask & (1u << i)) s.push_back(acc[i]);
      out.push_back(s);
    }
  } else {
    for (std::size_t n = 1; n <= acc.size(); ++n) out.emplace_back(acc.begin(), acc.begin() + static_cast<std::ptrdiff_t>(n));
  }
  if (out.empty()) out.emplace_back();  // no accelerators: the host alone
  return out;
}

double score_of(const Prediction& p, Objective o) {
  switch (o) {
    case Objective::kThroughput: return p.decode_tokens_per_s_batch;
    case Objective::kLatency: return p.decode_tokens_per_s_1 - 1e-9 * p.seconds_to_first_token;
    case Objective::kEnergy:
      return p.joules_per_token ? -*p.joules_per_token : -std::numeric_limits<double>::infinity();
  }
  return 0;
}

std::string devices_text(const std::vector<DeviceId>& s) {
  if (s.empty()) return "host";
  std::string t;
  for (const DeviceId& d : s) t += (t.empty() ? "" : ",") + d.to_string();
  return t;
}

}  // namespace

std::string_view objective_name(Objective o) {
  switch (o) {
    case Objective::kThroughput: return "throughput";
    case Objective::kLatency: return "latency";
    case Objective::kEnergy: return "energy";
  }
  return "?";
}

Objective parse_objective(const std::string& text) {
  for (Objective o : {Objective::kThroughput, Objective::kLatency, Objective::kEnergy}) {
    if (text == objective_name(o)) return o;
  }
  throw InputError("--objective: unknown objective '" + text + "'; use throughput (decode tokens/s at --max-sequences), latency "
                   "(one sequence's decode tokens/s) or energy (joules per token)");
}

FastestChoice choose_fastest(const ModuleTree& tree, const PlanRequest& base, Objective objective,
                             const std::optional<std::string>& gpu, const Inventory* detected) {
  if (base.runtime.context <= 0) throw InputError("--strategy fastest predicts runs: give --context N (not 0)");
  FastestChoice out;
  out.objective = objective;
  std::vector<std::pair<Json, std::string>> seen;  // (device map, subset) already ranked
  const HostMeasurements host(base.runtime.threads);  // measured at most once for every subset
  for (const std::vector<DeviceId>& subset : subsets(base.budgets.accelerators())) {
    PlanRequest r = base;
    Budgets b;
    for (const DeviceId& d : subset) b.set(d, *base.budgets.get(d));
    for (const DeviceBudget& x : base.budgets.list())
      if (!x.device.is_accelerator()) b.set(x.device, x.bytes);
    r.budgets = b;
    int n_acc = 0;
    for (const DeviceId& d : subset) n_acc = std::max(n_acc, d.ordinal() + 1);
    const PlanFacts facts = plan_facts(host, gpu, r.runtime.threads, n_acc, detected);
    out.facts_note = facts.note;
    // A mixture of experts that may keep experts on the host: besides each strategy's own plan
    // (stages' may already keep some there), the strategy with --n-cpu-moe N for the smallest N
    // that keeps the rest on the accelerators (as stages fills them) and for every layer, and
    // stages' plain offload of whole layers.
    std::vector<int> host_layers;
    const bool host_experts = base.auto_host_experts && base.cpu_moe_layers == 0 && tree.config().is_moe() &&
                              !subset.empty() && r.budgets.has(DeviceId::cpu());
    if (host_experts) {
      PlanRequest q = r;
      q.strategy = Strategy::kStages;
      if (const std::optional<int> n = smallest_cpu_moe_layers(tree, q)) host_layers.push_back(*n);
      if (host_layers.empty() || host_layers.back() != tree.config().num_layers) host_layers.push_back(static_cast<int>(tree.config().num_layers));
    }
    for (Strategy s : kAll) {
      std::vector<PlanRequest> variants;
      r.strategy = s;
      variants.push_back(r);
      if (host_experts && s == Strategy::kStages) {
        variants.push_back(r);
        variants.back().auto_host_experts = false;
      }
      for (const int n : host_layers) {
        variants.push_back(r);
        variants.back().cpu_moe_layers = n;
      }
      for (const PlanRequest& v : variants) {
        std::string label = std::string(strategy_name(s)) + " on " + devices_text(subset);
        if (v.cpu_moe_layers > 0) label += " with --n-cpu-moe " + std::to_string(v.cpu_moe_layers);
        Candidate c;
        try {
          c.plan = plan_model(tree, v);
        } catch (const InputError& e) {
          out.refused.push_back(label + ": " + e.what());
          continue;
        }
        const std::pair<Json, std::string> key{c.plan.device_map.to_json(), devices_text(subset)};
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;  // another strategy's same map
        seen.push_back(key);
        PredictShape shape;
        shape.concurrency = facts.concurrency;
        c.predicted = predict_plan(tree, c.plan, facts.facts, facts.shared_host, shape);
        const int n = n_cpu_moe_of(c.plan);
        c.label = std::string(strategy_name(s)) + " on " + devices_text(subset) + (n > 0 ? " with --n-cpu-moe " + std::to_string(n) : "");
        c.score = score_of(c.predicted, objective);
        out.ranked.push_back(std::move(c));
      }
    }
  }
  if (out.ranked.empty()) {
    throw InputError("--strategy fastest: no strategy on any subset of the devices fits these budgets (" +
                     (out.refused.empty() ? std::string("no candidates") : out.refused.front()) + ")");
  }
  // Predictions within 0.5% are a tie: the plan on fewer devices wins, then the first planned
  // (stages before accelerate's, lower ordinals first).
  auto used = [](const Candidate& c) {
    int n = 0;
    for (const DeviceReport& d : c.plan.devices) n += d.device.is_accelerator() && d.total_bytes > 0;
    return n;
  };
  std::stable_sort(out.ranked.begin(), out.ranked.end(), [&used](const Candidate& a, const Candidate& b) {
    const double tol = 0.005 * std::max(std::abs(a.score), std::abs(b.score));
    if (std::abs(a.score - b.score) > tol) return a.score > b.score;
    return used(a) < used(b);
  });
  return out;
}

Json fastest_to_json(const FastestChoice& c) {
  Json cands = Json::array();
  for (std::size_t i = 0; i < c.ranked.size(); ++i) {
    const Candidate& x = c.ranked[i];
    cands.push_back({{"rank", i + 1},
                     {"plan", x.label},
                     {"strategy", std::string(strategy_name(x.plan.strategy))},
                     {"n_cpu_moe", n_cpu_moe_of(x.plan)},
                     {"decode_tokens_per_s_batch_1", x.predicted.decode_tokens_per_s_1},
                     {"decode_tokens_per_s", x.predicted.decode_tokens_per_s_batch},
                     {"seconds_to_first_token", x.predicted.seconds_to_first_token},
                     {"joules_per_token", x.predicted.joules_per_token ? Json(*x.predicted.joules_per_token) : Json(nullptr)}});
  }
  return {{"objective", std::string(objective_name(c.objective))}, {"candidates", cands}, {"refused", c.refused}};
}

std::string runner_ups_to_text(const FastestChoice& c, std::size_t max_lines) {
  // The figures a line shows: plans whose figures print alike share one line.
  auto figures = [](const Prediction& p) {
    std::string f = decode_text(p) + ", " + first_token_text(p);
    if (p.joules_per_token) {
      char buf[64];
      std::snprintf(buf, sizeof buf, ", %.3f J/token", *p.joules_per_token);
      f += buf;
    }
    return f;
  };
  struct Line {
    std::size_t rank;
    std::string figures;
    std::vector<std::string> plans;
  };
  // Alike anywhere in the ranking (figures that differ past what is printed may rank between
  // them): each line at its best plan's rank.
  std::vector<Line> lines;
  for (std::size_t i = 1; i < c.ranked.size(); ++i) {
    const std::string f = figures(c.ranked[i].predicted);
    auto same = std::find_if(lines.begin(), lines.end(), [&](const Line& l) { return l.figures == f; });
    if (same == lines.end()) same = lines.insert(lines.end(), {i + 1, f, {}});
    same->plans.push_back(c.ranked[i].label);
  }
  std::string out = "fastest by " + std::string(objective_name(c.objective)) + ": " + c.ranked.front().label + " (of " +
                    std::to_string(c.ranked.size()) + " distinct plans";
  if (!c.refused.empty()) out += ", " + std::to_string(c.refused.size()) + " refused";
  out += lines.empty() ? ")\n" : "); runner-ups:\n";
  constexpr std::size_t kPlansPerLine = 3;
  for (std::size_t k = 0; k < lines.size() && k < max_lines; ++k) {
    const Line& l = lines[k];
    std::string plans;
    for (std::size_t j = 0; j < l.plans.size() && j < kPlansPerLine; ++j) plans += (j ? "; " : "") + l.plans[j];
    if (l.plans.size() > kPlansPerLine) plans += " and " + std::to_string(l.plans.size() - kPlansPerLine) + " more alike";
    out += "  " + std::to_string(l.rank) + ". " + plans + ": " + l.figures + "\n";
  }
  if (lines.size() > max_lines) out += "  … " + std::to_string(lines.size() - max_lines) + " slower (--json lists every plan)\n";
  return out;
}

}  // namespace plexus
