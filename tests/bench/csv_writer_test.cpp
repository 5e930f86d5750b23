// CSV rows: flattened names, joined lists, quoting, appending with the same columns and
// diverting (never corrupting) when the columns differ.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/csv_writer.h"
#include "test_util.h"

namespace plexus::bench {
namespace {

std::string cell(const FlatRow& row, const std::string& key) {
  for (const auto& [k, v] : row) {
    if (k == key) return v;
  }
  return "<absent>";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Json result(double tps) {
  return {{"name", "r"},
          {"config", {{"device_ids", {0, 1}}, {"scenario", {{"prompts", {"a, b", "c"}}}}}},
          {"throughput", {{"tokens_per_s", tps}}},
          {"latency", {{"ttft_ms", {{"p50", 12.5}}}}},
          {"gpu_stats", {{"gpu_0", {{"utilization_percent", 40}, {"power_draw_w", nullptr}}}}},
          {"plan", {{"device_map", {{"model.layers.0", 0}}}, {"devices", {{{"device", 0}, {"weights_bytes", 100}}}}}},
          {"timeline", {{"t_s", {0, 1}}}},
          {"requests", Json::array({{{"ttft_ms", 1}}})},
          {"note", "say \"hi\", twice"}};
}

TEST(CsvWriter, FlattensNestedKeysAndJoinsLists) {
  const FlatRow row = flatten_result(result(100.5));
  EXPECT_EQ(cell(row, "throughput_tokens_per_s"), "100.5");
  EXPECT_EQ(cell(row, "latency_ttft_ms_p50"), "12.5");
  EXPECT_EQ(cell(row, "gpu_stats_gpu_0_utilization_percent"), "40");
  EXPECT_EQ(cell(row, "gpu_stats_gpu_0_power_draw_w"), "");  // null → empty
  EXPECT_EQ(cell(row, "config_device_ids"), "0,1");
  EXPECT_EQ(cell(row, "plan_devices_0_weights_bytes"), "100");
  for (const char* gone : {"timeline_t_s", "requests_0_ttft_ms", "plan_device_map_model.layers.0", "config_scenario_prompts"}) {
    EXPECT_EQ(cell(row, gone), "<absent>") << gone;
  }
  EXPECT_EQ(csv_cell("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_cell("plain"), "plain");
}

TEST(CsvWriter, CommunicationPerTokenHasColumnsOfItsOwn) {
  Json r = result(1);
  r["execution"] = {{"communication", {{"ranks", 2}, {"bytes_per_token", 2048.0}, {"seconds_per_token", 0.00025}, {"share_of_forward_time", 0.3}}}};
  const FlatRow row = flatten_result(r);
  EXPECT_DOUBLE_EQ(std::stod(cell(row, "comm_bytes_per_token")), 2048.0);
  EXPECT_DOUBLE_EQ(std::stod(cell(row, "comm_ms_per_token")), 0.25);  // milliseconds
  EXPECT_DOUBLE_EQ(std::stod(cell(row, "comm_share")), 0.3);
  EXPECT_EQ(cell(row, "execution_communication_ranks"), "2");  // the full tree too
  // Without collectives (one device, or a failed point): empty cells.
  r["execution"]["communication"] = nullptr;
  const FlatRow none = flatten_result(r);
  for (const char* c : {"comm_bytes_per_token", "comm_ms_per_token", "comm_share"}) EXPECT_EQ(cell(none, c), "") << c;
  EXPECT_EQ(cell(flatten_result(Json::object()), "comm_share"), "");
}

TEST(CsvWriter, AppendsRowsWithTheSameColumns) {
  testing::TempDir dir("bench-csv");
  const std::string path = dir / "r.csv";
  const CsvWritten a = write_csv(path, {flatten_result(result(1))});
  EXPECT_FALSE(a.appended);
  const CsvWritten b = write_csv(path, {flatten_result(result(2)), flatten_result(result(3))});
  EXPECT_TRUE(b.appended);
  EXPECT_FALSE(b.diverted);
  EXPECT_EQ(b.path, path);
  const std::string text = slurp(path);
  std::istringstream lines(text);
  std::string header, line;
  std::getline(lines, header);
  int rows = 0;
  while (std::getline(lines, line)) ++rows;
  EXPECT_EQ(rows, 3);
  EXPECT_NE(header.find("throughput_tokens_per_s"), std::string::npos);
  EXPECT_NE(text.find("\"say \"\"hi\"\", twice\""), std::string::npos);
  EXPECT_NE(text.find("\"0,1\""), std::string::npos);  // a joined list is one quoted cell
}

TEST(CsvWriter, OtherColumnsGoToANewFileLeavingTheOldOneIntact) {
  testing::TempDir dir("bench-csv");
  const std::string path = dir / "r.csv";
  write_csv(path, {flatten_result(result(1))});
  const std::string before = slurp(path);
  Json other = result(2);
  other["gpu_stats"]["gpu_1"] = {{"utilization_percent", 10}};
  const CsvWritten w = write_csv(path, {flatten_result(other)});
  EXPECT_TRUE(w.diverted);
  EXPECT_EQ(w.path, dir / "r-2.csv");
  EXPECT_EQ(slurp(path), before);
  // The next run with those columns appends to r-2.csv.
  const CsvWritten again = write_csv(path, {flatten_result(other)});
  EXPECT_EQ(again.path, dir / "r-2.csv");
  EXPECT_TRUE(again.appended);
}

TEST(CsvWriter, RowsWithDifferentKeysShareTheUnionOfColumns) {
  testing::TempDir dir("bench-csv");
  Json other = result(2);
  other["extra"] = 5;
  const CsvWritten w = write_csv(dir / "u.csv", {flatten_result(result(1)), flatten_result(other)});
  EXPECT_EQ(w.rows, 2);
  const std::string header = read_csv_header(w.path);
  EXPECT_NE(header.find("extra"), std::string::npos);
}

TEST(CsvWriter, TheComparedColumnsComeFirst) {
  testing::TempDir dir("bench-csv");
  const CsvWritten w = write_csv(dir / "o.csv", {flatten_result(result(1))});
  const std::string header = read_csv_header(w.path);
  EXPECT_EQ(header.rfind("name,engine,throughput_tokens_per_s,throughput_total_tokens_per_s,throughput_samples_per_s,"
                         "latency_ttft_ms_p50,latency_ttft_ms_p90,latency_ttft_ms_p99,latency_tpot_ms_p50,latency_tpot_ms_p90,"
                         "latency_tpot_ms_p99,latency_e2e_ms_p50,latency_e2e_ms_p90,latency_e2e_ms_p99,energy_total_j,"
                         "energy_j_per_token,config_device_ids,comm_bytes_per_token,comm_ms_per_token,comm_share,status,error,",
                         0),
            0u)
      << header;
  EXPECT_NE(header.find("gpu_stats_gpu_0_utilization_percent"), std::string::npos);  // the rest after them
  std::istringstream lines(slurp(w.path));
  std::string line;
  std::getline(lines, line);
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("r,,1.0,,,12.5,,,,,,,,,,,\"0,1\",,,,", 0), 0u) << line;  // (the engine: none in this result)
}

TEST(CsvWriter, AReportRewrittenAsRowsGrowKeepsOldRowsAndUndoesADivertedFile) {
  testing::TempDir dir("bench-csv");
  const std::string path = dir / "g.csv";
  write_csv(path, {flatten_result(result(1))});
  const std::string before = slurp(path);
  CsvReport report(path);
  std::vector<FlatRow> rows = {flatten_result(result(2))};
  EXPECT_TRUE(report.write(rows).appended);
  rows.push_back(flatten_result(result(3)));
  const CsvWritten two = report.write(rows);
  EXPECT_EQ(two.path, path);
  EXPECT_EQ(two.rows, 2);
  const std::string after = slurp(path);
  EXPECT_EQ(after.rfind(before, 0), 0u);  // the old rows, untouched, then this run's two
  EXPECT_EQ(std::count(after.begin(), after.end(), '\n'), 4);
  // A third row with new columns: all three go to g-2.csv and g.csv is as it was.
  Json other = result(4);
  other["extra"] = 1;
  rows.push_back(flatten_result(other));
  const CsvWritten three = report.write(rows);
  EXPECT_TRUE(three.diverted);
  EXPECT_EQ(three.path, dir / "g-2.csv");
  EXPECT_EQ(slurp(path), before);
  const std::string diverted = slurp(three.path);
  EXPECT_EQ(std::count(diverted.begin(), diverted.end(), '\n'), 4);
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace plexus::bench
