// accelerate compatibility: every case of tests/data/golden/accelerate_device_maps.jsonl must be
// placed parameter for parameter as accelerate placed it.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/json.h"
#include "core/units.h"
#include "model/config.h"
#include "planner/planner.h"

namespace plexus {
namespace {

struct Case {
  Json j;
  ModuleTree tree;
  PlanRequest request;
};

std::vector<Json> load_cases() {
  std::ifstream in(std::string(PLEXUS_GOLDEN_DIR) + "/accelerate_device_maps.jsonl");
  std::vector<Json> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(parse_json(line, "accelerate_device_maps.jsonl"));
  }
  return out;
}

Case make_case(const Json& j) {
  Case c{j, ModuleTree::from_config(parse_model_config(j["config"], j["id"].get<std::string>())), {}};
  c.request.strategy = parse_strategy_or_throw(j["strategy"].get<std::string>());
  c.request.dtype = parse_weight_dtype_or_throw(j["dtype"].get<std::string>(), "dtype");
  std::vector<DeviceBudget> budgets;
  for (auto it = j["max_memory"].begin(); it != j["max_memory"].end(); ++it) {
    budgets.push_back({DeviceId::parse(it.key(), "max_memory"), parse_memory_size(it.value().get<std::string>())});
  }
  c.request.budgets = Budgets(budgets);
  return c;
}

TEST(AccelerateGolden, EveryCaseMatchesEveryParameter) {
  const std::vector<Json> cases = load_cases();
  ASSERT_GE(cases.size(), 60u);
  int matched = 0;
  for (const Json& j : cases) {
    const Case c = make_case(j);
    const Plan plan = plan_model(c.tree, c.request);
    const Json want = j["placement"];
    int bad = 0;
    ASSERT_EQ(plan.placement.size(), want.size()) << j["id"];
    for (const auto& [name, dev] : plan.placement) {
      ASSERT_TRUE(want.contains(name)) << j["id"] << ": golden lacks " << name;
      if (!(DeviceId::from_json(want[name], "golden") == dev)) {
        if (bad++ < 3) ADD_FAILURE() << j["id"] << " " << j["label"] << " " << j["strategy"] << ": " << name << " on "
                                     << dev.to_string() << ", accelerate: " << want[name].dump();
      }
    }
    const DeviceMap golden_map = DeviceMap::from_json(j["accelerate_device_map"], "golden");
    EXPECT_TRUE(plan.device_map == golden_map) << j["id"] << ": map " << plan.device_map.to_json().dump()
                                               << "\n  accelerate: " << golden_map.to_json().dump();
    if (bad == 0) ++matched;
  }
  EXPECT_EQ(matched, static_cast<int>(cases.size()));
  std::printf("golden: %d of %zu cases match for every parameter\n", matched, cases.size());
}

}  // namespace
}  // namespace plexus
