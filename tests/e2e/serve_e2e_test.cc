// `gpuscope serve` as a process against the simulated NVML: golden /metrics for a fixed scenario,
// seed and time (linted by promtool), a real Prometheus scraping it, a GPU lost and back, slow driver
// calls, collectors files with typos (at start and on SIGHUP), HTTP limits and signals.
// Regenerate the golden files after an intended change with: GPUSCOPE_UPDATE_GOLDEN=1 build/tests/e2e_test
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kExe = GPUSCOPE_EXE;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void expect_golden(const std::string& name, const std::string& actual) {
  const auto path = fs::path(GPUSCOPE_SOURCE_DIR) / "tests/e2e/golden" / name;
  if (const char* update = std::getenv("GPUSCOPE_UPDATE_GOLDEN"); update != nullptr && *update == '1') {
    std::ofstream(path) << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(path)) << path << " missing; run with GPUSCOPE_UPDATE_GOLDEN=1";
  EXPECT_EQ(actual, read_text(path)) << "golden " << name << " differs";
}



// The sample lines of `text` whose metric name starts with `name` (then '{' or ' ').
std::vector<std::string> samples(const std::string& text, const std::string& name) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(name) && line.size() > name.size() && (line[name.size()] == '{' || line[name.size()] == ' ')) {
      out.push_back(line);
    }
  }
  return out;
}

std::string sample_for_gpu(const std::string& text, const std::string& name, int gpu) {
  for (const auto& l : samples(text, name)) {
    if (l.find("gpu=\"" + std::to_string(gpu) + "\"") != std::string::npos) return l;
  }
  return {};
}

double value_of(const std::string& sample_line) { return std::strtod(sample_line.substr(sample_line.rfind(' ') + 1).c_str(), nullptr); }

// The exposition without the sample lines that change from scrape to scrape (ages, durations, the
// process's own usage); their HELP and TYPE lines stay, so the set of families is still checked.
std::string stable_part(const std::string& text) {
  static const std::vector<std::string> volatile_names{
      "gpuscope_sample_age_seconds", "gpuscope_sample_duration_seconds", "gpuscope_samples_total",
      "gpuscope_sample_overruns_total", "gpuscope_collector_duration_seconds", "gpuscope_collector_cpu_seconds_total",
      "gpuscope_config_last_reload_success_timestamp_seconds", "gpuscope_tsdb_", "process_",
      "gpuscope_diagnosis_evaluations_total", "gpuscope_diagnosis_last_"};
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    bool drop = false;
    for (const auto& n : volatile_names) drop = drop || line.starts_with(n);
    if (!drop) out += line + "\n";
  }
  return out;
}


TEST(ServeE2e, GoldenMetricsTextAndOpenMetrics) {
  // The price catalog named, not found next to the binary, so a build directory anywhere gives the same file.
  Agent agent({"--simulate=" + scenario("golden.yaml"), "serve", "--listen", "127.0.0.1:0", "--interval", "100ms",
               "--price-catalog", std::string(GPUSCOPE_SOURCE_DIR) + "/catalog/gpu_prices.yaml"},
              frozen_env(600));
  ASSERT_GT(agent.port, 0) << agent.process->output();
  ASSERT_TRUE(agent.ready()) << agent.process->output();

  auto text = http_get(agent.port, "/metrics");
  ASSERT_EQ(text.status, 200);
  EXPECT_EQ(text.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  // At the shortest interval the first reading still waits out GPM's first window: no false alarm.
  EXPECT_EQ(value_of(samples(text.body, "gpuscope_sample_overruns_total").at(0)), 0);
  EXPECT_EQ(agent.process->output().find("took longer"), std::string::npos) << agent.process->output();
  expect_golden("metrics.txt", stable_part(text.body));

  auto om = http_get(agent.port, "/metrics",
                     {{"Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"}});
  ASSERT_EQ(om.status, 200);
  EXPECT_EQ(om.headers["content-type"], "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_TRUE(om.body.ends_with("# EOF\n"));
  expect_golden("metrics.openmetrics.txt", stable_part(om.body));

  // Same values gzip'ed for a client that asks.
  auto gz = http_get(agent.port, "/metrics", {{"Accept-Encoding", "gzip"}});
  ASSERT_EQ(gz.status, 200);
  EXPECT_EQ(gz.headers["content-encoding"], "gzip");
  EXPECT_LT(gz.body.size(), text.body.size() / 4);
  EXPECT_EQ(stable_part(gunzip(gz.body)), stable_part(text.body));
}

TEST(ServeE2e, PromtoolFindsOnlyDcgmExportersOwnNames) {
  if (!fs::exists("/usr/bin/promtool")) GTEST_SKIP() << "promtool not installed (scripts/setup installs it)";
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0"}, frozen_env(600));
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  TempDir dir;
  const auto file = dir.write("metrics.txt", agent.metrics());
  auto r = run_command({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + file});
  // promtool would pass this output but for what dcgm-exporter itself emits and dashboards depend on:
  // the camelCase `modelName` label and DCGM's counter names without `_total`.
  std::istringstream problems(r.out + r.err);
  int count = 0;
  for (std::string line; std::getline(problems, line);) {
    if (line.empty()) continue;
    ++count;
    const bool model_name = line.ends_with("label names should be written in 'snake_case' not 'camelCase'");
    const bool dcgm_counter = line.starts_with("DCGM_FI_") && (line.ends_with("counter metrics should have \"_total\" suffix") ||
                                                               line.ends_with("metric name should not include type 'counter'"));
    EXPECT_TRUE(model_name || dcgm_counter) << "promtool: " << line;
  }
  EXPECT_GT(count, 0) << "promtool reported nothing: the check itself did not run";
  // Without modelName, nothing but the DCGM counter names is left.
  auto renamed = run_command({"/bin/sh", "-c", "sed 's/modelName=/model_name=/g' " + file + " | /usr/bin/promtool check metrics"});
  std::istringstream rest(renamed.out + renamed.err);
  for (std::string line; std::getline(rest, line);) {
    if (line.empty()) continue;
    EXPECT_TRUE(line.starts_with("DCGM_FI_")) << "promtool: " << line;
  }
}

TEST(ServeE2e, RealPrometheusScrapesEveryGpuWithDcgmLabelsAndTheQueryValues) {
  if (!fs::exists("/usr/bin/prometheus")) GTEST_SKIP() << "prometheus not installed (scripts/setup installs it)";
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0"}, frozen_env(600));
  ASSERT_TRUE(agent.ready()) << agent.process->output();

  TempDir dir;
  const int prom_port = free_port();
  const auto config = dir.write("prometheus.yml", "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                                                  "scrape_configs:\n  - job_name: gpuscope\n    static_configs:\n"
                                                  "      - targets: ['127.0.0.1:" + std::to_string(agent.port) + "']\n");
  BackgroundProcess prometheus({"/usr/bin/prometheus", "--config.file=" + config,
                                "--storage.tsdb.path=" + (dir.path / "data").string(),
                                "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)});
  auto query = [&](const std::string& q) {
    auto r = http_get(prom_port, "/api/v1/query?query=" + url_encode(q));
    return r.status == 200 ? nlohmann::json::parse(r.body, nullptr, false) : nlohmann::json();
  };
  // Two scrapes, then ask.
  bool scraped_twice = false;
  for (int i = 0; i < 300 && !scraped_twice; ++i) {
    auto j = query("count_over_time(up{job=\"gpuscope\"}[1m])");
    if (j.is_object() && !j["data"]["result"].empty()) {
      scraped_twice = std::stod(j["data"]["result"][0]["value"][1].get<std::string>()) >= 2;
    }
    if (!scraped_twice) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(scraped_twice) << prometheus.output();

  auto up = query("up{job=\"gpuscope\"}");
  ASSERT_EQ(up["data"]["result"].size(), 1u);
  EXPECT_EQ(up["data"]["result"][0]["value"][1], "1");

  auto util = query("DCGM_FI_DEV_GPU_UTIL");
  ASSERT_EQ(util["data"]["result"].size(), 8u) << util.dump();
  std::set<std::string> gpus;
  for (const auto& s : util["data"]["result"]) {
    const auto& m = s["metric"];
    for (const char* label : {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"}) {
      EXPECT_TRUE(m.contains(label)) << label << " missing in " << m.dump();
    }
    EXPECT_EQ(m["modelName"], "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(m["device"], "nvidia" + m["gpu"].get<std::string>());
    gpus.insert(m["gpu"].get<std::string>());
  }
  EXPECT_EQ(gpus.size(), 8u);

  // The same scenario, seed and time through `gpuscope query --format=json`.
  auto q = run_command({kExe, "--simulate=" + scenario("demo.yaml"), "query",
                        "--query-gpu=index,utilization.gpu,memory.used,power.draw,temperature.gpu,DCGM_FI_PROF_SM_ACTIVE",
                        "--format=json"},
                       frozen_env(600));
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const auto expected = nlohmann::json::parse(q.out.substr(0, q.out.find('\n')));
  const std::vector<std::pair<std::string, std::string>> pairs{{"DCGM_FI_DEV_GPU_UTIL", "utilization.gpu_percent"},
                                                               {"DCGM_FI_DEV_FB_USED", "memory.used_mib"},
                                                               {"DCGM_FI_DEV_POWER_USAGE", "power.draw_watts"},
                                                               {"DCGM_FI_DEV_GPU_TEMP", "temperature.gpu_celsius"},
                                                               {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE_ratio"}};
  for (const auto& [metric, key] : pairs) {
    auto result = query(metric);
    ASSERT_EQ(result["data"]["result"].size(), 8u) << metric;
    for (const auto& s : result["data"]["result"]) {
      const int gpu = std::stoi(s["metric"]["gpu"].get<std::string>());
      const double got = std::stod(s["value"][1].get<std::string>());
      const auto& want_json = expected["gpus"][gpu];
      ASSERT_TRUE(want_json.contains(key)) << key << " in " << want_json.dump();
      const double want = want_json[key].get<double>();
      EXPECT_NEAR(got, want, 1e-6 * std::max(1.0, std::fabs(want))) << metric << " gpu " << gpu;
    }
  }
  EXPECT_TRUE(prometheus.signal_and_wait(SIGTERM, 10s).has_value());
}

TEST(ServeE2e, LostGpuLosesItsSeriesAndComesBackWhileOthersStayUp) {
  TempDir dir;
  const auto scenario_file = dir.write("lost.yaml",
                                       "seed: 5\nnode: {hostname: lost-test}\n"
                                       "gpus: {count: 2, model: NVIDIA H100 80GB HBM3}\n"
                                       "workload: {profile: training}\n"
                                       "events:\n  - {at: 2s, gpu: 1, xid: 79}\n"
                                       "faults:\n  - {type: gpu_lost, gpu: 1, at: 2s, for: 3s}\n");
  Agent agent({"--simulate=" + scenario_file, "serve", "--listen", "127.0.0.1:0", "--interval", "100ms"}, live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  auto m = agent.metrics();
  EXPECT_EQ(value_of(sample_for_gpu(m, "gpuscope_gpu_up", 1)), 1);
  ASSERT_FALSE(sample_for_gpu(m, "DCGM_FI_DEV_GPU_TEMP", 1).empty());

  bool saw_lost = false, back = false;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (std::chrono::steady_clock::now() < deadline && !back) {
    auto r = http_get(agent.port, "/metrics", {}, 2s);
    ASSERT_EQ(r.status, 200);
    const bool up1 = value_of(sample_for_gpu(r.body, "gpuscope_gpu_up", 1)) == 1;
    EXPECT_EQ(value_of(sample_for_gpu(r.body, "gpuscope_gpu_up", 0)), 1);
    EXPECT_FALSE(sample_for_gpu(r.body, "DCGM_FI_DEV_GPU_TEMP", 0).empty()) << "GPU 0's series must stay";
    if (!up1) {
      saw_lost = true;
      EXPECT_TRUE(sample_for_gpu(r.body, "DCGM_FI_DEV_GPU_TEMP", 1).empty()) << "a lost GPU's series disappear";
      EXPECT_EQ(http_get(agent.port, "/healthz").status, 200) << "a lost GPU is not an unhealthy agent";
    } else if (saw_lost) {
      back = !sample_for_gpu(r.body, "DCGM_FI_DEV_GPU_TEMP", 1).empty();
    }
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(saw_lost) << "GPU 1 never reported lost";
  EXPECT_TRUE(back) << "GPU 1 did not come back";
  const auto log = agent.process->output();
  EXPECT_NE(log.find("level=warn msg=\"GPU lost: its series are withdrawn until NVML answers again\" gpu=1 "), std::string::npos) << log;
  EXPECT_NE(log.find("level=info msg=\"GPU answers again\" gpu=1 "), std::string::npos) << log;
}

TEST(ServeE2e, SlowDriverCallsNeverSlowAScrapeAndStopStillTakesUnderASecond) {
  TempDir dir;
  // From 1 s on every reading is stuck 3 s in one NVML call.
  const auto scenario_file = dir.write("slow.yaml",
                                       "seed: 6\nnode: {hostname: slow-test}\n"
                                       "gpus: {count: 2, model: NVIDIA H100 80GB HBM3}\n"
                                       "workload: {profile: training}\n"
                                       "faults:\n  - {type: slow, function: nvmlDeviceGetFieldValues, delay: 3s, at: 1s, for: 60s}\n");
  Agent agent({"--simulate=" + scenario_file, "serve", "--listen", "127.0.0.1:0", "--interval", "200ms"}, live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  std::this_thread::sleep_for(2500ms);  // now inside a stuck reading

  double worst = 0;
  double last_age = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = http_get(agent.port, "/metrics", {}, 2s);
    ASSERT_EQ(r.status, 200);
    worst = std::max(worst, r.seconds);
    ASSERT_FALSE(samples(r.body, "DCGM_FI_DEV_GPU_TEMP").empty()) << "the last reading is still served";
    last_age = value_of(samples(r.body, "gpuscope_sample_age_seconds").at(0));
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_LT(worst, 0.25) << "a scrape waited for the driver";
  EXPECT_GT(last_age, 1.0) << "staleness must show while a reading hangs";
  // The stuck reading finishes eventually and is counted as an overrun.
  bool overrun = false;
  for (int i = 0; i < 80 && !overrun; ++i) {
    overrun = value_of(samples(agent.metrics(), "gpuscope_sample_overruns_total").at(0)) >= 1;
    if (!overrun) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(overrun);
  EXPECT_TRUE(agent.process->wait_for_line("a GPU reading took longer than the interval", 1s)) << agent.process->output();

  // SIGTERM in the middle of a 3 s driver call still ends the agent within 1 s.
  std::this_thread::sleep_for(500ms);
  const auto t0 = std::chrono::steady_clock::now();
  auto code = agent.process->signal_and_wait(SIGTERM, 3s);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(code.has_value()) << agent.process->output();
  EXPECT_EQ(*code, 0);
  EXPECT_LT(took, 1.0) << agent.process->output();
}

TEST(ServeE2e, SigtermStopsGracefullyWithinASecond) {
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0"}, live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  const auto t0 = std::chrono::steady_clock::now();
  auto code = agent.process->signal_and_wait(SIGTERM, 3s);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  EXPECT_NE(agent.process->output().find("msg=stopped"), std::string::npos) << agent.process->output();
}

TEST(ServeE2e, CollectorsFileWithATypoIsRefusedNamingTheLine) {
  TempDir dir;
  const auto file = dir.write("counters.csv",
                              "# Format\n# DCGM FIELD, Prometheus metric type, help message\n\n"
                              "DCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).\n"
                              "DCGM_FI_DEV_GPU_TEMPP, gauge, GPU temperature (in C).\n");
  auto r = run_command({kExe, "--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0",
                        "--collectors", file},
                       frozen_env(600), 20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpuscope: " + file + ":5: unknown field 'DCGM_FI_DEV_GPU_TEMPP' (did you mean DCGM_FI_DEV_GPU_TEMP?)\n");
}

TEST(ServeE2e, EmptyCollectorsFileIsRefusedRatherThanServingNoGpuField) {
  TempDir dir;
  const auto file = dir.write("counters.csv", "# DCGM FIELD, Prometheus metric type, help message\n\n");
  auto r = run_command({kExe, "--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0",
                        "--collectors", file},
                       frozen_env(600), 20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpuscope: " + file + ": no fields to export (the file has no 'FIELD, type, help' line)\n");
}

TEST(ServeE2e, DcgmExporterCollectorsFileWorksAndSighupReloadKeepsTheOldOneWhenBroken) {
  TempDir dir;
  // dcgm-exporter's own format, with a field gpuscope does not read (skipped with a warning) and the
  // driver-version label.
  const std::string good =
      "# Clocks\nDCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).\n"
      "DCGM_FI_DEV_VGPU_LICENSE_STATUS, gauge, vGPU License status\n"
      "DCGM_FI_DRIVER_VERSION, label, Driver Version\n";
  const auto file = dir.write("counters.csv", good);
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--collectors", file,
               "--interval", "100ms"},
              frozen_env(600));
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  EXPECT_TRUE(agent.process->wait_for_line(file + ":3: DCGM_FI_DEV_VGPU_LICENSE_STATUS is not collected", 1s))
      << agent.process->output();
  auto m = agent.metrics();
  EXPECT_EQ(samples(m, "DCGM_FI_DEV_SM_CLOCK").size(), 8u);
  EXPECT_TRUE(samples(m, "DCGM_FI_DEV_GPU_TEMP").empty()) << "only the file's fields are exported";
  EXPECT_NE(m.find("DCGM_FI_DRIVER_VERSION=\"550.54.15\""), std::string::npos);

  // A typo on reload: the old set stays, the failure is logged and exported.
  dir.write("counters.csv", good + "DCGM_FI_DEV_GPU_TEMPP, gauge, typo\n");
  agent.process->send(SIGHUP);
  ASSERT_TRUE(agent.process->wait_for_line("reload failed", 5s)) << agent.process->output();
  m = agent.metrics();
  EXPECT_EQ(samples(m, "DCGM_FI_DEV_SM_CLOCK").size(), 8u);
  EXPECT_EQ(value_of(samples(m, "gpuscope_config_last_reload_successful").at(0)), 0);

  // Fixed: the new set is served from the next scrape on.
  dir.write("counters.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n");
  agent.process->send(SIGHUP);
  bool reloaded = false;
  for (int i = 0; i < 50 && !reloaded; ++i) {
    m = agent.metrics();
    reloaded = samples(m, "DCGM_FI_DEV_SM_CLOCK").empty() && samples(m, "DCGM_FI_DEV_GPU_TEMP").size() == 8;
    if (!reloaded) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(reloaded) << agent.process->output();
  EXPECT_EQ(value_of(samples(m, "gpuscope_config_last_reload_successful").at(0)), 1);
  EXPECT_EQ(m.find("DCGM_FI_DRIVER_VERSION="), std::string::npos) << "the new file has no label line";
}

TEST(ServeE2e, HttpRequestsThatAreWrongGetFourHundredsNotACrash) {
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--http-timeout", "1s"},
              frozen_env(600));
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  EXPECT_EQ(http_get(agent.port, "/nope").status, 404);
  EXPECT_EQ(http_raw(agent.port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc").status, 405);
  EXPECT_EQ(http_raw(agent.port, "GET /metrics HTTP/1.1\r\nBad Header Line\r\n\r\n").status, 400);
  EXPECT_EQ(http_raw(agent.port, "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n").status, 400);
  EXPECT_EQ(http_raw(agent.port, "GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n").status, 505);
  // No HTTP version at all cannot be answered with a status line: the connection is closed.
  EXPECT_EQ(http_raw(agent.port, "GARBAGE\r\n\r\n", 3s).status, 0);
  EXPECT_EQ(http_raw(agent.port, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 * 1024, 'a') +
                                     "\r\nConnection: close\r\n\r\n").status / 100, 4);
  std::string huge_body(2 * 1024 * 1024, 'x');
  EXPECT_EQ(http_raw(agent.port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                     std::to_string(huge_body.size()) + "\r\nConnection: close\r\n\r\n" + huge_body).status,
            413);
  // A client that never finishes its headers is cut off after --http-timeout.
  auto slow = http_raw(agent.port, "GET /metrics HTTP/1.1\r\nHost: x\r\n", 5s);
  EXPECT_EQ(slow.status, 0);
  EXPECT_LT(slow.seconds, 3.0) << "the slow client was not cut off";
  EXPECT_GE(slow.seconds, 0.9);
  // HEAD, the index, /health and the JSON API.
  auto head = http_raw(agent.port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_NE(http_get(agent.port, "/").body.find("href=\"metrics\""), std::string::npos);
  EXPECT_EQ(http_get(agent.port, "/health").status, 200);
  auto api = nlohmann::json::parse(http_get(agent.port, "/api/v1/gpus").body);
  ASSERT_EQ(api["gpus"].size(), 8u);
  EXPECT_EQ(api["gpus"][0]["up"], true);
  EXPECT_GT(api["gpus"][0]["values"]["power_usage_watts"].get<double>(), 0);
  // The process and its owner, as the scenario names them (a host's /proc on a real driver).
  ASSERT_EQ(api["gpus"][0]["processes"].size(), 1u) << api["gpus"][0].dump();
  EXPECT_EQ(api["gpus"][0]["processes"][0]["name"], "python train.py --config llama-8b.yaml");
  EXPECT_EQ(api["gpus"][0]["processes"][0]["user"], "alice");
  EXPECT_TRUE(agent.process->running()) << agent.process->output();
}

TEST(ServeE2e, HostLabelFollowsNodeNameAndTheLabelFlags) {
  auto env = frozen_env(600);
  env["NODE_NAME"] = "k8s-node-7";
  Agent node({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0"}, env);
  ASSERT_TRUE(node.ready()) << node.process->output();
  EXPECT_NE(sample_for_gpu(node.metrics(), "DCGM_FI_DEV_GPU_TEMP", 0).find(",Hostname=\"k8s-node-7\","), std::string::npos);

  Agent lower({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--hostname-label", "hostname"},
              frozen_env(600));
  ASSERT_TRUE(lower.ready()) << lower.process->output();
  const auto line = sample_for_gpu(lower.metrics(), "DCGM_FI_DEV_GPU_TEMP", 0);
  EXPECT_NE(line.find(",hostname=\"dgx-h100-demo-01\","), std::string::npos) << line;
  EXPECT_EQ(line.find("Hostname="), std::string::npos) << line;

  Agent none({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--no-hostname"},
             frozen_env(600));
  ASSERT_TRUE(none.ready()) << none.process->output();
  EXPECT_EQ(sample_for_gpu(none.metrics(), "DCGM_FI_DEV_GPU_TEMP", 0).find("ostname="), std::string::npos);
}

TEST(ServeE2e, HpcJobMappingDirectoryLabelsSeriesAsDcgmExporterDoes) {
  TempDir dir;
  const auto jobs = dir.path / "jobs";  // created only after the agent starts
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--interval", "100ms",
               "--hpc-job-mapping-dir", jobs.string()},
              frozen_env(600));
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  EXPECT_TRUE(agent.process->wait_for_line("HPC job mapping directory unreadable", 2s)) << agent.process->output();
  EXPECT_EQ(agent.metrics().find("hpc_job="), std::string::npos);

  fs::create_directories(jobs);
  std::ofstream(jobs / "0") << "job-17\njob-18\n";
  std::ofstream(jobs / "3") << "42\n";
  std::string m;
  for (int i = 0; i < 50 && samples(m, "DCGM_FI_DEV_GPU_TEMP").size() != 9; ++i) {
    std::this_thread::sleep_for(100ms);
    m = agent.metrics();
  }
  const auto temps = samples(m, "DCGM_FI_DEV_GPU_TEMP");
  ASSERT_EQ(temps.size(), 9u) << "8 GPUs, GPU 0 twice" << m;
  int gpu0 = 0;
  for (const auto& line : temps) {
    if (line.find("gpu=\"0\"") != std::string::npos) {
      ++gpu0;
      EXPECT_TRUE(line.find("hpc_job=\"job-17\"") != std::string::npos || line.find("hpc_job=\"job-18\"") != std::string::npos) << line;
    }
  }
  EXPECT_EQ(gpu0, 2);
  EXPECT_NE(sample_for_gpu(m, "DCGM_FI_DEV_GPU_TEMP", 3).find(",hpc_job=\"42\"}"), std::string::npos);
  EXPECT_EQ(sample_for_gpu(m, "DCGM_FI_DEV_GPU_TEMP", 1).find("hpc_job"), std::string::npos);
  EXPECT_TRUE(agent.process->wait_for_line("HPC job mapping directory readable", 1s));

  fs::remove(jobs / "0");  // the job ended
  for (int i = 0; i < 50 && samples(m, "DCGM_FI_DEV_GPU_TEMP").size() != 8; ++i) {
    std::this_thread::sleep_for(100ms);
    m = agent.metrics();
  }
  EXPECT_EQ(samples(m, "DCGM_FI_DEV_GPU_TEMP").size(), 8u);
  EXPECT_EQ(sample_for_gpu(m, "DCGM_FI_DEV_GPU_TEMP", 0).find("hpc_job"), std::string::npos);
}

TEST(ServeE2e, BadFlagsAndABusyPortAreOneLineErrors) {
  auto bad_interval = run_command({kExe, "--simulate", "serve", "--interval", "50ms"});
  EXPECT_EQ(bad_interval.exit_code, 2);
  EXPECT_EQ(bad_interval.err, "gpuscope: invalid value '50ms' for --interval (100ms to 60s, e.g. 1s, 500ms)\n");
  auto bad_listen = run_command({kExe, "--simulate", "serve", "--listen", "localhost"});
  EXPECT_EQ(bad_listen.exit_code, 2);
  EXPECT_EQ(bad_listen.err,
            "gpuscope: invalid listen address 'localhost' (expected HOST:PORT or :PORT) in --listen\n");

  Agent first({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0"}, frozen_env(600));
  ASSERT_GT(first.port, 0);
  auto busy = run_command({kExe, "--simulate=" + scenario("demo.yaml"), "serve", "--no-history", "--listen",
                           "127.0.0.1:" + std::to_string(first.port)},
                          frozen_env(600), 20);
  EXPECT_EQ(busy.exit_code, 1);
  EXPECT_NE(busy.err.find("gpuscope: cannot listen on 127.0.0.1:" + std::to_string(first.port)), std::string::npos)
      << busy.err;
}

}  // namespace
}  // namespace gpuscope::e2e
