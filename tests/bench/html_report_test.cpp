// The HTML report is one self-contained file: inline SVG, no external references, escaped text.
#include <gtest/gtest.h>

#include "bench/html_report.h"

namespace plexus::bench {
namespace {

Json run(double tps, const Json& sweep_point) {
  return {{"name", "<script>alert(1)</script>"},
          {"timestamp", "2026-11-26T00:00:00Z"},
          {"sweep_point", sweep_point},
          {"config", {{"model", "models/m&m"}}},
          {"throughput", {{"tokens_per_s", tps}, {"total_tokens_per_s", tps * 2}, {"samples_per_s", 1}}},
          {"latency", {{"ttft_ms", {{"p50", 10}, {"p99", 20}}}, {"tpot_ms", {{"p50", 2}}}, {"e2e_ms", {{"p50", 50}, {"p99", 60}}}}},
          {"energy", {{"total_j", 5.0}, {"j_per_token", 0.5}, {"method", "counter"}}},
          {"gpu_stats", {{"gpu_0", {{"name", "GPU <0>"}, {"utilization_percent", 40}}}}},
          {"execution", {{"devices", Json::array({{{"name", "virtual:0"}, {"holds", "embedding, layers 0-3"}, {"busy_fraction", 0.5}}})}}},
          {"environment", {{"hostname", "h"}, {"cpu", "cpu \"x\""}}},
          {"timeline",
           {{"t_s", {0.0, 0.1, 0.2}},
            {"devices", {{"gpu_0", {{"utilization_percent", {10, 50, nullptr}}, {"power_w", {100, 150, 140}}}},
                         {"cpu", {{"utilization_percent", {20, 30, 40}}, {"power_w", {nullptr, nullptr, nullptr}}}}}}}}};
}

TEST(HtmlReport, SelfContainedWithChartsAndEscapedText) {
  const std::string h = html_report("a<b", {run(100, Json::object())}, nullptr);
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(h.find("<svg"), std::string::npos);
  EXPECT_NE(h.find("<polyline"), std::string::npos);
  EXPECT_NE(h.find("Utilisation per device"), std::string::npos);
  EXPECT_NE(h.find("Power per device"), std::string::npos);
  EXPECT_EQ(h.find("http://"), std::string::npos);
  EXPECT_EQ(h.find("https://"), std::string::npos);
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_EQ(h.find(" src="), std::string::npos);
  EXPECT_EQ(h.find(" href="), std::string::npos);
  EXPECT_NE(h.find("a&lt;b"), std::string::npos);
  EXPECT_NE(h.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(h.find("models/m&amp;m"), std::string::npos);
  EXPECT_NE(h.find("GPU &lt;0&gt;"), std::string::npos);
  EXPECT_NE(h.find("Summary"), std::string::npos);
  EXPECT_NE(h.find("Busy fraction per device"), std::string::npos);
  EXPECT_EQ(h.find("Sweep"), std::string::npos);
}

TEST(HtmlReport, SweepsChartThroughputAndEnergyPerPoint) {
  const Json sweep = {{"scenario.batch_size", {1, 4}}};
  const std::string h = html_report("s", {run(100, {{"scenario.batch_size", 1}}), run(300, {{"scenario.batch_size", 4}})}, sweep);
  EXPECT_NE(h.find("Output throughput per point"), std::string::npos);
  EXPECT_NE(h.find("Energy per output token per point"), std::string::npos);
  EXPECT_NE(h.find("batch_size=4"), std::string::npos);
  EXPECT_EQ(h.find("http://"), std::string::npos);
}

TEST(HtmlReport, WithoutPowerSaysSoInsteadOfDrawingZeros) {
  Json r = run(100, Json::object());
  r["timeline"]["devices"].erase("gpu_0");
  const std::string h = html_report("n", {r}, nullptr);
  EXPECT_EQ(h.find("Power per device"), std::string::npos);
  EXPECT_NE(h.find("No power readings"), std::string::npos);
}

}  // namespace
}  // namespace plexus::bench
