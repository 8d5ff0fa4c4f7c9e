#include "http/query_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/clock.h"
#include "promql/query_limiter.h"
#include "store/series_set.h"

namespace gpuscope::http {
namespace {

using nlohmann::json;

// Two GPUs' utilization every 15 s for 10 minutes from t=1000 s, and one memory series.
class QueryApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i <= 40; ++i) {
      const std::int64_t t = 1'000'000 + i * 15'000;
      data_.add(store::Labels{{"__name__", "DCGM_FI_DEV_GPU_UTIL"}, {"gpu", "0"}, {"Hostname", "node1"}}, t, 10.0 + i);
      data_.add(store::Labels{{"__name__", "DCGM_FI_DEV_GPU_UTIL"}, {"gpu", "1"}, {"Hostname", "node1"}}, t, 90.0);
      data_.add(store::Labels{{"__name__", "DCGM_FI_DEV_FB_USED"}, {"gpu", "0"}, {"Hostname", "node1"}}, t, 1024.5);
    }
    QueryApiOptions o;
    o.version = "9.9.9";
    api_ = std::make_unique<QueryApi>(data_, o, [] { return std::int64_t{1'300'000}; });
  }

  HttpResponse get(std::string path, std::vector<std::pair<std::string, std::string>> args) {
    return api_->handle(HttpRequest("GET", path, {}, std::move(args)));
  }
  static json body(const HttpResponse& r) { return json::parse(r.body); }

  store::SeriesSet data_;
  std::unique_ptr<QueryApi> api_;
};

TEST_F(QueryApiTest, InstantQueryReturnsAVectorInPrometheusShape) {
  auto r = get("/api/v1/query", {{"query", "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\"}"}, {"time", "1300.5"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  auto b = body(r);
  EXPECT_EQ(b["status"], "success");
  EXPECT_EQ(b["data"]["resultType"], "vector");
  ASSERT_EQ(b["data"]["result"].size(), 1u);
  const auto& s = b["data"]["result"][0];
  EXPECT_EQ(s["metric"]["__name__"], "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_EQ(s["metric"]["gpu"], "1");
  EXPECT_DOUBLE_EQ(s["value"][0].get<double>(), 1300.5);
  EXPECT_EQ(s["value"][1], "90");  // values are strings, as Prometheus writes them
}

TEST_F(QueryApiTest, TimeDefaultsToNowAndAcceptsRfc3339) {
  auto now = body(get("/api/v1/query", {{"query", "time()"}}));
  EXPECT_EQ(now["data"]["resultType"], "scalar");
  EXPECT_EQ(now["data"]["result"][1], "1300");
  auto rfc = body(get("/api/v1/query", {{"query", "time()"}, {"time", "1970-01-01T00:21:40.250Z"}}));
  EXPECT_EQ(rfc["data"]["result"][1], "1300.25");
}

TEST_F(QueryApiTest, RangeQueryReturnsAMatrix) {
  auto r = get("/api/v1/query_range",
               {{"query", "avg_over_time(DCGM_FI_DEV_GPU_UTIL[1m])"}, {"start", "1100"}, {"end", "1160"}, {"step", "30s"}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto b = body(r);
  EXPECT_EQ(b["data"]["resultType"], "matrix");
  ASSERT_EQ(b["data"]["result"].size(), 2u);
  const auto& gpu0 = b["data"]["result"][0];
  EXPECT_EQ(gpu0["metric"].count("__name__"), 0u);  // avg_over_time drops the name
  ASSERT_EQ(gpu0["values"].size(), 3u);
  EXPECT_EQ(gpu0["values"][0][0].get<double>(), 1100);
  // The window (1040 s, 1100 s] holds the samples at 1045, 1060, 1075 and 1090 s: 13, 14, 15, 16.
  EXPECT_EQ(gpu0["values"][0][1], "14.5");
}

TEST_F(QueryApiTest, PostFormBodyWorksLikeGet) {
  HttpRequest req("POST", "/api/v1/query", {{"Content-Type", "application/x-www-form-urlencoded"}}, {},
                  "query=sum+by+%28Hostname%29+%28DCGM_FI_DEV_GPU_UTIL%29&time=1300");
  auto r = api_->handle(req);
  ASSERT_EQ(r.status, 200) << r.body;
  auto b = body(r);
  ASSERT_EQ(b["data"]["result"].size(), 1u);
  EXPECT_EQ(b["data"]["result"][0]["metric"], json({{"Hostname", "node1"}}));
  EXPECT_EQ(b["data"]["result"][0]["value"][1], "120");  // 30 (the sample at 1300 s) + 90
}

TEST_F(QueryApiTest, ParseErrorsAreBadDataWithPrometheusShape) {
  auto r = get("/api/v1/query", {{"query", "sum(DCGM_FI_DEV_GPU_UTIL"}, {"time", "1300"}});
  EXPECT_EQ(r.status, 400);
  auto b = body(r);
  EXPECT_EQ(b["status"], "error");
  EXPECT_EQ(b["errorType"], "bad_data");
  EXPECT_NE(b["error"].get<std::string>().find("parse error"), std::string::npos) << b["error"];
}

TEST_F(QueryApiTest, ExecutionErrorsAre422) {
  // Two series with one label set after the name is dropped: Prometheus's execution error.
  auto r = get("/api/v1/query", {{"query", "rate({gpu=\"0\"}[5m])"}, {"time", "1300"}});
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body(r)["errorType"], "execution");
}

TEST_F(QueryApiTest, BadParametersNameTheParameter) {
  auto missing = body(get("/api/v1/query", {}));
  EXPECT_EQ(missing["errorType"], "bad_data");
  auto bad_time = get("/api/v1/query", {{"query", "1"}, {"time", "yesterday"}});
  EXPECT_EQ(bad_time.status, 400);
  EXPECT_NE(body(bad_time)["error"].get<std::string>().find("invalid parameter \"time\""), std::string::npos);
  auto zero_step = body(get("/api/v1/query_range", {{"query", "1"}, {"start", "0"}, {"end", "10"}, {"step", "0"}}));
  EXPECT_NE(zero_step["error"].get<std::string>().find("zero or negative"), std::string::npos);
  auto backwards = body(get("/api/v1/query_range", {{"query", "1"}, {"start", "10"}, {"end", "0"}, {"step", "1"}}));
  EXPECT_NE(backwards["error"].get<std::string>().find("end timestamp must not be before start time"), std::string::npos);
}

TEST_F(QueryApiTest, TooManyPointsPerSeriesIsRefused) {
  auto r = get("/api/v1/query_range", {{"query", "1"}, {"start", "0"}, {"end", "100000"}, {"step", "1"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(body(r)["error"], "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
                              "resolution (?step=XX)");
}

// Prometheus refuses a selector that every series matches (no matcher fails the empty value): a
// typo like `{}` or `{gpu=""}` must not dump the whole store. Its words and statuses, per endpoint.
TEST_F(QueryApiTest, SelectorsThatMatchEverythingAreRefusedOnEveryEndpoint) {
  const std::string everything = "match[] must contain at least one non-empty matcher";
  for (const char* m : {"{}", "{gpu=\"\"}", "{__name__=~\".*\"}", "{gpu!=\"7\"}"}) {
    auto series = get("/api/v1/series", {{"match[]", m}});
    EXPECT_EQ(series.status, 400) << m << ": " << series.body;
    EXPECT_EQ(body(series)["errorType"], "bad_data") << m;
    EXPECT_EQ(body(series)["error"], "invalid parameter \"match[]\": " + everything) << m;
    auto labels = get("/api/v1/labels", {{"match[]", m}});
    EXPECT_EQ(labels.status, 400) << m << ": " << labels.body;
    EXPECT_EQ(body(labels)["error"], everything) << m;
    auto values = get("/api/v1/label/gpu/values", {{"match[]", m}});
    EXPECT_EQ(values.status, 400) << m << ": " << values.body;
    EXPECT_EQ(body(values)["error"], everything) << m;
  }
  // One narrow selector does not excuse a second that is not.
  auto mixed = get("/api/v1/series", {{"match[]", "DCGM_FI_DEV_GPU_UTIL"}, {"match[]", "{}"}});
  EXPECT_EQ(mixed.status, 400) << mixed.body;
  // A matcher that fails the empty value narrows, even beside one that does not.
  auto narrow = get("/api/v1/series", {{"match[]", "{gpu=~\"1|\", Hostname=\"node1\"}"}});
  EXPECT_EQ(narrow.status, 200) << narrow.body;
  EXPECT_EQ(body(narrow)["data"].size(), 1u) << narrow.body;
  for (const char* path : {"/api/v1/query", "/api/v1/query_range"}) {
    auto q = get(path, {{"query", "{}"}, {"start", "1000"}, {"end", "1300"}, {"step", "15"}});
    EXPECT_EQ(q.status, 400) << path << ": " << q.body;
    EXPECT_EQ(body(q)["error"],
              "invalid parameter \"query\": 1:1: parse error: vector selector must contain at least one non-empty matcher")
        << path;
  }
}

// Each refusal as Prometheus words it (checked against Prometheus 2.42 and 3's web/api/v1/api.go), and
// in its order: the first bad parameter is the one named.
TEST_F(QueryApiTest, BadParametersAreRefusedInPrometheusWordsAndOrder) {
  auto error = [&](std::string path, std::vector<std::pair<std::string, std::string>> args) {
    auto r = get(std::move(path), std::move(args));
    EXPECT_EQ(r.status, 400) << r.body;
    return body(r)["error"].get<std::string>();
  };
  // An empty query has no position to name in Prometheus 3 (2.42 said 1:1).
  EXPECT_EQ(error("/api/v1/query", {}), "invalid parameter \"query\": unknown position: parse error: no expression found in input");
  EXPECT_EQ(error("/api/v1/query", {{"query", "up"}, {"time", "abc"}}),
            "invalid parameter \"time\": Invalid time value for 'time': cannot parse \"abc\" to a valid timestamp");
  EXPECT_EQ(error("/api/v1/query", {{"query", "sum(up"}}),
            "invalid parameter \"query\": 1:7: parse error: unclosed left parenthesis");
  EXPECT_EQ(error("/api/v1/query", {{"query", "up"}, {"timeout", "-1s"}}),
            "invalid parameter \"timeout\": cannot parse \"-1s\" to a valid duration");
  EXPECT_EQ(error("/api/v1/query_range", {{"query", "up"}}), "invalid parameter \"start\": cannot parse \"\" to a valid timestamp");
  EXPECT_EQ(error("/api/v1/query_range", {{"query", "up"}, {"start", "0"}, {"end", "x"}}),
            "invalid parameter \"end\": cannot parse \"x\" to a valid timestamp");
  EXPECT_EQ(error("/api/v1/query_range", {{"query", "up"}, {"start", "10"}, {"end", "0"}, {"step", "1"}}),
            "invalid parameter \"end\": end timestamp must not be before start time");
  EXPECT_EQ(error("/api/v1/query_range", {{"query", "up"}, {"start", "0"}, {"end", "10"}}),
            "invalid parameter \"step\": cannot parse \"\" to a valid duration");
  for (const char* step : {"0", "-1", "-5s"}) {
    const std::string e = error("/api/v1/query_range", {{"query", "up"}, {"start", "0"}, {"end", "10"}, {"step", step}});
    if (std::string_view(step) == "-5s") {
      EXPECT_EQ(e, "invalid parameter \"step\": cannot parse \"-5s\" to a valid duration");
    } else {
      EXPECT_EQ(e, "invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a "
                   "positive integer") << step;
    }
  }
  // The parameters come before the query: a missing query is only reported once they are right.
  EXPECT_EQ(error("/api/v1/query_range", {{"start", "0"}, {"end", "10"}, {"step", "1"}}),
            "invalid parameter \"query\": unknown position: parse error: no expression found in input");
  EXPECT_EQ(error("/api/v1/query_range", {{"query", "DCGM_FI_DEV_GPU_UTIL[5m]"}, {"start", "0"}, {"end", "10"}, {"step", "1"}}),
            "invalid parameter \"query\": invalid expression type \"range vector\" for range query, must be Scalar or "
            "instant Vector");
  // series: match[] first, then start and end, then the selectors.
  EXPECT_EQ(error("/api/v1/series", {{"start", "abc"}}), "no match[] parameter provided");
  EXPECT_EQ(error("/api/v1/series", {{"match[]", "up{"}, {"start", "abc"}}),
            "invalid parameter \"start\": Invalid time value for 'start': cannot parse \"abc\" to a valid timestamp");
  EXPECT_EQ(error("/api/v1/series", {{"match[]", "up{"}}),
            "invalid parameter \"match[]\": 1:4: parse error: unexpected end of input inside braces");
  EXPECT_EQ(error("/api/v1/labels", {{"end", "soon"}}),
            "invalid parameter \"end\": Invalid time value for 'end': cannot parse \"soon\" to a valid timestamp");
  EXPECT_EQ(error("/api/v1/labels", {{"match[]", "up{"}}), "1:4: parse error: unexpected end of input inside braces");
  EXPECT_EQ(error("/api/v1/label/\xff/values", {}), "invalid label name: \"\\xff\"");
  EXPECT_EQ(error("/api/v1/label/gpu/values", {{"start", "x"}}),
            "invalid parameter \"start\": Invalid time value for 'start': cannot parse \"x\" to a valid timestamp");
  // What Prometheus takes as unset is unset here too.
  EXPECT_EQ(get("/api/v1/query", {{"query", "1"}, {"time", ""}, {"timeout", ""}}).status, 200);
  EXPECT_EQ(get("/api/v1/series", {{"match[]", "DCGM_FI_DEV_GPU_UTIL"}, {"start", ""}, {"end", ""}}).status, 200);
}

TEST_F(QueryApiTest, SeriesLabelsAndLabelValues) {
  auto series = body(get("/api/v1/series", {{"match[]", "DCGM_FI_DEV_GPU_UTIL"}, {"match[]", "{__name__=~\"DCGM_FI_DEV_FB.*\"}"}}));
  ASSERT_EQ(series["status"], "success");
  EXPECT_EQ(series["data"].size(), 3u);
  auto labels = body(get("/api/v1/labels", {}));
  EXPECT_EQ(labels["data"], json({"Hostname", "__name__", "gpu"}));
  auto names = body(get("/api/v1/label/__name__/values", {}));
  EXPECT_EQ(names["data"], json({"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_UTIL"}));
  auto gpus = body(get("/api/v1/label/gpu/values", {{"match[]", "DCGM_FI_DEV_FB_USED"}}));
  EXPECT_EQ(gpus["data"], json({"0"}));
  auto none = get("/api/v1/series", {});
  EXPECT_EQ(none.status, 400);
  auto bad = get("/api/v1/series", {{"match[]", "rate(x[5m])"}});
  EXPECT_EQ(bad.status, 400);
}

TEST_F(QueryApiTest, BuildinfoAndMethods) {
  auto b = body(get("/api/v1/status/buildinfo", {}));
  EXPECT_EQ(b["status"], "success");
  EXPECT_TRUE(b["data"].contains("version"));
  EXPECT_EQ(b["data"]["application"], "gpuscope 9.9.9");
  auto del = api_->handle(HttpRequest("DELETE", "/api/v1/query"));
  EXPECT_EQ(del.status, 405);
  auto post_no_form = api_->handle(HttpRequest("POST", "/api/v1/query", {{"Content-Type", "application/json"}}));
  EXPECT_EQ(post_no_form.status, 400);
}

TEST(QueryApiRender, TimestampsAndValuesAsPrometheusWritesThem) {
  promql::QueryResult r;
  r.value = promql::Matrix{promql::Series{store::Labels{{"a", "b"}},
                                          {{-1500, 1.0}, {0, -0.5}, {1010, 1e21}, {1100, std::nan("")}, {1234, 1.0 / 0.0}}}};
  EXPECT_EQ(render_query_result(r),
            R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":)"
            R"([[-1.5,"1"],[0,"-0.5"],[1.01,"1000000000000000000000"],[1.1,"NaN"],[1.234,"+Inf"]]}]}})");
}

TEST(QueryApiParams, TimesDurationsAndForms) {
  EXPECT_EQ(parse_api_time("1700000000").value(), 1'700'000'000'000);
  EXPECT_EQ(parse_api_time("1700000000.123").value(), 1'700'000'000'123);
  EXPECT_EQ(parse_api_time("2023-11-14T22:13:20Z").value(), 1'700'000'000'000);
  EXPECT_EQ(parse_api_time("2023-11-14T23:13:20.5+01:00").value(), 1'700'000'000'500);
  EXPECT_FALSE(parse_api_time("2023-11-14").has_value());
  EXPECT_FALSE(parse_api_time("").has_value());
  EXPECT_EQ(parse_api_duration("15").value(), 15'000);
  EXPECT_EQ(parse_api_duration("0.5").value(), 500);
  EXPECT_EQ(parse_api_duration("1m30s").value(), 90'000);
  EXPECT_FALSE(parse_api_duration("fast").has_value());
  auto f = parse_form("a=1&match%5B%5D=x%7Bj%3D%22a+b%22%7D&&empty=");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[1].first, "match[]");
  EXPECT_EQ(f[1].second, "x{j=\"a b\"}");
  EXPECT_EQ(f[2].second, "");
}

// A store whose every read takes a (virtual) second.
class SlowStore : public store::SeriesSet {
 public:
  explicit SlowStore(model::VirtualClock& clock) : clock_(clock) {}
  std::expected<std::vector<store::SeriesSamples>, std::string> select(std::span<const store::LabelMatcher> matchers,
                                                                       std::int64_t mint_ms,
                                                                       std::int64_t maxt_ms) const override {
    clock_.advance(std::chrono::seconds(1));
    return SeriesSet::select(matchers, mint_ms, maxt_ms);
  }

 private:
  model::VirtualClock& clock_;
};

class QueryApiLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i <= 600; ++i) {
      for (int gpu = 0; gpu < 8; ++gpu) {
        data_.add(store::Labels{{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"gpu", std::to_string(gpu)}}, kNow - 600'000 + i * 1000, 40);
      }
    }
    options_.engine.clock = &clock_;
    options_.engine.timeout = std::chrono::seconds(2);  // as --query-timeout 2s
    options_.engine.limiter = &limiter_;
  }
  HttpResponse get(std::string path, std::vector<std::pair<std::string, std::string>> args) {
    QueryApi api(data_, options_, [] { return kNow; });
    return api.handle(HttpRequest("GET", path, {}, std::move(args)));
  }

  static constexpr std::int64_t kNow = 30LL * 24 * 3'600'000;
  model::VirtualClock clock_;
  SlowStore data_{clock_};
  promql::QueryLimiter limiter_;
  QueryApiOptions options_;
};

TEST_F(QueryApiLimitsTest, TheRequestsShorterTimeoutEndsTheQueryWithPrometheusTimeoutError) {
  // Three reads of a second each: past the request's 1s after the second, within the flag's 2s never.
  const std::string query = "DCGM_FI_DEV_GPU_TEMP + DCGM_FI_DEV_GPU_TEMP + DCGM_FI_DEV_GPU_TEMP";
  auto r = get("/api/v1/query", {{"query", query}, {"timeout", "1s"}});
  EXPECT_EQ(r.status, 503) << r.body;
  auto b = json::parse(r.body);
  EXPECT_EQ(b["status"], "error");
  EXPECT_EQ(b["errorType"], "timeout");
  EXPECT_EQ(b["error"], "query timed out in expression evaluation");
  // The flag's timeout holds for a request asking for more.
  EXPECT_EQ(get("/api/v1/query", {{"query", query}, {"timeout", "1h"}}).status, 503);
  EXPECT_EQ(get("/api/v1/query", {{"query", "DCGM_FI_DEV_GPU_TEMP"}, {"timeout", "1h"}}).status, 200);
  EXPECT_EQ(limiter_.stats().timed_out_total, 2u);
}

TEST_F(QueryApiLimitsTest, TheIssuesSubqueryIsRefusedAs422Execution) {
  for (const char* query : {"count_over_time(DCGM_FI_DEV_GPU_TEMP[7d:1ms])", "{__name__=~\".+\"}[15d:1ms]"}) {
    auto r = get("/api/v1/query", {{"query", query}});
    EXPECT_EQ(r.status, 422) << query << ": " << r.body;
    auto b = json::parse(r.body);
    EXPECT_EQ(b["errorType"], "execution");
    EXPECT_EQ(b["error"], "query processing would load too many samples into memory in query execution");
  }
  EXPECT_EQ(limiter_.stats().too_many_samples_total, 2u);
}

TEST_F(QueryApiLimitsTest, AfterCancelAllQueriesAre503Canceled) {
  limiter_.cancel_all();
  auto r = get("/api/v1/query_range", {{"query", "DCGM_FI_DEV_GPU_TEMP"}, {"start", "0"}, {"end", "60"}, {"step", "15"}});
  EXPECT_EQ(r.status, 503) << r.body;
  auto b = json::parse(r.body);
  EXPECT_EQ(b["errorType"], "canceled");
  EXPECT_EQ(b["error"], "query was canceled in query queue");
}

}  // namespace
}  // namespace gpuscope::http
