// `gpuscope cost` as a user meets it: scenarios run with --simulate billed to the cent (a parked node is
// all idle dollars; a GPU lost for a minute is paid, down, not working), the budget check's exit code,
// the real H100 recording imported into a data directory and read back from a running agent's query
// API (--url) with the same figures, the text report's parts, and one-line errors for bad input.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "e2e/agent_fixture.h"
#include "e2e/command_runner.h"

namespace gpuscope::e2e {
namespace {

using nlohmann::json;

const std::string kExe = GPUSCOPE_EXE;
const std::string kRecordingDir = GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/";
constexpr double kH100OnDemand = 5.505;  // catalog/gpu_prices.yaml

json run_json(const std::vector<std::string>& args) {
  auto r = run_command(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

TEST(CostSimulate, AParkedNodeIsAllIdleDollarsToTheCent) {
  const json j = run_json({kExe, "--simulate=" + scenario("idle.yaml"), "cost", "--duration", "1h", "--format", "json"});
  ASSERT_EQ(j["gpus"].size(), 8u) << j.dump();
  for (const auto& g : j["gpus"]) {
    const json& t = g["totals"];
    EXPECT_DOUBLE_EQ(t["seconds"].get<double>(), 3600) << g["gpu"];
    EXPECT_NEAR(t["cost_usd"].get<double>(), kH100OnDemand, 0.005) << g["gpu"];
    EXPECT_NEAR(t["idle_usd"].get<double>(), t["cost_usd"].get<double>(), 0.005) << g["gpu"];
    EXPECT_NEAR(t["unused_usd"].get<double>(), t["cost_usd"].get<double>(), 0.005) << g["gpu"];
    EXPECT_LT(t["efficiency_ratio"].get<double>(), 0.01) << g["gpu"];
    EXPECT_GT(t["energy_joules"].get<double>(), 0) << g["gpu"];
    EXPECT_EQ(g["price_source"], "recorded");
  }
  EXPECT_NEAR(j["total"]["cost_usd"].get<double>(), 8 * kH100OnDemand, 0.01);
  EXPECT_NEAR(j["monthly_projection_usd"].get<double>(), 8 * kH100OnDemand * 730, 0.5);
  EXPECT_EQ(j["top_wasters"].size(), 5u) << "all eight wasted, the five worst are named";
}

TEST(CostSimulate, ALostGpuIsPaidAndDownNotWorking) {
  const json j = run_json({kExe, "--simulate=" + scenario("gpu_lost.yaml"), "cost", "--duration", "5m", "--interval",
                           "1s", "--format", "json"});
  ASSERT_EQ(j["gpus"].size(), 2u) << j.dump();
  const json& lost = j["gpus"][1]["totals"];
  EXPECT_NEAR(lost["down_seconds"].get<double>(), 60, 2) << "lost from 1m to 2m";
  EXPECT_NEAR(lost["cost_usd"].get<double>(), kH100OnDemand * 300 / 3600, 0.005) << "a lost GPU is still paid";
  EXPECT_NEAR(lost["down_usd"].get<double>(), kH100OnDemand * 60 / 3600, 0.005);
  const json& healthy = j["gpus"][0]["totals"];
  EXPECT_EQ(healthy["down_seconds"].get<double>(), 0);
  EXPECT_GT(healthy["working_seconds"].get<double>(), lost["working_seconds"].get<double>() + 30)
      << "the lost minute bought no work";
}

TEST(CostSimulate, TheBudgetCheckExitsOneOverBudget) {
  // 8 idle H100s project to $32,149/month.
  const std::vector<std::string> base{kExe, "--simulate=" + scenario("idle.yaml"), "cost", "--duration", "1h"};
  auto over = base;
  over.insert(over.end(), {"--budget", "$30,000/month"});
  auto r = run_command(over);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.err, "gpuscope: over budget: projected $32,149.20/month > $30,000.00/month\n");
  EXPECT_NE(r.out.find("OVER the budget of $30,000.00/month by $2,149.20"), std::string::npos) << r.out;
  auto within = base;
  within.insert(within.end(), {"--budget", "1100/day"});  // $33,458/month
  r = run_command(within);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("within the budget of $33,458.33/month"), std::string::npos) << r.out;
}

TEST(CostSimulate, TheTextReportHasTheTableProjectionWastersAndRightSizing) {
  auto r = run_command({kExe, "--simulate=" + scenario("idle.yaml"), "cost", "--duration", "2h"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GPU    HOURS    COST    IDLE  UNUSED  ENERGY kWh  ENERGY $  EFFICIENCY"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("GPU 0    2.0  $11.01  $11.01  $11.01"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TOTAL   16.0  $88.08  $88.08  $88.08"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Projected: $32,149.20/month at the rate of the last 2h"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Top wasters:\n  GPU 0 (NVIDIA H100 80GB HBM3): idle 100% of 2h, $11.01 wasted"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Right-sizing"), std::string::npos) << r.out;
}

TEST(CostSimulate, CsvHasOneRowPerGpuAndATotal) {
  auto r = run_command({kExe, "--simulate=" + scenario("idle.yaml"), "cost", "--duration", "1h", "--format", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 10u) << r.out;
  EXPECT_EQ(rows[0],
            "name,gpus,hours,cost_usd,idle_usd,unused_usd,busy_not_working_usd,down_usd,energy_kwh,energy_usd,efficiency_ratio");
  EXPECT_EQ(rows[1].substr(0, 32), "GPU 0,GPU 0,1.0000,5.51,5.51,5.5") << rows[1];
  EXPECT_EQ(rows[9].substr(0, 21), "TOTAL,,8.0000,44.04,4") << rows[9];
}

// The real recording: imported, then read from the data directory and from an agent serving it.
class CostRecording : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    auto r = run_command({kExe, "import", "--data-dir", data_dir(), kRecordingDir + "history.json.gz"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(kRecordingDir + "phases.json");
    const json phases = json::parse(in);
    start_ = std::to_string(phases["phases"].front()["start"].get<double>());
    end_ = std::to_string(phases["phases"].back()["end"].get<double>());
    span_s_ = phases["phases"].back()["end"].get<double>() - phases["phases"].front()["start"].get<double>();
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string data_dir() { return (dir_->path / "data").string(); }
  static TempDir* dir_;
  static std::string start_, end_;
  static double span_s_;
};
TempDir* CostRecording::dir_ = nullptr;
std::string CostRecording::start_, CostRecording::end_;
double CostRecording::span_s_ = 0;

TEST_F(CostRecording, AnAgentsQueryApiGivesWhatItsDataDirectoryGives) {
  const json by_dir = run_json({kExe, "cost", "--data-dir", data_dir(), "--start", start_, "--end", end_, "--by",
                                "process", "--format", "json"});
  ASSERT_EQ(by_dir["gpus"].size(), 1u) << by_dir.dump();
  const json& t = by_dir["gpus"][0]["totals"];
  EXPECT_NEAR(t["seconds"].get<double>(), span_s_, 1.5) << "a reading a second through the phases";
  EXPECT_GT(t["idle_usd"].get<double>(), 0);
  EXPECT_GT(t["busy_not_working_usd"].get<double>(), 0);
  EXPECT_GT(t["working_usd"].get<double>(), 0);
  // The workload's python process holds the GPU throughout: nearly every dollar is its.
  ASSERT_FALSE(by_dir["rows"].empty());
  EXPECT_EQ(by_dir["rows"][0]["name"].get<std::string>().find("pid "), 0u) << by_dir["rows"].dump();
  EXPECT_GT(by_dir["rows"][0]["cost_usd"].get<double>(), 0.9 * t["cost_usd"].get<double>());

  TempDir served;
  const std::string dir = (served.path / "data").string();
  ASSERT_EQ(run_command({kExe, "import", "--data-dir", dir, kRecordingDir + "history.json.gz"}).exit_code, 0);
  Agent agent({"--simulate=" + scenario("idle.yaml"), "serve", "--listen", "127.0.0.1:0", "--data-dir", dir,
               "--retention", "520w"},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port);
  const json by_url = run_json({kExe, "cost", "--url", url, "--start", start_, "--end", end_, "--by", "process",
                                "--format", "json"});
  EXPECT_EQ(by_url, by_dir);
}

TEST_F(CostRecording, AWindowWithoutReadingsSaysWhereTheyAre) {
  auto r = run_command({kExe, "cost", "--data-dir", data_dir(), "--start", "2020-01-01T00:00:00Z", "--end",
                        "2020-01-02T00:00:00Z"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no GPU readings between 2020-01-01T00:00:00Z and 2020-01-02T00:00:00Z; its readings begin at "
                       "2026-11-25T"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(CostRecording, AnUnknownLabelIsAUsageErrorNamingTheLabelsThereAre) {
  auto r = run_command({kExe, "cost", "--data-dir", data_dir(), "--start", start_, "--end", end_, "--by", "team"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("gpuscope: --by: unknown label 'team': no GPU series carries it (they carry ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("modelName"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CostArgs, BadInputIsOneLineWithExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"cost"}, "cost needs exactly one of --url, --data-dir and --simulate[=SCENARIO]"},
      {{"cost", "--data-dir", "/tmp", "--tier", "reserved"},
       "invalid value 'reserved' for --tier (on_demand, spot, commit_1y, commit_3y)"},
      {{"cost", "--data-dir", "/tmp", "--budget", "lots"}, "invalid value 'lots' for --budget: 'lots' is no amount of USD (e.g. 10000/month)"},
      {{"cost", "--data-dir", "/tmp", "--budget", "100/fortnight"},
       "invalid value '100/fortnight' for --budget: 'fortnight' is no period (month, week, day or year)"},
      {{"cost", "--data-dir", "/tmp", "--since", "7d", "--start", "now-1d"}, "give --since or --start, not both"},
      {{"cost", "--data-dir", "/tmp", "--since", "1y"}, "invalid value '1y' for --since (1m to 90d, e.g. 7d)"},
      {{"cost", "--data-dir", "/tmp", "--start", "now", "--end", "now-1h"}, "--start must be before --end"},
      {{"cost", "--data-dir", "/tmp", "--duration", "1h"}, "--duration is for --simulate"},
      {{"cost", "--data-dir", "/tmp", "--by", "9lives"}, "invalid value '9lives' for --by (gpu, process or a label name)"},
      {{"cost", "--data-dir", "/tmp", "--format", "xml"}, "invalid value 'xml' for --format (text, json or csv)"},
      {{"--simulate", "cost", "--since", "1h"},
       "with --simulate the span is the whole run (--duration); --since, --start and --end are for --url and --data-dir"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv{kExe};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_command(argv);
    EXPECT_EQ(r.exit_code, 2) << message;
    EXPECT_EQ(r.err, "gpuscope: " + message + "\n");
    EXPECT_EQ(r.out, "");
  }
  auto missing = run_command({kExe, "cost", "--data-dir", "/nonexistent/gpuscope"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
}

}  // namespace
}  // namespace gpuscope::e2e
