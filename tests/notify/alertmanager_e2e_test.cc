// The Alertmanager v2 client against Debian's real Alertmanager on 127.0.0.1: alerts posted by the
// Notifier are read back from its API, firing and then gone once resolved. Skipped without the binary.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "e2e/background_process.h"
#include "e2e/http_client.h"
#include "notify/alert_payloads.h"
#include "notify/notifier.h"
#include "notify_test_support.h"

namespace gpuscope::notify {
namespace {

using testing::kAlertmanager;

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;


std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json alerts_in(int port) {
  auto r = e2e::http_get(port, "/api/v2/alerts");
  auto j = json::parse(r.body, nullptr, false);
  return j.is_discarded() ? json::array() : j;
}

TEST(AlertmanagerE2e, PostedAlertsFireAndResolveInARealAlertmanager) {
  if (!fs::exists(kAlertmanager)) GTEST_SKIP() << "prometheus-alertmanager not installed (scripts/setup installs it)";
  const fs::path dir = fs::temp_directory_path() / ("notify_am_e2e_" + std::to_string(getpid()));
  fs::create_directories(dir / "data");
  std::ofstream(dir / "alertmanager.yml") << "route:\n  receiver: blackhole\nreceivers:\n  - name: blackhole\n";
  const int port = e2e::free_port();
  e2e::BackgroundProcess am({kAlertmanager, "--config.file=" + (dir / "alertmanager.yml").string(),
                             "--storage.path=" + (dir / "data").string(),
                             "--web.listen-address=127.0.0.1:" + std::to_string(port),
                             "--cluster.listen-address="});  // no gossip port: a lone instance
  bool ready = false;
  for (int i = 0; i < 200 && !ready; ++i) {
    ready = e2e::http_get(port, "/-/ready").status == 200;
    if (!ready) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(ready) << am.output();

  testing::LogCapture logs;
  auto config = parse_notify_config("alertmanagers: [{url: 'http://127.0.0.1:" + std::to_string(port) + "'}]\n", "t.yml");
  ASSERT_TRUE(config.has_value());
  NotifierOptions options;
  options.external_url = "http://agent.example:9400";
  options.external_labels = {{"node", "gpu-7"}};
  auto notifier = Notifier::create(std::move(*config), logs.log, options);
  ASSERT_TRUE(notifier.has_value());

  const std::int64_t t0 = wall_ms();
  const store::Labels labels{{"alertname", "GpuOverheating"}, {"gpu", "0"}, {"severity", "critical"}};
  (*notifier)->submit({testing::firing_alert(labels, t0, t0 + 240'000, {{"summary", "GPU 0 is at 91C"}})}, t0,
                      "DCGM_FI_DEV_GPU_TEMP > 90");
  json alerts;
  for (int i = 0; i < 100 && alerts.empty(); ++i) {
    alerts = alerts_in(port);
    if (alerts.empty()) std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(alerts.size(), 1u) << logs.text() << am.output();
  const json& a = alerts[0];
  EXPECT_EQ(a["labels"], json({{"alertname", "GpuOverheating"}, {"gpu", "0"}, {"node", "gpu-7"}, {"severity", "critical"}}));
  EXPECT_EQ(a["annotations"]["summary"], "GPU 0 is at 91C");
  EXPECT_EQ(a["status"]["state"], "active");
  EXPECT_EQ(a["generatorURL"], "http://agent.example:9400/graph?g0.expr=DCGM_FI_DEV_GPU_TEMP+%3E+90&g0.tab=1");
  EXPECT_EQ(a["fingerprint"], fingerprint_text(store::Labels{{"alertname", "GpuOverheating"}, {"gpu", "0"},
                                                             {"node", "gpu-7"}, {"severity", "critical"}}));
  EXPECT_EQ(a["startsAt"].get<std::string>().substr(0, 19), rfc3339(t0).substr(0, 19));

  // Resolved now: Alertmanager no longer lists it as an alert.
  const std::int64_t t1 = wall_ms();
  (*notifier)->submit({testing::resolved_alert(labels, t0, t1)}, t1);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = alerts_in(port).empty();
    if (!gone) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(gone) << alerts_in(port).dump();
  (*notifier)->stop(1s);
  for (const auto& c : (*notifier)->stats().integrations) {
    EXPECT_EQ(c.failed, 0u) << c.receiver;
    EXPECT_EQ(c.total, 2u) << c.receiver;
  }

  EXPECT_EQ(am.signal_and_wait(SIGTERM, 10s), 0) << am.output();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuscope::notify
