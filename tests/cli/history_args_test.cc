// The history and read-schedule flags of `serve` and the arguments of `eval`: defaults, accepted forms,
// and one-line errors naming the flag.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "cli/eval_verb.h"
#include "cli/serve_verb.h"

namespace gpuscope::cli {
namespace {

std::string error_of(const std::expected<ServeOptions, ParseExit>& r) { return r ? "" : r.error().text; }
std::string error_of(const std::expected<EvalOptions, ParseExit>& r) { return r ? "" : r.error().text; }

TEST(ServeHistoryArgs, DefaultsAndForms) {
  auto d = parse_serve_args(std::vector<std::string>{});
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->history);
  EXPECT_EQ(d->retention, std::chrono::hours(24 * 15));
  EXPECT_EQ(d->flush_interval, std::chrono::seconds(60));
  EXPECT_FALSE(d->metrics.timestamps);
  EXPECT_FALSE(d->data_dir.empty());

  auto o = parse_serve_args(std::vector<std::string>{"--data-dir", "/tmp/x", "--retention", "2w", "--flush-interval", "5s",
                                                     "--query-timeout", "30s", "--metrics-timestamps", "--no-history"});
  ASSERT_TRUE(o) << error_of(o);
  EXPECT_EQ(o->data_dir, "/tmp/x");
  EXPECT_EQ(o->retention, std::chrono::hours(24 * 14));
  EXPECT_EQ(o->flush_interval, std::chrono::seconds(5));
  EXPECT_EQ(o->query_timeout, std::chrono::seconds(30));
  EXPECT_TRUE(o->metrics.timestamps);
  EXPECT_FALSE(o->history);
}

TEST(ServeHistoryArgs, BadValuesAreOneLineErrors) {
  EXPECT_EQ(error_of(parse_serve_args(std::vector<std::string>{"--retention", "30s"})),
            "invalid value '30s' for --retention (at least 1m, e.g. 15d, 36h)");
  EXPECT_EQ(error_of(parse_serve_args(std::vector<std::string>{"--retention", "forever"})),
            "invalid value 'forever' for --retention (at least 1m, e.g. 15d, 36h)");
  EXPECT_EQ(error_of(parse_serve_args(std::vector<std::string>{"--flush-interval", "1h"})),
            "invalid value '1h' for --flush-interval (1s to 10m)");
  EXPECT_EQ(error_of(parse_serve_args(std::vector<std::string>{"--query-timeout", "0s"})),
            "invalid value '0s' for --query-timeout (100ms to 1h)");
}

TEST(ServeReadScheduleArgs, DefaultsFormsAndErrors) {
  auto d = parse_serve_args(std::vector<std::string>{});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->counter_interval, std::chrono::seconds(10));
  EXPECT_EQ(d->process_utilization_interval, std::chrono::seconds(5));
  auto o = parse_serve_args(std::vector<std::string>{"--counter-interval", "0s", "--process-utilization-interval", "30s"});
  ASSERT_TRUE(o) << error_of(o);
  EXPECT_EQ(o->counter_interval, std::chrono::seconds(0));
  EXPECT_EQ(o->process_utilization_interval, std::chrono::seconds(30));
  auto every = parse_serve_args(std::vector<std::string>{"--process-utilization-interval", "0s"});
  ASSERT_TRUE(every) << error_of(every);
  EXPECT_EQ(every->process_utilization_interval, std::chrono::seconds(0));
  EXPECT_EQ(error_of(parse_serve_args(std::vector<std::string>{"--process-utilization-interval", "2h"})),
            "invalid value '2h' for --process-utilization-interval (0s to 1h, e.g. 5s)");
  EXPECT_EQ(error_of(parse_serve_args(std::vector<std::string>{"--process-utilization-interval", "soon"})),
            "invalid value 'soon' for --process-utilization-interval (0s to 1h, e.g. 5s)");
}

TEST(ServeHistoryArgs, QueryLimitsDefaultsFormsAndErrors) {
  auto d = parse_serve_args(std::vector<std::string>{});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->query_timeout, std::chrono::minutes(2));
  EXPECT_EQ(d->query_max_samples, 1'000'000u);
  EXPECT_EQ(d->query_max_concurrency, 4u);
  auto o = parse_serve_args(std::vector<std::string>{"--query.max-samples", "5000000", "--query.max-concurrency", "1"});
  ASSERT_TRUE(o) << error_of(o);
  EXPECT_EQ(o->query_max_samples, 5'000'000u);
  EXPECT_EQ(o->query_max_concurrency, 1u);
  EXPECT_EQ(error_of(parse_serve_args(std::vector<std::string>{"--query.max-samples", "999"})),
            "invalid value '999' for --query.max-samples (1000 to 1000000000)");
  EXPECT_EQ(error_of(parse_serve_args(std::vector<std::string>{"--query.max-samples", "50M"})),
            "invalid value '50M' for --query.max-samples (1000 to 1000000000)");
  EXPECT_EQ(error_of(parse_serve_args(std::vector<std::string>{"--query.max-concurrency", "0"})),
            "invalid value '0' for --query.max-concurrency (1 to 1000)");
}

TEST(ServeHistoryArgs, DefaultDataDirFollowsSystemdThenTheUser) {
  setenv("STATE_DIRECTORY", "/var/lib/gpuscope:/var/lib/other", 1);
  EXPECT_EQ(default_data_dir(), "/var/lib/gpuscope");
  unsetenv("STATE_DIRECTORY");
  if (geteuid() == 0) {
    EXPECT_EQ(default_data_dir(), "/var/lib/gpuscope");
  } else {
    EXPECT_NE(default_data_dir().find("gpuscope"), std::string::npos);
  }
}

TEST(EvalArgs, InstantAndRangeQueries) {
  const std::int64_t now = 1'700'000'000'000;
  auto i = parse_eval_args(std::vector<std::string>{"up", "--url", "http://h:9400"}, now);
  ASSERT_TRUE(i) << error_of(i);
  EXPECT_EQ(i->expr, "up");
  EXPECT_FALSE(i->time_ms.has_value());
  EXPECT_FALSE(i->step_ms.has_value());
  auto t = parse_eval_args(std::vector<std::string>{"up", "--url", "u", "--time", "2023-11-14T22:13:20Z"}, now);
  ASSERT_TRUE(t);
  EXPECT_EQ(*t->time_ms, 1'700'000'000'000);
  auto r = parse_eval_args(
      std::vector<std::string>{"up", "--data-dir", "/d", "--start", "now-1h", "--end", "now", "--step", "1m", "--format", "json"},
      now);
  ASSERT_TRUE(r) << error_of(r);
  EXPECT_EQ(*r->start_ms, now - 3'600'000);
  EXPECT_EQ(*r->end_ms, now);
  EXPECT_EQ(*r->step_ms, 60'000);
  EXPECT_TRUE(r->json);
}

TEST(EvalArgs, BadArgumentsAreOneLineErrors) {
  const std::int64_t now = 1'700'000'000'000;
  auto err = [&](std::vector<std::string> a) { return error_of(parse_eval_args(a, now)); };
  EXPECT_EQ(err({"up"}), "eval needs exactly one of --url and --data-dir");
  EXPECT_EQ(err({"up", "--url", "u", "--start", "now-1h"}), "a range query needs all of --start, --end and --step");
  EXPECT_EQ(err({"up", "--url", "u", "--time", "now", "--step", "1m", "--start", "now", "--end", "now"}),
            "--time is for an instant query; a range query takes --start, --end and --step");
  EXPECT_EQ(err({"up", "--url", "u", "--start", "now", "--end", "now-1h", "--step", "1m"}), "--end is before --start");
  EXPECT_EQ(err({"up", "--url", "u", "--format", "csv"}), "unknown format 'csv' in --format (text or json)");
  EXPECT_NE(err({"up", "--url", "u", "--time", "yesterday"}).find("invalid value 'yesterday' for --time"), std::string::npos);
  EXPECT_NE(err({"up", "--url", "u", "--start", "0", "--end", "1", "--step", "-5s"}).find("--step"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::cli
