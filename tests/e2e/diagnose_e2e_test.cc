// `gpuscope diagnose` as a user meets it, on the real H100 recording imported into a data directory:
// each phase's verdict at its end, the timeline's one line per phase, the same answer from a running
// agent's query API (--url) as from its data directory, scenarios run with --simulate, and the
// backtest's timeline with the verdict changes next to the alerts.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>

#include "e2e/agent_fixture.h"
#include "e2e/command_runner.h"

namespace gpuscope::e2e {
namespace {

using nlohmann::json;

const std::string kExe = GPUSCOPE_EXE;
const std::string kRecordingDir = GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/";

struct RecordedPhase {
  std::string name;
  double start, end;
};

std::vector<RecordedPhase> recorded_phases() {
  std::ifstream in(kRecordingDir + "phases.json");
  const json file = json::parse(in);
  std::vector<RecordedPhase> out;
  for (const auto& p : file["phases"]) out.push_back({p["phase"], p["start"], p["end"]});
  return out;
}

std::string seconds(double t) { return std::to_string(t); }

// The recording imported once for every test of the suite.
class DiagnoseRecording : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    auto r = run_command({kExe, "import", "--data-dir", data_dir(), kRecordingDir + "history.json.gz"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string data_dir() { return (dir_->path / "data").string(); }

  // `diagnose --format json` at the phase's end, over the phase less its first 3 s (the switch).
  static json at_end_of(const RecordedPhase& p, const std::vector<std::string>& source) {
    const int window = std::min(30, static_cast<int>(p.end - p.start) - 3);
    std::vector<std::string> args{kExe, "diagnose"};
    args.insert(args.end(), source.begin(), source.end());
    args.insert(args.end(), {"--at", seconds(p.end), "--window", std::to_string(window) + "s", "--format", "json"});
    auto r = run_command(args);
    EXPECT_EQ(r.exit_code, 0) << p.name << ": " << r.err;
    auto j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  static TempDir* dir_;
};
TempDir* DiagnoseRecording::dir_ = nullptr;

bool has_finding(const json& gpu, const std::string& id) {
  return std::any_of(gpu["findings"].begin(), gpu["findings"].end(), [&](const json& f) { return f["id"] == id; });
}

TEST_F(DiagnoseRecording, EachPhaseGetsItsVerdictAtItsEnd) {
  const std::map<std::string, std::string> expected{
      {"idle_start", "idle"},          {"tensor_bf16_matmul", "compute_bound"}, {"fp32_matmul_no_tensor", "no_tensor_cores"},
      {"dram_copy", "memory_bound"},   {"tiny_kernels_launch_bound", "launch_bound"},
      {"h2d_pcie_copy", "transfer_bound"}, {"sawtooth_data_starved", "input_starved"}, {"memory_leak", "idle"},
      {"idle_end", "idle"}};
  const auto phases = recorded_phases();
  ASSERT_EQ(phases.size(), expected.size());
  for (const auto& p : phases) {
    const json d = at_end_of(p, {"--data-dir", data_dir()});
    ASSERT_EQ(d["gpus"].size(), 1u) << p.name << ": " << d.dump();
    const json& g = d["gpus"][0];
    EXPECT_EQ(g["verdict"], expected.at(p.name)) << p.name << ": " << g["summary"];
    EXPECT_EQ(g["model"], "NVIDIA H100 80GB HBM3");
    if (p.name == "tensor_bf16_matmul") {
      EXPECT_TRUE(has_finding(g, "power_capped")) << g.dump();
    } else if (p.name == "fp32_matmul_no_tensor") {
      EXPECT_TRUE(has_finding(g, "thermal_slowdown")) << g.dump();
    } else if (p.name == "h2d_pcie_copy") {
      EXPECT_EQ(g["detail"], "host→device");
    } else if (p.name == "sawtooth_data_starved") {
      EXPECT_EQ(g["detail"], "CPU side");
    }
  }
}

TEST_F(DiagnoseRecording, TheTimelineOverTheRecordingPrintsOneLinePerPhase) {
  const auto phases = recorded_phases();
  auto r = run_command({kExe, "diagnose", "--data-dir", data_dir(), "--timeline", "--at", seconds(phases.back().end),
                        "--since", "3m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> in_order{"idle:", "compute bound [power_capped",  "no tensor cores",
                                          "memory bound:", "launch bound / kernels too small",
                                          "transfer bound (host→device)", "starved by the input pipeline (CPU side)",
                                          "idle:"};
  std::vector<std::string> lines;
  for (std::size_t start = 0, end; (end = r.out.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(r.out.substr(start, end - start));
  }
  ASSERT_EQ(lines.size(), in_order.size() + 1) << r.out;  // a heading, then one line per change
  EXPECT_TRUE(lines[0].starts_with("Verdict changes from ")) << lines[0];
  for (std::size_t i = 0; i < in_order.size(); ++i) {
    EXPECT_NE(lines[i + 1].find("GPU 0  NVIDIA H100 80GB HBM3  vm  " + in_order[i]), std::string::npos) << lines[i + 1];
  }
}

TEST_F(DiagnoseRecording, AWindowWithoutReadingsSaysWhereTheReadingsAre) {
  auto r = run_command({kExe, "diagnose", "--data-dir", data_dir()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(r.err.starts_with("gpuscope: --data-dir " + data_dir() + ": no GPU readings in the 30s before ")) << r.err;
  EXPECT_TRUE(r.err.ends_with("; its readings end at 2026-11-25T10:53:01Z (pass --at)\n")) << r.err;

  r = run_command({kExe, "diagnose", "--data-dir", data_dir(), "--at", "2026-11-25T10:00:00Z", "--window", "1m"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuscope: --data-dir " + data_dir() + ": no GPU readings in the 1m00s before 2026-11-25T10:00:00Z; "
                   "its readings begin at 2026-11-25T10:50:08Z (pass --at)\n");
}

// A running agent serving the imported recording answers --url as its data directory answers
// --data-dir, also when its sample limit makes the client ask for a range in parts.
TEST_F(DiagnoseRecording, AnAgentsQueryApiGivesWhatItsDataDirectoryGives) {
  TempDir served;
  const std::string dir = (served.path / "data").string();
  ASSERT_EQ(run_command({kExe, "import", "--data-dir", dir, kRecordingDir + "history.json.gz"}).exit_code, 0);
  // 5000 samples: the whole recording's signals (~20,000) are over it, one phase's are not.
  Agent agent({"--simulate=" + scenario("idle.yaml"), "serve", "--listen", "127.0.0.1:0", "--data-dir", dir,
               "--retention", "520w", "--query.max-samples", "5000"},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port);
  for (const auto& p : recorded_phases()) {
    EXPECT_EQ(at_end_of(p, {"--url", url}), at_end_of(p, {"--data-dir", dir})) << p.name;
  }
  const std::string end = seconds(recorded_phases().back().end);
  const std::vector<std::string> timeline{"--timeline", "--at", end, "--since", "3m", "--format", "json"};
  auto args = [&](std::vector<std::string> source) {
    source.insert(source.begin(), {kExe, "diagnose"});
    source.insert(source.end(), timeline.begin(), timeline.end());
    return source;
  };
  auto by_url = run_command(args({"--url", url}));
  auto by_dir = run_command(args({"--data-dir", dir}));
  ASSERT_EQ(by_url.exit_code, 0) << by_url.err;
  ASSERT_EQ(by_dir.exit_code, 0) << by_dir.err;
  EXPECT_EQ(json::parse(by_url.out), json::parse(by_dir.out));
  EXPECT_EQ(json::parse(by_url.out)["changes"].size(), 8u) << by_url.out;
}

TEST(DiagnoseSimulate, ScenariosGetTheirVerdicts) {
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> cases{
      {"no_tensor.yaml", {{"0", "no_tensor_cores"}, {"1", "no_tensor_cores"}}},
      {"ecc.yaml", {{"0", "unhealthy"}, {"1", "unhealthy"}}},
      {"xid.yaml", {{"1", "unhealthy"}}},
      {"idle.yaml", {{"0", "idle"}, {"7", "idle"}}},
  };
  for (const auto& [file, verdicts] : cases) {
    auto r = run_command({kExe, "diagnose", "--simulate=" + scenario(file), "--at", "10m", "--format", "json"});
    ASSERT_EQ(r.exit_code, 0) << file << ": " << r.err;
    const json d = json::parse(r.out);
    std::map<std::string, std::string> got;
    for (const auto& g : d["gpus"]) got[g["gpu"]] = g["verdict"];
    for (const auto& [gpu, verdict] : verdicts) EXPECT_EQ(got[gpu], verdict) << file << " GPU " << gpu;
  }
}

TEST(DiagnoseBacktest, TheTimelineShowsVerdictChangesNextToTheAlerts) {
  auto r = run_command({kExe, "backtest", "--scenario", scenario("stalled.yaml"), "--duration", "30m", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  // Each of the 4 GPUs computes, then stops after 2 minutes holding its memory.
  std::map<std::string, std::vector<std::pair<double, std::string>>> by_gpu;
  for (const auto& v : report["verdicts"]) by_gpu[v["gpu"]].emplace_back(v["offset_seconds"], v["verdict"]);
  ASSERT_EQ(by_gpu.size(), 4u) << report["verdicts"].dump();
  for (const auto& [gpu, changes] : by_gpu) {
    ASSERT_EQ(changes.size(), 2u) << gpu;
    EXPECT_EQ(changes[0].second, "compute_bound") << gpu;
    EXPECT_EQ(changes[1].second, "idle") << gpu;
    EXPECT_GE(changes[1].first, 120) << gpu;
    EXPECT_LE(changes[1].first, 180) << gpu;
  }
  EXPECT_FALSE(report["events"].empty()) << "the alerts are still there";

  auto text = run_command({kExe, "backtest", "--scenario", scenario("stalled.yaml"), "--duration", "30m"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("+2m30s     verdict   idle                            0    stalled-h100-01"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("still firing at the end; 8 verdict changes.\n"), std::string::npos) << text.out;
}

// The verdict series reach the store before the rules run: a rule on them fires in a backtest.
TEST(DiagnoseBacktest, RulesSeeTheDiagnosisSeries) {
  TempDir dir;
  const std::string rules = dir.write("diagnosis.rules.yml", R"(groups:
- name: diagnosis
  rules:
  - alert: DiagnosedIdle
    expr: gpuscope_diagnosis_info{verdict="idle"} == 1
    for: 1m
)");
  auto r = run_command({kExe, "backtest", "--scenario", scenario("stalled.yaml"), "--duration", "10m", "--rules", rules,
                        "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  std::set<std::string> firing;
  for (const auto& e : report["events"]) {
    if (e["state"] == "firing" && e["alertname"] == "DiagnosedIdle") firing.insert(e["labels"]["gpu"].get<std::string>());
  }
  EXPECT_EQ(firing, (std::set<std::string>{"0", "1", "2", "3"})) << r.out;
}

}  // namespace
}  // namespace gpuscope::e2e
