#include "result_comparison.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gpuscope::conformance {
namespace {

const EvalCommand& only_eval(const std::vector<ScriptCommand>& commands) {
  EXPECT_EQ(commands.size(), 1u);
  return std::get<EvalCommand>(commands.at(0));
}

TEST(AlmostEqual, PrometheusRule) {
  EXPECT_TRUE(almost_equal(1.0, 1.0 + 1e-9));
  EXPECT_FALSE(almost_equal(1.0, 1.0 + 1e-5));
  EXPECT_TRUE(almost_equal(1e12, 1e12 + 1));
  EXPECT_TRUE(almost_equal(std::nan(""), store::stale_marker()));
  EXPECT_FALSE(almost_equal(std::nan(""), 0));
  EXPECT_FALSE(almost_equal(0, 1e-300));  // next to zero the bound is absolute and tiny
  EXPECT_TRUE(almost_equal(0, 0.0 * -1));
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(almost_equal(inf, inf));
  EXPECT_FALSE(almost_equal(inf, -inf));
  EXPECT_FALSE(almost_equal(inf, 1e308));
}

TEST(MessageMatch, ExactRegexAny) {
  EXPECT_TRUE(message_matches({MessageMatch::Kind::kAny, ""}, "whatever"));
  EXPECT_TRUE(message_matches({MessageMatch::Kind::kExact, "a b"}, "a b"));
  EXPECT_FALSE(message_matches({MessageMatch::Kind::kExact, "a b"}, "a b "));
  EXPECT_TRUE(message_matches({MessageMatch::Kind::kRegex, "conflict.*label"}, "found conflicting label x"));
  EXPECT_FALSE(message_matches({MessageMatch::Kind::kRegex, "^label"}, "conflicting label"));
}

TEST(CompareResult, VectorIgnoresOrderUnlessOrdered) {
  auto commands = parse_script("eval instant at 0 x\n  {a=\"1\"} 1\n  {a=\"2\"} 2\n");
  const auto& eval = only_eval(commands);
  promql::Vector reversed{{store::Labels{{"a", "2"}}, 0, 2}, {store::Labels{{"a", "1"}}, 0, 1}};
  EXPECT_TRUE(compare_result(eval, reversed).has_value());

  auto ordered_commands = parse_script("eval instant at 0 x\n  expect ordered\n  {a=\"1\"} 1\n  {a=\"2\"} 2\n");
  auto mismatch = compare_result(only_eval(ordered_commands), reversed);
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_NE(mismatch.error().find("position"), std::string::npos) << mismatch.error();
}

TEST(CompareResult, VectorValueLabelsAndMissingSeries) {
  auto commands = parse_script("eval instant at 0 x\n  x{a=\"1\"} 1\n  x{a=\"2\"} NaN\n");
  const auto& eval = only_eval(commands);
  store::Labels one{{"__name__", "x"}, {"a", "1"}};
  store::Labels two{{"__name__", "x"}, {"a", "2"}};
  EXPECT_TRUE(compare_result(eval, promql::Vector{{one, 0, 1 + 1e-9}, {two, 0, std::nan("")}}).has_value());
  EXPECT_FALSE(compare_result(eval, promql::Vector{{one, 0, 1.1}, {two, 0, std::nan("")}}).has_value());
  auto missing = compare_result(eval, promql::Vector{{one, 0, 1}});
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().find("missing"), std::string::npos);
  auto extra = compare_result(eval, promql::Vector{{one, 0, 1}, {two, 0, std::nan("")}, {store::Labels{{"a", "1"}}, 0, 1}});
  ASSERT_FALSE(extra.has_value());
  EXPECT_NE(extra.error().find("unexpected series {a=\"1\"}"), std::string::npos) << extra.error();
}

TEST(CompareResult, NoExpectedLinesMeansEmpty) {
  auto commands = parse_script("eval instant at 0 x\n");
  const auto& eval = only_eval(commands);
  EXPECT_TRUE(compare_result(eval, promql::Vector{}).has_value());
  EXPECT_FALSE(compare_result(eval, promql::Vector{{store::Labels{{"a", "1"}}, 0, 1}}).has_value());
  EXPECT_FALSE(compare_result(eval, promql::Scalar{0, 1}).has_value());
  EXPECT_TRUE(compare_result(eval, promql::Matrix{}).has_value());
}

TEST(CompareResult, Scalars) {
  auto commands = parse_script("eval instant at 0 1\n  1\n");
  const auto& eval = only_eval(commands);
  EXPECT_TRUE(compare_result(eval, promql::Scalar{0, 1}).has_value());
  EXPECT_FALSE(compare_result(eval, promql::Scalar{0, 2}).has_value());
  EXPECT_FALSE(compare_result(eval, promql::Vector{{store::Labels{}, 0, 1}}).has_value());
}

TEST(CompareResult, StringsCompareExactly) {
  auto commands = parse_script("eval instant at 0 \"a\"\n  expect string \"a\"\n");
  EXPECT_TRUE(compare_result(only_eval(commands), promql::String{0, "a"}).has_value());
  EXPECT_FALSE(compare_result(only_eval(commands), promql::String{0, "b"}).has_value());
}

TEST(CompareResult, RangeSeriesCompareEveryPointOnTheGrid) {
  auto commands = parse_script("eval range from 0 to 2m step 1m x\n  x 1 _ 3\n");
  const auto& eval = only_eval(commands);
  store::Labels x{{"__name__", "x"}};
  EXPECT_TRUE(compare_result(eval, promql::Matrix{{x, {{0, 1}, {120'000, 3}}}}).has_value());
  EXPECT_FALSE(compare_result(eval, promql::Matrix{{x, {{0, 1}, {60'000, 2}, {120'000, 3}}}}).has_value());
  EXPECT_FALSE(compare_result(eval, promql::Matrix{{x, {{0, 1}, {60'000, 3}}}}).has_value());  // wrong time
  EXPECT_FALSE(compare_result(eval, promql::Matrix{{x, {{0, 1}, {120'000, 4}}}}).has_value());

  auto too_long = parse_script("eval range from 0 to 1m step 1m x\n  x 1 2 3\n");
  EXPECT_FALSE(compare_result(only_eval(too_long), promql::Matrix{{x, {{0, 1}, {60'000, 2}}}}).has_value());
}

TEST(CompareResult, UnsortedMatrixFails) {
  auto commands = parse_script("eval range from 0 to 0 step 1m x\n  {a=\"1\"} 1\n  {a=\"2\"} 2\n");
  promql::Matrix unsorted{{store::Labels{{"a", "2"}}, {{0, 2}}}, {store::Labels{{"a", "1"}}, {{0, 1}}}};
  auto result = compare_result(only_eval(commands), unsorted);
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().find("sorted"), std::string::npos);
}

TEST(CheckAnnotations, ExpectedAndUnexpected) {
  auto warn = parse_script("eval instant at 0 x\n  expect warn regex: odd\n");
  promql::QueryResult result{promql::Vector{}, {"PromQL warning: odd thing"}, {}};
  EXPECT_TRUE(check_annotations(only_eval(warn), result).has_value());
  result.warnings.push_back("PromQL warning: other");
  EXPECT_FALSE(check_annotations(only_eval(warn), result).has_value());  // every warning needs a match

  auto no_warn = parse_script("eval instant at 0 x\n  expect no_warn\n");
  EXPECT_FALSE(check_annotations(only_eval(no_warn), result).has_value());
  auto unconstrained = parse_script("eval instant at 0 x\n");
  EXPECT_TRUE(check_annotations(only_eval(unconstrained), result).has_value());

  auto info = parse_script("eval instant at 0 x\n  expect info\n");
  EXPECT_FALSE(check_annotations(only_eval(info), result).has_value());
  result.infos.push_back("PromQL info: metric might not be a counter");
  EXPECT_TRUE(check_annotations(only_eval(info), result).has_value());
}

TEST(CheckFailure, MessageMustMatchWhenGiven) {
  auto any = parse_script("eval instant at 0 x\n  expect fail\n");
  EXPECT_TRUE(check_failure(only_eval(any), "anything").has_value());
  auto exact = parse_script("eval instant at 0 x\n  expect fail msg: bad thing\n");
  EXPECT_TRUE(check_failure(only_eval(exact), "bad thing").has_value());
  EXPECT_FALSE(check_failure(only_eval(exact), "other thing").has_value());
}

}  // namespace
}  // namespace gpuscope::conformance
