#include "http/agent_routes.h"

#include <gtest/gtest.h>

#include <thread>
#include <nlohmann/json.hpp>

#include "e2e/http_client.h"
#include "export/sample_gpus.h"

namespace gpuscope::http {
namespace {

using namespace std::chrono_literals;

struct Routes {
  sampler::Sampler sampler{[] {
                             model::Snapshot s;
                             s.time = testing::sample_time();
                             s.gpus = {testing::h100_sample(0), testing::h100_sample(1)};
                             s.gpus[1].up = false;
                             return s;
                           },
                           100ms};
  AgentRoutes routes{sampler, {testing::h100_info(0), testing::h100_info(1)}, testing::sample_system(), {}, "9.9.9"};

  HttpResponse get(std::string_view path, std::vector<std::pair<std::string, std::string>> headers = {}) {
    auto r = routes.handle(HttpRequest("GET", path, std::move(headers)));
    r.body = std::string(r.content());
    return r;
  }
  void first_reading() {
    sampler.start();
    ASSERT_NE(sampler.wait_for(1, 2s), nullptr);
  }
};

bool has_line_starting(const std::string& text, const std::string& prefix) {
  return text.starts_with(prefix) || text.find("\n" + prefix) != std::string::npos;
}

TEST(AgentRoutes, BeforeTheFirstReadingHealthIs503AndMetricsHasOnlyTheAgent) {
  Routes r;
  EXPECT_EQ(r.get("/healthz").status, 503);
  EXPECT_EQ(r.get("/health").body, "no GPU reading yet\n");
  auto m = r.get("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.body.find("DCGM_FI_"), std::string::npos);
  EXPECT_TRUE(has_line_starting(m.body, "gpuscope_build_info{version=\"9.9.9\"} 1"));
  EXPECT_FALSE(has_line_starting(m.body, "gpuscope_sample_age_seconds")) << "no age without a reading";
}

TEST(AgentRoutes, AfterAReadingMetricsHasTheGpusAndALostGpuIsOnlyUpZero) {
  Routes r;
  r.first_reading();
  EXPECT_EQ(r.get("/healthz").status, 200);
  auto m = r.get("/metrics");
  EXPECT_EQ(m.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_TRUE(has_line_starting(m.body, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-5e5c1a8a-1111-2222-3333-444455556666\","
                                        "pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
                                        "Hostname=\"node01\",DCGM_FI_DRIVER_VERSION=\"580.65.06\"} 45"));
  EXPECT_EQ(m.body.find("DCGM_FI_DEV_GPU_TEMP{gpu=\"1\""), std::string::npos);
  EXPECT_NE(m.body.find("gpuscope_gpu_up{gpu=\"1\","), std::string::npos);
  EXPECT_NE(m.body.find("DCGM_FI_DRIVER_VERSION=\"580.65.06\"} 0\n"), std::string::npos);
  // 1e9 ns of power-capped time is 1e6 us, DCGM's unit.
  EXPECT_NE(m.body.find("DCGM_FI_DEV_POWER_VIOLATION{gpu=\"0\""), std::string::npos);
  EXPECT_NE(m.body.find("DCGM_FI_DRIVER_VERSION=\"580.65.06\"} 1000000\n"), std::string::npos);
  EXPECT_TRUE(has_line_starting(m.body, "gpuscope_collector_success{collector=\"device\"} 0")) << "GPU 1 is lost";
}

TEST(AgentRoutes, OpenMetricsWhenAskedGzipWhenAcceptedAndTheGpuPartIsRenderedOncePerReading) {
  Routes r;
  r.first_reading();
  auto om = r.get("/metrics", {{"Accept", "application/openmetrics-text; version=1.0.0"}});
  EXPECT_EQ(om.content_type, "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_TRUE(om.body.ends_with("# EOF\n"));
  EXPECT_NE(om.body.find("# TYPE DCGM_FI_DEV_POWER_VIOLATION unknown\n"), std::string::npos);
  EXPECT_NE(om.body.find("# TYPE gpuscope_samples counter\n"), std::string::npos);

  auto gz = r.get("/metrics", {{"Accept-Encoding", "deflate, gzip;q=0.8"}});
  ASSERT_EQ(gz.headers.size(), 2u);
  EXPECT_EQ(gz.headers[1], (std::pair<std::string, std::string>{"Content-Encoding", "gzip"}));
  const auto plain = e2e::gunzip(gz.body);
  EXPECT_NE(plain.find("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\""), std::string::npos);
  EXPECT_EQ(r.get("/metrics", {{"Accept-Encoding", "gzip;q=0"}}).headers.size(), 1u) << "q=0 refuses gzip";

  // Scrapes close together share one body (and one gzip of it): no render per scrape under load.
  auto s1 = r.routes.handle(HttpRequest("GET", "/metrics", {{"Accept-Encoding", "gzip"}}));
  auto s2 = r.routes.handle(HttpRequest("GET", "/metrics", {{"Accept-Encoding", "gzip"}}));
  EXPECT_EQ(s1.shared_body.get(), s2.shared_body.get());
  std::this_thread::sleep_for(AgentRoutes::kBodyReuse + 20ms);
  auto s3 = r.routes.handle(HttpRequest("GET", "/metrics", {{"Accept-Encoding", "gzip"}}));
  EXPECT_NE(s1.shared_body.get(), s3.shared_body.get()) << "the agent's own series must not go stale";

  r.sampler.stop();
  const auto a = r.routes.render_metrics(exporter::ExpositionFormat::kPrometheusText);
  const auto b = r.routes.render_metrics(exporter::ExpositionFormat::kPrometheusText);
  EXPECT_EQ(a.substr(0, a.find("gpuscope_sample_age_seconds")), b.substr(0, b.find("gpuscope_sample_age_seconds")));
}

TEST(AgentRoutes, ANewMetricSetIsUsedFromTheNextScrapeAndAFailedReloadIsExported) {
  Routes r;
  r.first_reading();
  auto set = exporter::parse_metric_set("DCGM_FI_DEV_GPU_UTIL, gauge, util\n", "x.csv");
  ASSERT_TRUE(set.has_value());
  r.routes.set_metric_set(std::make_shared<const exporter::MetricSet>(set->set));
  auto m = r.get("/metrics").body;
  EXPECT_NE(m.find("# HELP DCGM_FI_DEV_GPU_UTIL util\n"), std::string::npos);
  EXPECT_EQ(m.find("DCGM_FI_DEV_GPU_TEMP"), std::string::npos);
  EXPECT_EQ(m.find("DCGM_FI_DRIVER_VERSION="), std::string::npos) << "the file has no label line";
  EXPECT_TRUE(has_line_starting(m, "gpuscope_config_last_reload_successful 1"));
  r.routes.reload_failed();
  m = r.get("/metrics").body;
  EXPECT_TRUE(has_line_starting(m, "gpuscope_config_last_reload_successful 0"));
  EXPECT_NE(m.find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos) << "the previous set stays";
}

TEST(AgentRoutes, UnknownPathsAre404OtherMethods405) {
  Routes r;
  EXPECT_EQ(r.get("/metricz").status, 404);
  auto post = r.routes.handle(HttpRequest("POST", "/metrics"));
  EXPECT_EQ(post.status, 405);
  ASSERT_EQ(post.headers.size(), 1u);
  EXPECT_EQ(post.headers[0].second, "GET, HEAD");
}

TEST(AgentRoutes, GpusJsonHasInventoryLatestValuesAndUpFlags) {
  Routes r;
  r.first_reading();
  auto res = r.get("/api/v1/gpus");
  EXPECT_EQ(res.content_type, "application/json");
  auto j = nlohmann::json::parse(res.body);
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["up"], true);
  EXPECT_EQ(j["gpus"][0]["values"]["gpu_temp_celsius"], 45);
  EXPECT_FALSE(j["gpus"][0]["values"].contains("fan_speed_percent")) << "unsupported is absent, not 0";
  EXPECT_EQ(j["gpus"][1]["up"], false);
  EXPECT_FALSE(j["gpus"][1].contains("values"));
  EXPECT_EQ(j["system"]["hostname"], "node01");
  EXPECT_GE(j["sample"]["age_seconds"].get<double>(), 0);
}

}  // namespace
}  // namespace gpuscope::http
