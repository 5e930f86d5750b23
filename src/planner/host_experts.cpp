// Host-kept experts: fit, slow-path bytes and the smallest --n-cpu-moe.
#include "planner/host_experts.h"

#include "planner/moe_reads.h"
#include "planner/run_buffers.h"
#include "planner/sized_tree.h"
#include "planner/stage_layout.h"

namespace plexus {

namespace {

int accelerator_count(const Plan& plan) {
  int n = 0;
  for (const DeviceId& d : plan.planned_budgets.accelerators()) n = std::max(n, d.ordinal() + 1);
  return n;
}

}  // namespace

bool fits_accelerators(const ModuleTree& tree, const Plan& plan) {
  const int n = accelerator_count(plan);
  return n > 0 && !make_stage_layout(tree, plan.device_map, n).streams();
}

double slow_path_bytes_per_step(const ModuleTree& tree, const Plan& plan) {
  const ModelConfig& c = tree.config();
  const StageLayout layout = make_stage_layout(tree, plan.device_map, accelerator_count(plan));
  const SizedTree sized = SizedTree::build(tree, plan.dtype);
  const double tokens = static_cast<double>(std::max<std::int64_t>(1, plan.runtime.batch));
  double bytes = 0;
  for (int l = 0; l < c.num_layers; ++l) {
    const ModulePlace& p = layout.layers[static_cast<std::size_t>(l)];
    if (p.residence != Residence::kDevice) bytes += static_cast<double>(packed_layer_bytes(sized, c, l));
    if (p.host_experts) {
      bytes += static_cast<double>(layer_expert_bytes(sized, c, l)) *
               expected_experts_read(c.moe.num_experts, c.moe.experts_per_token, tokens) / static_cast<double>(c.moe.num_experts);
    }
  }
  if (layout.head.residence != Residence::kDevice) bytes += static_cast<double>(head_matrix_bytes(sized));
  return bytes;
}

std::optional<int> smallest_fitting_cpu_moe_layers(const ModuleTree& tree, int layers,
                                                   const std::function<std::optional<Plan>(int)>& plan_with) {
  auto fits = [&](int n) {
    const std::optional<Plan> p = plan_with(n);
    return p && fits_accelerators(tree, *p);
  };
  if (layers < 1 || !fits(layers)) return std::nullopt;
  int lo = 1, hi = layers;  // hi fits
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(mid)) hi = mid;
    else lo = mid + 1;
  }
  return hi;
}

int n_cpu_moe_of(const Plan& plan) { return plan.host_expert_layers.empty() ? 0 : plan.host_expert_layers.back() + 1; }

}  // namespace plexus
