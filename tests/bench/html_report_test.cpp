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
  EXPECT_NE(h.find("<section id=\"summary\">"), std::string::npos);
  EXPECT_NE(h.find("<section id=\"run-0\">"), std::string::npos);
}

// The summary table carries the energy facts of issue 33: idle power before the load, average
// power and GPU utilisation during it, J/token over the whole run and of the forward passes.
TEST(HtmlReport, SummaryShowsIdleLoadAndBothJoulesPerToken) {
  Json r = run(100, Json::object());
  r["energy"] = {{"total_j", 5.0}, {"j_per_token", 0.5}, {"j_per_token_attributed", 0.3125}, {"idle_power_w", 61.5},
                 {"avg_power_w", 149.5}, {"avg_utilization_percent", 37.5}, {"method", "counter"}};
  const std::string h = html_report("e", {r}, nullptr);
  for (const char* s : {"<th>J/token<br>run / forwards</th>", "<th>idle W</th>", "<th>load W / GPU util %</th>",
                        "<td>0.5000 / 0.3125</td>", "<td>61.5</td>", "<td>149.5 / 37.5</td>"}) {
    EXPECT_NE(h.find(s), std::string::npos) << s;
  }
  r["energy"] = {{"total_j", nullptr}, {"j_per_token", nullptr}, {"method", "unavailable"}};
  EXPECT_NE(html_report("e", {r}, nullptr).find("<td>n/a / n/a</td><td>n/a</td><td>n/a / n/a</td>"), std::string::npos);
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

TEST(HtmlReport, EchoesTheScenarioAndPlotsDevicesAndLatency) {
  Json r = run(100, Json::object());
  r["config"]["scenario"] = {{"batch_size", 4}, {"num_samples", 8}, {"max_new_tokens", 16}, {"warmup_samples", 1}};
  r["config"]["backend"] = {{"device_map", "stages"}, {"dtype", "bf16"}, {"threads", 3}};
  r["config"]["device_ids"] = {0, 1};
  r["throughput"]["samples"] = 8;
  r["latency"]["tpot_ms"]["p99"] = 7.25;
  r["requests"] = Json::array();
  for (int i = 0; i < 8; ++i) r["requests"].push_back({{"ttft_ms", 1.0 + i}, {"e2e_ms", 10.0 + i}});
  r["timeline"]["devices"]["gpu_0"]["memory_used_mb"] = {1000, 1200, 1100};
  r["device_timeline"] = {{"t_s", {0.0, 0.5, 1.0}},
                          {"devices", {{"virtual:0", {{"busy_fraction", {nullptr, 0.5, 0.75}}, {"memory_in_use_mb", {10, 20, 15}}}},
                                       {"virtual:1", {{"busy_fraction", {nullptr, 0.25, 0.5}}, {"memory_in_use_mb", {12, 22, 17}}}}}}};
  const std::string h = html_report("scn", {r}, nullptr);
  for (const char* s : {"batch size <b>4</b>", "samples <b>8</b>", "new tokens <b>16</b>", "strategy <b>stages</b>",
                        "dtype <b>bf16</b>", "threads <b>3</b>", "devices <b>0,1</b>", "TPOT ms<br>p50 / p99", "2.0 / 7.25",
                        "Memory in use per device", "Memory used per device", "End-to-end latency per request",
                        "Time to first token per request", "virtual:1"}) {
    EXPECT_NE(h.find(s), std::string::npos) << s;
  }
}

// The devices' busy share is drawn with the host's utilisation, sampled over the whole run.
TEST(HtmlReport, UtilisationShowsTheHostAndEveryDevice) {
  Json r = run(100, Json::object());
  r["device_timeline"] = {{"t_s", {0.0, 0.1, 0.2}},
                          {"devices", {{"virtual:0", {{"busy_fraction", {nullptr, 0.5, 0.75}}, {"memory_in_use_mb", {10, 10, 10}}}},
                                       {"virtual:1", {{"busy_fraction", {nullptr, 0.25, 0.5}}, {"memory_in_use_mb", {10, 10, 10}}}}}}};
  const std::string h = html_report("u", {r}, nullptr);
  const std::size_t util = h.find("Utilisation per device"), next = h.find("</svg>", util);
  ASSERT_NE(util, std::string::npos);
  const std::string chart = h.substr(util, next - util);
  for (const char* s : {"data-series=\"cpu\"", "data-series=\"virtual:0 busy\"", "data-series=\"virtual:1 busy\""}) {
    EXPECT_NE(chart.find(s), std::string::npos) << s << " in " << chart;
  }
  // Equal memory lines: the second is named as equal to the first and drawn dashed over it.
  EXPECT_NE(h.find("virtual:1 (= virtual:0)"), std::string::npos) << h;
}

TEST(HtmlReport, UnavailableEnergySaysWhy) {
  Json r = run(100, Json::object());
  r["energy"] = {{"total_j", nullptr}, {"j_per_token", nullptr}, {"method", "unavailable"},
                 {"note", "Energy unavailable: no power source on this host — no GPU power (nvml: not found)"}};
  const std::string h = html_report("e", {r, r}, nullptr);
  EXPECT_NE(h.find("unavailable<sup>1</sup>"), std::string::npos) << h;
  const std::size_t note = h.find("<sup>1</sup> Energy unavailable: no power source on this host");
  EXPECT_NE(note, std::string::npos) << h;
  EXPECT_EQ(h.find("<sup>1</sup> Energy", note + 1), std::string::npos) << "each reason once";
}

TEST(HtmlReport, ShowsTheDtypeThatRanWhenTheConfigNamesNone) {
  Json r = run(100, Json::object());
  r["config"]["backend"] = {{"device_map", "stages"}};
  r["plan"] = {{"dtype", "bfloat16"}};
  const std::string h = html_report("d", {r}, nullptr);
  EXPECT_NE(h.find("dtype <b>bfloat16</b>"), std::string::npos) << h;
  EXPECT_EQ(h.find("dtype <b>n/a</b>"), std::string::npos);
}

// Few requests: a dot each on an axis from 0, not a few wide bins.
TEST(HtmlReport, FewRequestsAreDrawnOneDotEach) {
  Json r = run(100, Json::object());
  r["requests"] = Json::array();
  for (int i = 0; i < 8; ++i) r["requests"].push_back({{"ttft_ms", i < 4 ? 20.0 : 40.0}, {"e2e_ms", i < 4 ? 300.0 : 310.0}});
  const std::string h = html_report("l", {r}, nullptr);
  std::size_t dots = 0;
  for (std::size_t at = h.find("class=\"dot\""); at != std::string::npos; at = h.find("class=\"dot\"", at + 1)) ++dots;
  EXPECT_EQ(dots, 16u);  // 8 requests × (end-to-end, first token)
  EXPECT_NE(h.find("8 requests, median 305.0 ms"), std::string::npos) << h;
}

TEST(HtmlReport, TensorParallelRunsSayTheirCommunicationPerToken) {
  Json r = run(100, Json::object());
  EXPECT_EQ(html_report("one", {r}, nullptr).find("tensor-parallel ranks"), std::string::npos);  // none without collectives
  r["config"]["backend"] = {{"tensor_parallel", 2}, {"pipeline_parallel", 1}};
  r["execution"]["communication"] = {{"ranks", 2},
                                     {"bytes_per_token", 2048.0},
                                     {"seconds_per_token", 0.00025},
                                     {"share_of_forward_time", 0.3},
                                     {"collectives", {{"all_reduce", {{"calls", 16}}}, {"all_gather", {{"calls", 0}}}}}};
  const std::string h = html_report("tp", {r}, nullptr);
  EXPECT_NE(h.find("tensor parallel <b>2</b> × pipeline parallel <b>1</b>"), std::string::npos) << h;
  EXPECT_NE(h.find("Communication of 2 tensor-parallel ranks: 2.00 KiB per token and rank in 0.250 ms, 30.0% of the forward time "
                   "(16 all-reduce, 0 all-gather calls)"),
            std::string::npos)
      << h;
}

TEST(HtmlReport, FailedAndInterruptedRunsAreShownWithTheirError) {
  const Json failed = {{"name", "f"}, {"status", "failed"}, {"error", "context <too> small"}, {"sweep_point", {{"scenario.batch_size", 2}}},
                       {"config", {{"model", "m"}}}};
  const std::string h = html_report("f", {run(100, {{"scenario.batch_size", 1}}), failed}, {{"scenario.batch_size", {1, 2, 4}}}, 3, true);
  EXPECT_NE(h.find("2 of 3 run(s) recorded, 1 failed; interrupted"), std::string::npos);
  EXPECT_NE(h.find("failed: context &lt;too&gt; small"), std::string::npos);
  EXPECT_NE(h.rfind("</html>"), std::string::npos);
}

}  // namespace
}  // namespace plexus::bench
