#include "promql_script.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpuscope::conformance {
namespace {

using EK = Expectation::Kind;

template <class T>
const T& command(const std::vector<ScriptCommand>& commands, std::size_t i) {
  EXPECT_LT(i, commands.size());
  EXPECT_TRUE(std::holds_alternative<T>(commands.at(i))) << "command " << i << " has another type";
  return std::get<T>(commands.at(i));
}

TEST(ScriptDuration, PrometheusForms) {
  EXPECT_EQ(parse_script_duration("0"), 0);
  EXPECT_EQ(parse_script_duration("0s"), 0);
  EXPECT_EQ(parse_script_duration("10s"), 10'000);
  EXPECT_EQ(parse_script_duration("1h5m"), 3'900'000);
  EXPECT_EQ(parse_script_duration("20s500ms"), 20'500);
  EXPECT_EQ(parse_script_duration("1d"), 86'400'000);
  EXPECT_EQ(parse_script_duration("2w"), 14LL * 86'400'000);
  EXPECT_EQ(parse_script_duration("1y"), 365LL * 86'400'000);
  EXPECT_FALSE(parse_script_duration("").has_value());
  EXPECT_FALSE(parse_script_duration("5").has_value());
  EXPECT_FALSE(parse_script_duration("5m1h").has_value());  // units must come largest first
  EXPECT_FALSE(parse_script_duration("-5m").has_value());
  EXPECT_FALSE(parse_script_duration("5x").has_value());
}

TEST(PromqlScript, LoadClearAndComments) {
  auto commands = parse_script(R"(# a comment
load 5m
  http_requests{job="api"} 0+10x2
  other 1 _ stale

clear
)");
  ASSERT_EQ(commands.size(), 2u);
  const auto& load = command<LoadCommand>(commands, 0);
  EXPECT_EQ(load.line, 2);
  EXPECT_EQ(load.step_ms, 300'000);
  ASSERT_EQ(load.series.size(), 2u);
  EXPECT_EQ(load.series[0].labels.metric_name(), "http_requests");
  EXPECT_EQ(load.series[0].points.size(), 3u);
  EXPECT_TRUE(load.unreadable.empty());
  EXPECT_EQ(command<ClearCommand>(commands, 1).line, 6);
}

TEST(PromqlScript, CommentLineEndsABlock) {
  auto commands = parse_script("load 1m\n  a 1\n# stop\n  b 2\n");
  // promqltest turns comments into blank lines, so `b 2` is a command of its own (and unknown).
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(command<LoadCommand>(commands, 0).series.size(), 1u);
  EXPECT_EQ(command<UnreadableCommand>(commands, 1).line, 4);
}

TEST(PromqlScript, LaterLineForSameSeriesReplaces) {
  auto commands = parse_script("load 1m\n  a 1 2\n  a 5\n");
  const auto& load = command<LoadCommand>(commands, 0);
  ASSERT_EQ(load.series.size(), 1u);
  EXPECT_EQ(load.series[0].points.size(), 1u);
}

TEST(PromqlScript, HistogramSeriesAreUnloadableNotUnreadable) {
  auto commands = parse_script(
      "load 1m\n  floats 1 2\n  hist{a=\"b\"} {{schema:0 sum:1 count:1 buckets:[1]}}x2\n");
  const auto& load = command<LoadCommand>(commands, 0);
  EXPECT_TRUE(load.unreadable.empty());
  ASSERT_EQ(load.series.size(), 1u);
  ASSERT_EQ(load.unloadable.size(), 1u);
  EXPECT_EQ(load.unloadable[0].labels, (store::Labels{{"__name__", "hist"}, {"a", "b"}}));
  EXPECT_EQ(load.unloadable[0].line, 3);
}

TEST(PromqlScript, StartTimestampSeriesAreUnloadable) {
  auto commands = parse_script("load 1m\n  c{t=\"x\"}@st _ -30s-1mx2\n  c{t=\"x\"} 1 2 3\n  d 1\n");
  const auto& load = command<LoadCommand>(commands, 0);
  ASSERT_EQ(load.series.size(), 1u);
  EXPECT_EQ(load.series[0].labels.metric_name(), "d");
  ASSERT_EQ(load.unloadable.size(), 1u);
  EXPECT_EQ(load.unloadable[0].labels.metric_name(), "c");
}

TEST(PromqlScript, WithNhcbLoadsFloatsAndMarksTheHistogram) {
  auto commands = parse_script(
      "load_with_nhcb 1m\n  h_bucket{le=\"1\", j=\"a\"} 1\n  h_bucket{le=\"+Inf\", j=\"a\"} 2\n  h_count{j=\"a\"} 2\n");
  const auto& load = command<LoadCommand>(commands, 0);
  EXPECT_EQ(load.series.size(), 3u);
  ASSERT_EQ(load.unloadable.size(), 1u);
  EXPECT_EQ(load.unloadable[0].labels, (store::Labels{{"__name__", "h"}, {"j", "a"}}));
}

TEST(PromqlScript, MalformedLoadIsUnreadable) {
  auto commands = parse_script("load 1m\n  a{b=} 1\n");
  EXPECT_NE(command<LoadCommand>(commands, 0).unreadable.find("line 2:"), std::string::npos);
  commands = parse_script("load\n  a 1\n");
  EXPECT_FALSE(command<LoadCommand>(commands, 0).unreadable.empty());
}

TEST(PromqlScript, InstantEvalWithVectorResults) {
  auto commands = parse_script(R"(
eval instant at 50m sum by (group) (http_requests)
  {group="production"} 30
  {group="canary"} 70
)");
  const auto& eval = command<EvalCommand>(commands, 0);
  EXPECT_EQ(eval.line, 2);
  EXPECT_FALSE(eval.is_range);
  EXPECT_EQ(eval.expr, "sum by (group) (http_requests)");
  EXPECT_EQ(eval.start_ms, 3'000'000);
  EXPECT_EQ(eval.end_ms, 3'000'000);
  ASSERT_EQ(eval.expected_series.size(), 2u);
  EXPECT_EQ(eval.expected_series[1].labels, (store::Labels{{"group", "canary"}}));
  EXPECT_EQ(eval.expected_series[1].points[0].value, 70);
  EXPECT_EQ(eval.expected_series[1].position, 2);
  EXPECT_TRUE(eval.unreadable.empty());
}

TEST(PromqlScript, RangeEvalWithSeriesNotation) {
  auto commands = parse_script("eval range from 0 to 10m step 5m rate(x[5m])\n  {a=\"b\"} 1 _ 2x0\n");
  const auto& eval = command<EvalCommand>(commands, 0);
  EXPECT_TRUE(eval.is_range);
  EXPECT_EQ(eval.start_ms, 0);
  EXPECT_EQ(eval.end_ms, 600'000);
  EXPECT_EQ(eval.step_ms, 300'000);
  EXPECT_EQ(eval.expr, "rate(x[5m])");
  ASSERT_EQ(eval.expected_series.size(), 1u);
  EXPECT_EQ(eval.expected_series[0].points.size(), 3u);
}

TEST(PromqlScript, ScalarResultEndsTheBlock) {
  auto commands = parse_script("eval instant at 0 1 + 1\n  2\n");
  const auto& eval = command<EvalCommand>(commands, 0);
  ASSERT_TRUE(eval.expected_scalar.has_value());
  EXPECT_EQ(*eval.expected_scalar, 2);
  commands = parse_script("eval instant at 0 NaN\n  NaN\n");
  EXPECT_TRUE(std::isnan(*command<EvalCommand>(commands, 0).expected_scalar));
  commands = parse_script("eval instant at 0 x\n  0x10\n");
  EXPECT_EQ(*command<EvalCommand>(commands, 0).expected_scalar, 16);  // Go integer literal rules
}

TEST(PromqlScript, ExpectLines) {
  auto commands = parse_script(R"(eval instant at 1m foo
  expect fail msg:vector cannot contain metrics with the same labelset

eval instant at 1m bar
  expect fail regex: conflicting .*

eval instant at 1m baz
  expect ordered
  expect warn msg: PromQL warning: something: odd
  expect no_info
  {a="1"} 1
  {a="2"} 2
)");
  ASSERT_EQ(commands.size(), 3u);
  const auto& fail_msg = command<EvalCommand>(commands, 0);
  ASSERT_EQ(fail_msg.expectations.size(), 1u);
  EXPECT_EQ(fail_msg.expectations[0].kind, EK::kFail);
  EXPECT_EQ(fail_msg.expectations[0].match.kind, MessageMatch::Kind::kExact);
  EXPECT_EQ(fail_msg.expectations[0].match.text, "vector cannot contain metrics with the same labelset");
  const auto& fail_regex = command<EvalCommand>(commands, 1);
  EXPECT_EQ(fail_regex.expectations[0].match.kind, MessageMatch::Kind::kRegex);
  EXPECT_EQ(fail_regex.expectations[0].match.text, "conflicting .*");
  const auto& ordered = command<EvalCommand>(commands, 2);
  EXPECT_TRUE(ordered.ordered());
  EXPECT_TRUE(ordered.expects(EK::kNoInfo));
  EXPECT_FALSE(ordered.expects_failure());
  auto warn = std::ranges::find(ordered.expectations, EK::kWarn, &Expectation::kind);
  ASSERT_NE(warn, ordered.expectations.end());
  EXPECT_EQ(warn->match.text, "PromQL warning: something: odd");
  ASSERT_EQ(ordered.expected_series.size(), 2u);
  EXPECT_EQ(ordered.expected_series[0].position, 1);  // expect lines do not take positions
  EXPECT_EQ(ordered.expected_series[1].position, 2);
}

TEST(PromqlScript, LegacyEvalSpellings) {
  auto commands = parse_script(R"(eval_fail instant at 0 x
  expected_fail_message boom

eval_ordered instant at 0 y

eval_warn range from 0 to 1m step 1m z

eval_info instant at 0 w
)");
  ASSERT_EQ(commands.size(), 4u);
  const auto& fail = command<EvalCommand>(commands, 0);
  EXPECT_TRUE(fail.expects_failure());
  EXPECT_TRUE(std::ranges::any_of(fail.expectations, [](const auto& e) {
    return e.kind == EK::kFail && e.match.kind == MessageMatch::Kind::kExact && e.match.text == "boom";
  }));
  EXPECT_TRUE(command<EvalCommand>(commands, 1).ordered());
  EXPECT_TRUE(command<EvalCommand>(commands, 2).legacy_warn);
  EXPECT_TRUE(command<EvalCommand>(commands, 2).is_range);
  EXPECT_TRUE(command<EvalCommand>(commands, 3).legacy_info);
}

TEST(PromqlScript, ExpectRangeVectorAndString) {
  auto commands = parse_script(R"(eval instant at 1m some_metric[50s]
  expect range vector from 10s to 1m step 10s
  some_metric{env="a"} 1 2 3 4 5 6

eval instant at 0 "Foo"
	expect string `Foo`
)");
  const auto& range_vector = command<EvalCommand>(commands, 0);
  EXPECT_TRUE(range_vector.expect_range_vector);
  EXPECT_TRUE(range_vector.exclude_from_range_check);
  EXPECT_EQ(range_vector.start_ms, 10'000);
  EXPECT_EQ(range_vector.end_ms, 60'000);
  EXPECT_EQ(range_vector.step_ms, 10'000);
  EXPECT_TRUE(range_vector.unreadable.empty()) << range_vector.unreadable;
  const auto& string = command<EvalCommand>(commands, 1);
  EXPECT_EQ(string.expected_string, "Foo");
  EXPECT_TRUE(string.exclude_from_range_check);
}

TEST(PromqlScript, UnreadableEvalsKeepTheirLineAndReason) {
  auto commands = parse_script(R"(eval instant at 0 x
  x 1 2

eval instant at 0 h
  {} {{schema:0 sum:1 count:1}}

eval instant at 5q x

eval sideways at 0 x

eval instant at 0 x
  expect info
  expect no_info
)");
  ASSERT_EQ(commands.size(), 5u);
  EXPECT_NE(command<EvalCommand>(commands, 0).unreadable.find("expect range vector"), std::string::npos);
  EXPECT_TRUE(command<EvalCommand>(commands, 1).unreadable.starts_with("line 5: unsupported"))
      << command<EvalCommand>(commands, 1).unreadable;
  EXPECT_NE(command<EvalCommand>(commands, 2).unreadable.find("5q"), std::string::npos);
  EXPECT_EQ(command<EvalCommand>(commands, 3).line, 9);
  EXPECT_FALSE(command<EvalCommand>(commands, 3).unreadable.empty());
  EXPECT_FALSE(command<EvalCommand>(commands, 4).unreadable.empty());
}

TEST(PromqlScript, UnknownCommandSkipsItsBlock) {
  auto commands = parse_script("frobnicate 1m\n  a 1\n\nclear\n");
  ASSERT_EQ(commands.size(), 2u);
  const auto& unknown = command<UnreadableCommand>(commands, 0);
  EXPECT_EQ(unknown.line, 1);
  EXPECT_EQ(unknown.text, "frobnicate 1m");
  EXPECT_EQ(command<ClearCommand>(commands, 1).line, 4);
}

TEST(PromqlScript, ReadsEveryShippedScript) {
  // Every file of the shared conformance data must at least be read into commands without a crash,
  // and nearly all of its evals must be readable.
  for (const char* name : {"aggregators.test", "functions.test", "operators.test", "staleness.test"}) {
    std::string path = std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/conformance/promql/" + name;
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) GTEST_SKIP() << "no conformance data at " << path;
    std::string text;
    char buf[65536];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
    auto commands = parse_script(text);
    int evals = 0;
    for (const auto& c : commands) {
      EXPECT_FALSE(std::holds_alternative<UnreadableCommand>(c))
          << name << ":" << std::get<UnreadableCommand>(c).line << ": " << std::get<UnreadableCommand>(c).reason;
      if (const auto* e = std::get_if<EvalCommand>(&c)) {
        ++evals;
        if (!e->unreadable.empty()) {
          EXPECT_TRUE(e->unreadable.find("unsupported") != std::string::npos) << name << ":" << e->line << ": " << e->unreadable;
        }
      }
    }
    EXPECT_GT(evals, 10) << name;
  }
}

}  // namespace
}  // namespace gpuscope::conformance
