// A plan as JSON ({"strategy", "dtype", "device_map", "placement", "devices": […]}) and as the
// readable per-device table `plexus plan` prints.
#pragma once
#include <string>

#include "core/json.h"
#include "planner/memory_estimate.h"
#include "planner/planner.h"

namespace plexus {

Json plan_to_json(const Plan& plan);
// One device of a plan as plan_to_json lists it: budget, weights, KV cache, buffers, what it holds.
Json device_report_to_json(const DeviceReport& d);
std::string plan_to_table(const Plan& plan);

// "0-3,5" for {0,1,2,3,5}.
std::string format_ranges(const std::vector<int>& sorted_values);

Json estimate_to_json(const ModelEstimate& e, const ModelConfig& c);
std::string estimate_to_table(const ModelEstimate& e, const ModelConfig& c);

}  // namespace plexus
