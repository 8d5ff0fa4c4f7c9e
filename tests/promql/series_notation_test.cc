#include "promql/series_notation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gpuscope::promql {
namespace {

using Kind = SeriesPoint::Kind;

std::vector<double> values_of(const SeriesDescription& d) {
  std::vector<double> out;
  for (const auto& p : d.points) out.push_back(p.kind == Kind::kValue ? p.value : -999);
  return out;
}

TEST(SeriesNotation, NameLabelsAndPlainValues) {
  auto d = parse_series_description(R"(http_requests{job="api", instance="0"} 1 2 3)");
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_EQ(d->labels, (store::Labels{{"__name__", "http_requests"}, {"job", "api"}, {"instance", "0"}}));
  EXPECT_EQ(values_of(*d), (std::vector<double>{1, 2, 3}));
}

TEST(SeriesNotation, ExpandsIncrementsAndRepeats) {
  auto d = parse_series_description("m 1+2x3 5x2 -1-1x3 0.5+.25x1");
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_EQ(values_of(*d), (std::vector<double>{1, 3, 5, 7, 5, 5, 5, -1, -2, -3, -4, 0.5, 0.75}));
}

TEST(SeriesNotation, MissingAndStalePoints) {
  auto d = parse_series_description("m 1 _ stale _x3 2");
  ASSERT_TRUE(d.has_value()) << d.error();
  ASSERT_EQ(d->points.size(), 7u);
  EXPECT_EQ(d->points[1].kind, Kind::kMissing);
  EXPECT_EQ(d->points[2].kind, Kind::kStale);
  for (int i = 3; i < 6; ++i) EXPECT_EQ(d->points[i].kind, Kind::kMissing);
  EXPECT_EQ(d->points[6], (SeriesPoint{Kind::kValue, 2}));
}

TEST(SeriesNotation, SpecialFloatsAndSigns) {
  auto d = parse_series_description("m Inf -Inf NaN +5 -inf nan 1e3 -2.5e-1 Infx1");
  // "Infx1" is one identifier in Prometheus's lexer, so it is not a repeat.
  ASSERT_FALSE(d.has_value());
  d = parse_series_description("m Inf -Inf NaN +5 -inf 1e3 -2.5e-1 NaNx1");
  ASSERT_FALSE(d.has_value());
  d = parse_series_description("m Inf -Inf NaN +5 -inf 1e3 -2.5e-1");
  ASSERT_TRUE(d.has_value()) << d.error();
  auto v = values_of(*d);
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(v[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[1], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(v[3], 5);
  EXPECT_EQ(v[4], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[5], 1000);
  EXPECT_EQ(v[6], -0.25);
}

TEST(SeriesNotation, ZeroRepeatCounts) {
  auto d = parse_series_description("m 7x0 _x0 1");
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_EQ(values_of(*d), (std::vector<double>{7, 1}));
}

TEST(SeriesNotation, LabelsOnlyForms) {
  auto d = parse_series_description(R"({__name__="x", a="b"} 1)");
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_EQ(d->labels, (store::Labels{{"__name__", "x"}, {"a", "b"}}));

  d = parse_series_description(R"({a="b",} 1)");  // trailing comma
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_EQ(d->labels, (store::Labels{{"a", "b"}}));

  d = parse_series_description("{} 3");
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_TRUE(d->labels.empty());

  d = parse_series_description(R"({"my.metric", "a.b"="c"} 1)");  // Prometheus 3 quoted names
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_EQ(d->labels, (store::Labels{{"__name__", "my.metric"}, {"a.b", "c"}}));
}

TEST(SeriesNotation, NameWithoutValues) {
  auto d = parse_series_description("up");
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_EQ(d->labels.metric_name(), "up");
  EXPECT_TRUE(d->points.empty());
}

TEST(SeriesNotation, KeywordsAreValidMetricNames) {
  auto d = parse_series_description("sum{by=\"x\"} 1");
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_EQ(d->labels.metric_name(), "sum");
}

TEST(SeriesNotation, GoStringEscapes) {
  auto d = parse_series_description(R"(m{a="x\"y\\z\n", b='it\'s', c=`raw\n`, d="\u00e9\x41\101"} 1)");
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_EQ(d->labels.get("a"), "x\"y\\z\n");
  EXPECT_EQ(d->labels.get("b"), "it's");
  EXPECT_EQ(d->labels.get("c"), "raw\\n");
  EXPECT_EQ(d->labels.get("d"), "\xc3\xa9" "AA");
}

TEST(SeriesNotation, HistogramsAreUnsupported) {
  auto d = parse_series_description("h {{schema:1 sum:3 count:22 buckets:[5 10 7]}}");
  ASSERT_FALSE(d.has_value());
  EXPECT_TRUE(d.error().starts_with("column 3: unsupported")) << d.error();
}

TEST(SeriesNotation, ErrorsNameTheColumn) {
  struct Case {
    const char* line;
    const char* error;
  };
  for (const auto& c : std::initializer_list<Case>{
           {"m 1 2y", "column 6:"},
           {"m 1+2", "column 6: expected 'x<count>'"},
           {"m 1x", "column 4: expected a repeat count"},
           {R"(m{a="b" 1)", "column 9:"},
           {R"(m{a=b} 1)", "column 5: expected a quoted value"},
           {R"(m{a="b} 1)", "column 5: unterminated quoted string"},
           {R"(m{a="1",a="2"} 1)", "column 9: label \"a\" given twice"},
           {R"(m{a="\q"} 1)", "column 5: unknown escape sequence"},
           {R"(m{a="\x4"} 1)", "column 5:"},
           {"m foo", "column 3: invalid series value \"foo\""},
           {"m stalex2", "column 3: invalid series value"},
           {"1 2", "column 1: expected a metric name"},
       }) {
    auto d = parse_series_description(c.line);
    ASSERT_FALSE(d.has_value()) << c.line;
    EXPECT_TRUE(d.error().starts_with(c.error)) << c.line << " -> " << d.error();
  }
}

TEST(SeriesNotation, LabelsAlone) {
  auto labels = parse_series_labels(R"(  up{job="a"} )");
  ASSERT_TRUE(labels.has_value()) << labels.error();
  EXPECT_EQ(*labels, (store::Labels{{"__name__", "up"}, {"job", "a"}}));
  EXPECT_FALSE(parse_series_labels(R"(up{job="a"} 1)").has_value());
}

TEST(SeriesNotation, StringLiteralAlone) {
  EXPECT_EQ(unquote_string_literal(R"("a\tb")"), "a\tb");
  EXPECT_EQ(unquote_string_literal("`Foo`"), "Foo");
  EXPECT_EQ(unquote_string_literal(R"("\u00e9\x41\101\"")"), "\u00e9AA\"");
  EXPECT_EQ(unquote_string_literal(R"(" Foo ")"), " Foo ");
  EXPECT_FALSE(unquote_string_literal("Foo").has_value());
  EXPECT_FALSE(unquote_string_literal(R"("a" b)").has_value());
}

TEST(SeriesNotation, ExpandsToSamples) {
  auto d = parse_series_description("m 1 _ stale 4");
  ASSERT_TRUE(d.has_value()) << d.error();
  auto samples = expand_samples(d->points, 1000, 60'000);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].t_ms, 1000);
  EXPECT_EQ(samples[0].value, 1);
  EXPECT_EQ(samples[1].t_ms, 121'000);
  EXPECT_TRUE(store::is_stale_marker(samples[1].value));
  EXPECT_EQ(samples[2].t_ms, 181'000);
  EXPECT_EQ(samples[2].value, 4);
}

}  // namespace
}  // namespace gpuscope::promql
