// The real `plexus serve` on the fake NVML (one GPU of constant, known power and utilisation)
// under a load of concurrent requests from curl: /metrics reports the idle power measured before
// the load, the load's time, energy, average power and utilisation, and J/token over the load
// next to the J/token attributed to requests (issue 33, "Energy that tells the truth").
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

#include "server_process.h"

namespace plexus::testing {
namespace {

constexpr double kWatts = 150;       // the fake GPU's power, constant
constexpr double kUtilization = 37;  // its utilisation reading, percent
constexpr double kIntervalS = 0.05;  // the server's sampling interval (cmd_serve.cpp)

// The value of the line "NAME VALUE" or "NAME{LABELS} VALUE" (labels starting with `labels`).
std::optional<double> metric(const std::string& body, const std::string& name, const std::string& labels = "") {
  const std::string head = "\n" + name + (labels.empty() ? " " : "{" + labels);
  const std::size_t at = body.find(head);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t value = labels.empty() ? at + head.size() : body.find("} ", at) + 2;  // (a name may hold spaces)
  return std::atof(body.c_str() + value);
}

TEST(ServeEnergy, IdleBeforeTheLoadAndTheLoadFromTheFakeGpu) {
  TempDir dir("serve-energy");
  const std::string model = dir / "tiny";
  const std::string tokenizer = std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3";
  const ProcessResult made = run_plexus("make-model " + shell_quote(model) + " --tokenizer " + shell_quote(tokenizer));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string script = dir / "gpu.json";
  std::ofstream(script) << R"({"devices": [{"name": "Fake H100", "power_w": 150, "utilization": 37,
                               "memory_total_mb": 81920, "memory_used_mb": 1024}]})";
  ServerProcess server(shell_quote(model) + " --threads 2 --context 1024 --max-sequences 4", dir, 120,
                       "PLEXUS_NVML_LIBRARY=" + shell_quote(FAKE_NVML_LIBRARY) + " PLEXUS_FAKE_NVML_SCRIPT=" +
                           shell_quote(script) + " PLEXUS_ROCM_SMI_LIBRARY=/nonexistent/librocm_smi64.so");
  ASSERT_TRUE(server.ok());

  // Before any request: the idle power is measured (before the listening line), the load is
  // empty, and what has no reading yet (the load's power, utilisation, J/token) is absent.
  std::string m = curl("GET", server.url("/metrics")).body;
  const std::string gpu = "device=\"0\"";
  EXPECT_NEAR(metric(m, "plexus_idle_power_watts", gpu).value_or(-1), kWatts, 0.01) << m;
  EXPECT_EQ(metric(m, "plexus_load_seconds_total"), 0.0) << m;
  EXPECT_EQ(metric(m, "plexus_load_energy_joules"), 0.0) << m;
  EXPECT_FALSE(metric(m, "plexus_load_average_power_watts", gpu)) << m;
  EXPECT_FALSE(metric(m, "plexus_load_utilization_ratio", gpu)) << m;
  EXPECT_FALSE(metric(m, "plexus_load_joules_per_token")) << m;

  // The load: four concurrent requests.
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  std::vector<HttpResult> answers(4);
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      const std::string body = R"({"prompt": [1, 2, 3, )" + std::to_string(4 + i) + R"(], "max_tokens": 96, "temperature": 0})";
      answers[static_cast<std::size_t>(i)] = curl("POST", server.url("/v1/completions"), body);
    });
  }
  for (std::thread& c : clients) c.join();
  const double client_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const HttpResult& a : answers) ASSERT_EQ(a.status, 200) << a.body;

  m = curl("GET", server.url("/metrics")).body;
  const double load_s = metric(m, "plexus_load_seconds_total").value_or(-1);
  EXPECT_GT(load_s, 0) << m;
  EXPECT_LE(load_s, client_s) << m;  // requests are in flight only while their clients wait
  EXPECT_NEAR(metric(m, "plexus_idle_power_watts", gpu).value_or(-1), kWatts, 0.01) << m;  // unchanged by the load
  EXPECT_NEAR(metric(m, "plexus_load_average_power_watts", gpu).value_or(-1), kWatts, 0.01) << m;
  EXPECT_NEAR(metric(m, "plexus_load_utilization_ratio", gpu).value_or(-1), kUtilization / 100, 1e-9) << m;
  const auto load_j = metric(m, "plexus_load_energy_joules");
  const auto tokens = metric(m, "plexus_generation_tokens_total");
  const auto attributed = metric(m, "plexus_energy_attributed_joules");
  ASSERT_TRUE(load_j && tokens && attributed) << m;
  ASSERT_GT(*tokens, 0) << m;
  // From the same counter: the requests' steps lie inside the load, so their attributed energy
  // is part of the load's (the counter read at most one sampling interval late at each end).
  const double slack = 2 * kIntervalS * kWatts;
  EXPECT_LE(*attributed, *load_j + slack) << m;
  EXPECT_LE(*load_j, *metric(m, "plexus_energy_measured_joules") + slack) << m;
  EXPECT_NEAR(metric(m, "plexus_load_joules_per_token").value_or(-1), *load_j / *tokens, 1e-9 * *load_j / *tokens) << m;
  EXPECT_LE(*metric(m, "plexus_energy_joules_per_token"), (*load_j + slack) / *tokens) << m;
  // The fake GPU is the only device with power here (no host RAPL counter): its power × the
  // load's time, up to a sampling interval of the counter at each end.
  if (!metric(m, "plexus_device_power_watts", "device=\"cpu\"")) {
    EXPECT_NEAR(*load_j, kWatts * load_s, slack) << m;
  }
}

}  // namespace
}  // namespace plexus::testing
