// /api/v1/diagnosis: the loop's latest diagnosis by default (filtered by ?gpu=), one computed over the
// history with ?window= or ?time=, Prometheus's error envelope for bad parameters, and 503 with the
// reason while there is nothing to show.
#include "http/diagnosis_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "store/head.h"

namespace gpuscope::http {
namespace {

using namespace std::chrono_literals;

store::Labels diagnosis_gpu_labels(int gpu, std::string_view name) {
  return store::Labels({{"Hostname", "node-1"},
                        {"UUID", "GPU-" + std::to_string(gpu)},
                        {"__name__", std::string(name)},
                        {"gpu", std::to_string(gpu)}});
}

class DiagnosisApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // GPU 0 idle throughout; GPU 1 busy with kernels that fill few SMs (launch bound) in the last
    // minute, idle before.
    const std::int64_t now = clock_.unix_ms();
    for (std::int64_t t = now - 600'000; t <= now; t += 1000) {
      const bool busy = t > now - 60'000;
      add(t, 0, 0, 0);
      add(t, 1, busy ? 0.9 : 0, busy ? 0.045 : 0);
    }
  }
  void add(std::int64_t t, int gpu, double gr, double sm) {
    ASSERT_TRUE(head_.append(diagnosis_gpu_labels(gpu, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), t, gr));
    ASSERT_TRUE(head_.append(diagnosis_gpu_labels(gpu, "DCGM_FI_PROF_SM_ACTIVE"), t, sm));
  }

  DiagnosisApi api(const store::Queryable* history = nullptr) {
    DiagnosisApiOptions o;
    o.clock = &clock_;
    o.limiter = &limiter_;
    return DiagnosisApi(history == nullptr ? &head_ : history, o, [this] { return latest_; });
  }
  // The latest a loop would have published: the diagnosis of the last 30 s.
  void publish_latest() {
    analysis::StoreSource source(head_);
    auto d = analysis::diagnose_from(source, clock_.unix_ms(), 30'000, {}, {});
    ASSERT_TRUE(d) << d.error();
    latest_.diagnosis = std::make_shared<const analysis::Diagnosis>(std::move(*d));
  }
  static nlohmann::json get(const DiagnosisApi& api, std::vector<std::pair<std::string, std::string>> args,
                            int want_status) {
    const auto r = api.handle(HttpRequest("GET", "/api/v1/diagnosis", {}, std::move(args)));
    EXPECT_EQ(r.status, want_status) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.body;
    return j;
  }
  static std::vector<std::string> verdicts(const nlohmann::json& answer) {
    std::vector<std::string> out;
    for (const auto& g : answer["data"]["gpus"]) out.push_back(g["gpu"].get<std::string>() + "=" + g["verdict"].get<std::string>());
    return out;
  }

  store::Head head_;
  model::VirtualClock clock_;
  promql::QueryLimiter limiter_{2};
  PublishedDiagnosis latest_{nullptr, "no diagnosis yet: the first evaluation comes after the first GPU reading"};
};

TEST_F(DiagnosisApiTest, AnswersTheLatestEvaluationInPrometheusEnvelope) {
  publish_latest();
  const auto a = get(api(), {}, 200);
  EXPECT_EQ(a["status"], "success");
  EXPECT_EQ(a["data"]["at"], static_cast<double>(clock_.unix_ms()) / 1000.0);
  EXPECT_EQ(a["data"]["window_seconds"], 30);
  EXPECT_EQ(verdicts(a), (std::vector<std::string>{"0=idle", "1=launch_bound"}));
  EXPECT_TRUE(a["data"]["gpus"][1].contains("evidence"));
}

TEST_F(DiagnosisApiTest, GpuParameterKeepsTheGpusAskedForByIndexOrUuidRepeatedOrCommaSeparated) {
  publish_latest();
  EXPECT_EQ(verdicts(get(api(), {{"gpu", "1"}}, 200)), (std::vector<std::string>{"1=launch_bound"}));
  EXPECT_EQ(verdicts(get(api(), {{"gpu", "GPU-0"}}, 200)), (std::vector<std::string>{"0=idle"}));
  EXPECT_EQ(verdicts(get(api(), {{"gpu", "1"}, {"gpu", "0"}}, 200)), (std::vector<std::string>{"0=idle", "1=launch_bound"}));
  EXPECT_EQ(verdicts(get(api(), {{"gpu", "0,1"}}, 200)), (std::vector<std::string>{"0=idle", "1=launch_bound"}));
}

TEST_F(DiagnosisApiTest, WindowOrTimeComputesOnDemandOverTheHistory) {
  // Five minutes ago GPU 1 was still idle; over the last 10 minutes it is what it does now.
  const std::int64_t five_ago = clock_.unix_ms() - 300'000;
  const auto past = get(api(), {{"time", std::to_string(five_ago / 1000)}}, 200);
  EXPECT_EQ(past["data"]["at"], static_cast<double>(five_ago / 1000));
  EXPECT_EQ(past["data"]["window_seconds"], 30) << "the agent's window when none is given";
  EXPECT_EQ(verdicts(past), (std::vector<std::string>{"0=idle", "1=idle"}));
  const auto wide = get(api(), {{"window", "10m"}, {"gpu", "1"}}, 200);
  EXPECT_EQ(wide["data"]["window_seconds"], 600);
  EXPECT_EQ(verdicts(wide), (std::vector<std::string>{"1=launch_bound"}));
  // RFC 3339 too, as the query API.
  EXPECT_EQ(get(api(), {{"time", "2026-01-01T00:00:00Z"}, {"window", "45s"}}, 200)["data"]["at"], 1767225600);
}

TEST_F(DiagnosisApiTest, BadParametersAreBadDataWithOneLineErrors) {
  publish_latest();
  struct Case {
    std::vector<std::pair<std::string, std::string>> args;
    std::string error;
  };
  const Case cases[] = {
      {{{"window", "forever"}}, "invalid parameter \"window\": \"forever\" is not a duration from 1s to 1h (e.g. 30s, 5m)"},
      {{{"window", "500ms"}}, "invalid parameter \"window\": \"500ms\" is not a duration from 1s to 1h (e.g. 30s, 5m)"},
      {{{"window", "2h"}}, "invalid parameter \"window\": \"2h\" is not a duration from 1s to 1h (e.g. 30s, 5m)"},
      {{{"time", "yesterday"}}, ""},
      {{{"gpu", ""}}, "invalid parameter \"gpu\": \"\" is not a GPU index or UUID (e.g. gpu=0,2)"},
      {{{"gpu", "0,"}}, "invalid parameter \"gpu\": \"0,\" is not a GPU index or UUID (e.g. gpu=0,2)"},
      {{{"gpu", "7"}}, "invalid parameter \"gpu\": no GPU \"7\" in the diagnosis (GPUs: 0, 1)"},
      {{{"gpu", "7"}, {"window", "1m"}}, "invalid parameter \"gpu\": no GPU \"7\" in the diagnosis (GPUs: 0, 1)"},
      {{{"time", "1e300"}}, "invalid parameter \"time\": \"1e300\" is not between 1970 and 9999"},
  };
  for (const Case& c : cases) {
    const auto a = get(api(), c.args, 400);
    EXPECT_EQ(a["status"], "error");
    EXPECT_EQ(a["errorType"], "bad_data");
    const std::string error = a["error"];
    if (c.error.empty()) {
      EXPECT_TRUE(error.starts_with("invalid parameter \"time\": ")) << error;
    } else {
      EXPECT_EQ(error, c.error);
    }
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  const auto r = api().handle(HttpRequest("POST", "/api/v1/diagnosis"));
  EXPECT_EQ(r.status, 405);
}

TEST_F(DiagnosisApiTest, UnavailableWithTheReasonBeforeTheFirstEvaluationOrWithoutHistory) {
  auto a = get(api(), {}, 503);
  EXPECT_EQ(a["status"], "error");
  EXPECT_EQ(a["errorType"], "unavailable");
  EXPECT_EQ(a["error"], "no diagnosis yet: the first evaluation comes after the first GPU reading");

  DiagnosisApiOptions o;
  o.clock = &clock_;
  DiagnosisApi no_history(nullptr, o, [] {
    return PublishedDiagnosis{nullptr, "the diagnosis is off: it reads the recent readings the history keeps"};
  });
  EXPECT_EQ(get(no_history, {}, 503)["error"], "the diagnosis is off: it reads the recent readings the history keeps");
  const auto on_demand = get(no_history, {{"window", "1m"}}, 503);
  EXPECT_EQ(on_demand["error"], "no history to diagnose (the agent runs with --no-history, which keeps no readings)");
}

TEST_F(DiagnosisApiTest, OnDemandIsBoundedByTheQueryLimiter) {
  // The agent is stopping: queries end at once, this one too.
  limiter_.cancel_all();
  const auto a = get(api(), {{"window", "1m"}}, 503);
  EXPECT_EQ(a["errorType"], "canceled");
  // A timeout ends it between two reads of the history.
  DiagnosisApiOptions o;
  o.clock = &clock_;
  o.timeout = std::chrono::milliseconds(-1);
  DiagnosisApi expired(&head_, o, [] { return PublishedDiagnosis{}; });
  const auto late = get(expired, {{"window", "1m"}}, 503);
  EXPECT_EQ(late["errorType"], "timeout");
  EXPECT_EQ(late["error"], "query timed out");
}

}  // namespace
}  // namespace gpuscope::http
