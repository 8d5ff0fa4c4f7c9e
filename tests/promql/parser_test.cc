#include "promql/parser.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "promql/functions.h"

namespace gpuscope::promql {
namespace {

ExprPtr parse_ok(std::string_view q) {
  auto r = parse_expr(q);
  EXPECT_TRUE(r.has_value()) << q << " -> " << (r ? "" : r.error().to_string(q));
  return r ? std::move(*r) : nullptr;
}

// Prometheus's full error text for a query that must fail.
std::string error_of(std::string_view q) {
  auto r = parse_expr(q);
  if (r) return "<parsed: " + to_string(**r) + ">";
  return r.error().to_string(q);
}

std::string printed(std::string_view q) {
  auto r = parse_expr(q);
  if (!r) return "<error: " + r.error().to_string(q) + ">";
  return to_string(**r);
}

TEST(PromqlParser, NumberLiterals) {
  struct Case {
    const char* in;
    double value;
  };
  const Case cases[] = {{"1", 1},       {"1.5", 1.5},   {".5", 0.5},     {"5.", 5},     {"0x1F", 31},    {"0X1f", 31},
                        {"1e3", 1000},  {"1e-3", 0.001}, {"1E+2", 100},  {"1_000", 1000}, {"010", 8},    {"-1", -1},
                        {"+2.5", 2.5},  {"- - 1", 1},   {"0x_1F", 31}};
  for (const auto& c : cases) {
    auto e = parse_ok(c.in);
    ASSERT_TRUE(e) << c.in;
    const auto* n = e->as<NumberLiteral>();
    ASSERT_NE(n, nullptr) << c.in;
    EXPECT_DOUBLE_EQ(n->value, c.value) << c.in;
  }
  for (const char* in : {"Inf", "inf", "+Inf", "INF"}) EXPECT_EQ(parse_ok(in)->as<NumberLiteral>()->value, INFINITY) << in;
  EXPECT_EQ(parse_ok("-Inf")->as<NumberLiteral>()->value, -INFINITY);
  EXPECT_TRUE(std::isnan(parse_ok("NaN")->as<NumberLiteral>()->value));
  EXPECT_TRUE(std::isnan(parse_ok("nAn")->as<NumberLiteral>()->value));
  // A duration standing alone is its length in seconds (Prometheus 3).
  EXPECT_DOUBLE_EQ(parse_ok("5m")->as<NumberLiteral>()->value, 300);
  EXPECT_DOUBLE_EQ(parse_ok("1h30m")->as<NumberLiteral>()->value, 5400);
  // The literal's position covers the folded sign.
  auto neg = parse_ok(" -1");
  EXPECT_EQ(neg->pos.start, 1u);
  EXPECT_EQ(neg->pos.end, 3u);
  EXPECT_EQ(error_of("1e"), "1:1: parse error: bad number or duration syntax: \"1e\"");
  EXPECT_EQ(error_of("1x"), "1:1: parse error: bad number or duration syntax: \"1\"");
  EXPECT_EQ(error_of("1e400"), "1:1: parse error: error parsing number: strconv.ParseFloat: parsing \"1e400\": value out of range");
}

TEST(PromqlParser, StringLiterals) {
  auto value_of = [](std::string_view q) {
    auto e = parse_ok(q);
    const auto* s = e ? e->as<StringLiteral>() : nullptr;
    return s ? s->value : std::string("<not a string>");
  };
  EXPECT_EQ(value_of(R"("abc")"), "abc");
  EXPECT_EQ(value_of(R"('abc')"), "abc");
  EXPECT_EQ(value_of("`a\\nb`"), "a\\nb");
  EXPECT_EQ(value_of(R"("a\nb\t\"q\"\\")"), "a\nb\t\"q\"\\");
  EXPECT_EQ(value_of(R"('it\'s')"), "it's");
  EXPECT_EQ(value_of(R"("\x41\101\u00e9\U0001F600")"), "AA\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(value_of("\"\xc3\xa9t\xc3\xa9\""), "\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(error_of(R"("\q")"), "1:1: parse error: unknown escape sequence U+0071 'q'");
  EXPECT_EQ(error_of(R"("abc)"), "1:1: parse error: unterminated quoted string");
  EXPECT_EQ(error_of("\"a\nb\""), "1:1: parse error: unterminated quoted string");
  EXPECT_EQ(error_of("`abc"), "1:1: parse error: unterminated raw string");
  EXPECT_EQ(error_of(R"("\'")"), "1:1: parse error: unknown escape sequence U+0027 '''");
  EXPECT_EQ(error_of(R"("\xZZ")"), "1:1: parse error: illegal character U+005A 'Z' in escape sequence");
  EXPECT_EQ(error_of(R"("\uD800")"), "1:1: parse error: escape sequence is an invalid Unicode code point");
  EXPECT_EQ(error_of("\"\xff\""), "1:1: parse error: invalid UTF-8 rune");
  EXPECT_EQ(printed(R"("a\"b\n")"), R"("a\"b\n")");
}

TEST(PromqlParser, VectorSelectors) {
  auto e = parse_ok(R"(http_requests_total{job="api", code=~"5..", method!="GET", path!~"/health.*",})");
  ASSERT_TRUE(e);
  const auto* vs = e->as<VectorSelector>();
  ASSERT_NE(vs, nullptr);
  EXPECT_EQ(vs->name, "http_requests_total");
  ASSERT_EQ(vs->matchers.size(), 5u);
  EXPECT_EQ(vs->matchers[0].op(), store::LabelMatcher::Op::kEqual);
  EXPECT_EQ(vs->matchers[1].op(), store::LabelMatcher::Op::kRegex);
  EXPECT_TRUE(vs->matchers[1].matches("503"));
  EXPECT_FALSE(vs->matchers[1].matches("5030"));  // anchored
  EXPECT_EQ(vs->matchers[2].op(), store::LabelMatcher::Op::kNotEqual);
  EXPECT_EQ(vs->matchers[3].op(), store::LabelMatcher::Op::kNotRegex);
  EXPECT_EQ(vs->matchers[4].name(), "__name__");  // the written name comes last, as in Prometheus
  EXPECT_EQ(vs->matchers[4].value(), "http_requests_total");
  EXPECT_EQ(e->pos.start, 0u);
  EXPECT_EQ(e->pos.end, std::string_view(R"(http_requests_total{job="api", code=~"5..", method!="GET", path!~"/health.*",})").size());

  EXPECT_EQ(printed(R"(x{b="1",a="2"})"), R"(x{a="2",b="1"})");
  EXPECT_EQ(printed(R"({__name__="up"})"), R"({__name__="up"})");
  EXPECT_EQ(printed(R"({__name__=~"up|down", job="x"})"), R"({__name__=~"up|down",job="x"})");
  EXPECT_EQ(printed("job:rate:5m"), "job:rate:5m");
  EXPECT_EQ(printed(R"(x{by="1",on!="2", offset="3"})"), R"(x{by="1",offset="3",on!="2"})");
  // Keywords that cannot start anything else are metric names there.
  EXPECT_EQ(printed("sum{}"), "sum");
  EXPECT_EQ(printed("by + 1"), "by + 1");
  EXPECT_EQ(printed("offset"), "offset");
  EXPECT_EQ(printed("SUM(X)"), "sum(X)");
  // Prometheus 3: quoted metric and label names.
  auto utf8 = parse_ok(R"({"my.metric", "a.b"="c"})");
  ASSERT_TRUE(utf8);
  const auto* uvs = utf8->as<VectorSelector>();
  ASSERT_EQ(uvs->matchers.size(), 2u);
  EXPECT_EQ(uvs->matchers[0].name(), "__name__");
  EXPECT_EQ(uvs->matchers[0].value(), "my.metric");
  EXPECT_EQ(uvs->matchers[1].name(), "a.b");
  EXPECT_EQ(printed(R"({"my.metric", "a.b"="c"})"), R"({"a.b"="c",__name__="my.metric"})");
  EXPECT_EQ(printed(R"(x{a='b\'c'})"), R"(x{a="b'c"})");
  EXPECT_EQ(printed("x{a=`b\\c`}"), R"(x{a="b\\c"})");
  EXPECT_EQ(printed(R"(x{a="\t\x41"})"), R"(x{a="\tA"})");
  EXPECT_EQ(printed("x # trailing comment\n"), "x");
  EXPECT_EQ(printed("x{ # comment\n a=\"1\"}"), R"(x{a="1"})");
}

TEST(PromqlParser, SelectorErrors) {
  EXPECT_EQ(error_of(R"({job=~".*"})"), "1:1: parse error: vector selector must contain at least one non-empty matcher");
  EXPECT_EQ(error_of("{}"), "1:1: parse error: vector selector must contain at least one non-empty matcher");
  EXPECT_EQ(error_of(R"(foo{__name__="bar"})"), R"(1:1: parse error: metric name must not be set twice: "foo" or "bar")");
  EXPECT_EQ(error_of(R"(x{a="1" b="2"})"), R"(1:9: parse error: unexpected identifier "b" in label matching, expected "," or "}")");
  EXPECT_EQ(error_of("x{a=}"), R"(1:5: parse error: unexpected "}" in label matching, expected string)");
  EXPECT_EQ(error_of(R"(x{a="1")"), "1:8: parse error: unexpected end of input inside braces");
  EXPECT_EQ(error_of(R"(x{a"b"})"), R"(1:4: parse error: unexpected string "\"b\"" in label matching, expected label matching operator)");
  EXPECT_EQ(error_of(R"(x{1="2"})"), R"(1:3: parse error: unexpected character inside braces: '1')");
  EXPECT_EQ(error_of(R"(x{a!"2"})"), R"(1:4: parse error: unexpected character after '!' inside braces: '"')");
  EXPECT_EQ(error_of(R"(x{a="1",,})"), R"(1:9: parse error: unexpected "," in label matching, expected identifier or "}")");
  EXPECT_EQ(error_of(R"(x{{a="1"})"), "1:3: parse error: unexpected left brace '{'");
  EXPECT_EQ(error_of(R"(x{a=~"("})"), "1:3: parse error: error parsing regexp: missing closing ): `(`");
  EXPECT_EQ(error_of(R"(x{a=~"a**"})"), "1:3: parse error: error parsing regexp: invalid nested repetition operator: `**`");
  EXPECT_EQ(error_of("x § y"), "1:3: parse error: unexpected character: '§'");
  EXPECT_EQ(error_of("x = 1"), "1:3: parse error: unexpected \"=\"");
  EXPECT_EQ(error_of("x !x"), "1:3: parse error: unexpected character after '!': 'x'");
  EXPECT_EQ(error_of("x =~ 1"), "1:3: parse error: unexpected character after '=': '~'");
}

TEST(PromqlParser, MatrixSelectorsAndDurations) {
  auto e = parse_ok("x[5m]");
  ASSERT_TRUE(e);
  const auto* m = e->as<MatrixSelector>();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->range_ms, 300000);
  EXPECT_NE(m->vector_selector->as<VectorSelector>(), nullptr);
  EXPECT_EQ(e->type(), ValueType::kMatrix);
  EXPECT_EQ(printed("x[7d]"), "x[1w]");
  EXPECT_EQ(printed("x[90s]"), "x[1m30s]");
  EXPECT_EQ(printed("x[26h]"), "x[1d2h]");
  EXPECT_EQ(printed("x[90d]"), "x[90d]");
  EXPECT_EQ(printed("x[365d]"), "x[1y]");
  EXPECT_EQ(printed("x[1500ms]"), "x[1s500ms]");
  EXPECT_EQ(printed("x[300]"), "x[5m]");  // a number is seconds (Prometheus 3)
  EXPECT_EQ(printed("x[1.5]"), "x[1s500ms]");
  EXPECT_EQ(printed("x[ 5m ]"), "x[5m]");
  // Constant duration arithmetic (Prometheus 3's experimental duration expressions).
  EXPECT_EQ(printed("x[26m+4m]"), "x[30m]");
  EXPECT_EQ(printed("x[60*30]"), "x[30m]");
  EXPECT_EQ(printed("x[2m*(10+5)]"), "x[30m]");
  EXPECT_EQ(printed("x[1h30m % 1h]"), "x[30m]");
  EXPECT_EQ(printed("x[-5m+35m]"), "x[30m]");
  EXPECT_EQ(printed("x[1h/2]"), "x[30m]");
  EXPECT_EQ(error_of("x[1.5h]"), R"(1:3: parse error: unknown unit "." in duration "1.5h")");
  EXPECT_EQ(error_of("x[0s]"), "1:3: parse error: duration must be greater than 0");
  EXPECT_EQ(error_of("x[5m"), "1:5: parse error: unclosed left bracket");
  EXPECT_EQ(error_of("x[1x]"), R"(1:3: parse error: bad number or duration syntax: "1")");
  EXPECT_EQ(error_of("x[5m x]"), R"(1:6: parse error: unexpected identifier "x" in subquery or range, expected ":" or "]")");
  EXPECT_EQ(error_of("x[]"), R"(1:3: parse error: unexpected "]" in subquery selector, expected number or duration)");
  EXPECT_EQ(error_of("x[step()]"), "1:3: parse error: step() in duration expressions is not supported");
  EXPECT_EQ(error_of("x]"), "1:2: parse error: unexpected right bracket ']'");
  EXPECT_EQ(error_of("x[5m[1m]]"), "1:5: parse error: unexpected left bracket '['");
  EXPECT_EQ(error_of("rate(x[5m])[5m]"), "1:12: parse error: ranges only allowed for vector selectors");
  EXPECT_EQ(error_of("(x)[5m]"), "1:4: parse error: ranges only allowed for vector selectors");
  EXPECT_EQ(error_of("x offset 1m [5m]"), "1:13: parse error: no offset modifiers allowed before range");
  EXPECT_EQ(error_of("x @ 10 [5m]"), "1:8: parse error: no @ modifiers allowed before range");
}

TEST(PromqlParser, ParseDuration) {
  EXPECT_EQ(parse_duration("5m"), 300000);
  EXPECT_EQ(parse_duration("1h30m"), 5400000);
  EXPECT_EQ(parse_duration("250ms"), 250);
  EXPECT_EQ(parse_duration("1y2w3d4h5m6s7ms"), ((((365LL + 14 + 3) * 24 + 4) * 60 + 5) * 60 + 6) * 1000 + 7);
  EXPECT_EQ(parse_duration("0"), 0);
  EXPECT_EQ(parse_duration("0s"), 0);
  EXPECT_EQ(parse_duration("").error(), "empty duration string");
  EXPECT_EQ(parse_duration("1d1w").error(), R"(not a valid duration string: "1d1w")");
  EXPECT_EQ(parse_duration("1m1m").error(), R"(not a valid duration string: "1m1m")");
  EXPECT_EQ(parse_duration("1hs").error(), R"(unknown unit "hs" in duration "1hs")");
  EXPECT_EQ(parse_duration("1.5h").error(), R"(unknown unit "." in duration "1.5h")");
  EXPECT_EQ(parse_duration("m").error(), R"(not a valid duration string: "m")");
  EXPECT_EQ(parse_duration("5").error(), R"(not a valid duration string: "5")");
  EXPECT_EQ(parse_duration("1000000y").error(), "duration out of range");
}

// Ranges and offsets in milliseconds that are not whole seconds are exact: 1.001 s times 1000 is
// 1000.9999999999999 in floating point, which once truncated a [1001ms] window to 1000 ms.
TEST(PromqlParser, SubSecondRangesAndOffsetsAreExactMilliseconds) {
  for (std::int64_t ms : {1001, 1003, 2002, 4999, 123457}) {
    auto e = parse_ok(fmt::format("sum_over_time(x[{}ms] offset {}ms)", ms, ms));
    ASSERT_TRUE(e);
    const auto& m = *e->as<Call>()->args[0]->as<MatrixSelector>();
    EXPECT_EQ(m.range_ms, ms);
    EXPECT_EQ(m.vector_selector->as<VectorSelector>()->offset_ms, ms);
  }
  // A number of seconds still truncates to the millisecond, as Prometheus's conversion does.
  auto n = parse_ok("x[1.0005]");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->as<MatrixSelector>()->range_ms, 1000);
}

TEST(PromqlParser, Subqueries) {
  auto e = parse_ok("rate(x[5m])[30m:1m]");
  ASSERT_TRUE(e);
  const auto* s = e->as<SubqueryExpr>();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->range_ms, 1800000);
  EXPECT_EQ(s->step_ms, 60000);
  EXPECT_NE(s->expr->as<Call>(), nullptr);
  EXPECT_EQ(parse_ok("x[5m:]")->as<SubqueryExpr>()->step_ms, 0);
  EXPECT_EQ(printed("x[5m:]"), "x[5m:]");
  EXPECT_EQ(printed("min_over_time(rate(x[1m])[5m:30s] offset 1m)"), "min_over_time(rate(x[1m])[5m:30s] offset 1m)");
  EXPECT_EQ(printed("sum_over_time(x[29s+1s:5s+5s])"), "sum_over_time(x[30s:10s])");
  EXPECT_EQ(printed("(a + b)[1h:5m] @ end()"), "(a + b)[1h:5m] @ end()");
  EXPECT_EQ(error_of("x[5m:1m:]"), "1:8: parse error: unexpected colon ':'");
  EXPECT_EQ(error_of("x[5m:1m x]"), R"(1:9: parse error: unexpected identifier "x" in subquery selector, expected "]")");
  EXPECT_EQ(error_of("x[5m:,]"), R"(1:6: parse error: unexpected "," in subquery selector, expected number or duration or "]")");
  EXPECT_EQ(error_of("rate(x[5m])[1h:] + 1"), "1:1: parse error: binary expression must contain only scalar and instant vector types");
  EXPECT_EQ(error_of("x[5m][10m:1m]"), "1:1: parse error: subquery is only allowed on instant vector, got matrix instead");
  EXPECT_EQ(error_of("1[5m:1m]"), "1:1: parse error: subquery is only allowed on instant vector, got scalar instead");
}

TEST(PromqlParser, OffsetAndAtModifiers) {
  auto e = parse_ok("x offset 5m");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->as<VectorSelector>()->offset_ms, 300000);
  EXPECT_EQ(e->pos.end, 11u);
  EXPECT_EQ(parse_ok("x offset -5m")->as<VectorSelector>()->offset_ms, -300000);
  EXPECT_EQ(parse_ok("x offset 100")->as<VectorSelector>()->offset_ms, 100000);
  EXPECT_EQ(parse_ok("x offset (1m*2)")->as<VectorSelector>()->offset_ms, 120000);
  EXPECT_EQ(parse_ok("x OFFSET 1h")->as<VectorSelector>()->offset_ms, 3600000);

  auto at = parse_ok("x @ 100.5");
  ASSERT_TRUE(at);
  EXPECT_EQ(at->as<VectorSelector>()->at.kind, AtModifier::Kind::kTime);
  EXPECT_EQ(at->as<VectorSelector>()->at.t_ms, 100500);
  EXPECT_EQ(parse_ok("x @ -10")->as<VectorSelector>()->at.t_ms, -10000);
  EXPECT_EQ(parse_ok("x @ start()")->as<VectorSelector>()->at.kind, AtModifier::Kind::kStart);
  EXPECT_EQ(parse_ok("x @ end()")->as<VectorSelector>()->at.kind, AtModifier::Kind::kEnd);

  // Either order; a matrix selector keeps both on its vector selector.
  for (const char* q : {"x[5m] @ 100 offset 1m", "x[5m] offset 1m @ 100"}) {
    auto m = parse_ok(q);
    ASSERT_TRUE(m) << q;
    const auto* vs = m->as<MatrixSelector>()->vector_selector->as<VectorSelector>();
    EXPECT_EQ(vs->offset_ms, 60000) << q;
    EXPECT_EQ(vs->at.t_ms, 100000) << q;
    EXPECT_EQ(printed(q), "x[5m] @ 100.000 offset 1m") << q;
  }
  EXPECT_EQ(printed("x @ 100 offset 5m"), "x @ 100.000 offset 5m");
  EXPECT_EQ(printed("x offset -1h"), "x offset -1h");
  auto sq = parse_ok("x[5m:1m] offset 10m @ start()");
  ASSERT_TRUE(sq);
  EXPECT_EQ(sq->as<SubqueryExpr>()->offset_ms, 600000);
  EXPECT_EQ(sq->as<SubqueryExpr>()->at.kind, AtModifier::Kind::kStart);
  // The modifier binds to the selector next to it, tighter than any operator.
  auto bin = parse_ok("a + b offset 5m");
  ASSERT_TRUE(bin);
  EXPECT_EQ(bin->as<BinaryExpr>()->rhs->as<VectorSelector>()->offset_ms, 300000);

  EXPECT_EQ(error_of("x offset 5m offset 1m"), "1:1: parse error: offset may not be set multiple times");
  EXPECT_EQ(error_of("x @ 1 @ 2"), "1:1: parse error: @ <timestamp> may not be set multiple times");
  EXPECT_EQ(error_of("x @ start() @ 2"), "1:1: parse error: @ <timestamp> may not be set multiple times");
  EXPECT_EQ(error_of("sum(x) offset 5m"),
            "1:1: parse error: offset modifier must be preceded by an instant vector selector or range vector selector or a subquery");
  EXPECT_EQ(error_of("sum(x) @ 5"),
            "1:1: parse error: @ modifier must be preceded by an instant vector selector or range vector selector or a subquery");
  EXPECT_EQ(error_of("x offset foo"), R"(1:10: parse error: unexpected identifier "foo" in offset, expected number or duration)");
  EXPECT_EQ(error_of("x @ foo"), R"(1:5: parse error: unexpected identifier "foo" in @, expected timestamp)");
  EXPECT_EQ(error_of("x @ start"), R"(1:10: parse error: unexpected end of input in @, expected timestamp)");
  EXPECT_EQ(error_of("x @ Inf"), "1:1: parse error: timestamp out of bounds for @ modifier: +Inf");
}

TEST(PromqlParser, AnchoredAndSmoothed) {
  auto e = parse_ok("increase(x[1m] anchored)");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->as<Call>()->args[0]->as<MatrixSelector>()->anchored);
  EXPECT_TRUE(parse_ok("rate(x[5m] smoothed)")->as<Call>()->args[0]->as<MatrixSelector>()->smoothed);
  EXPECT_EQ(printed("rate(x[5m] smoothed)"), "rate(x[5m] smoothed)");
  EXPECT_EQ(printed("changes(x[1m] anchored offset 1m)"), "changes(x[1m] anchored offset 1m)");
  EXPECT_EQ(error_of("max_over_time(foo[3m] anchored)"),
            "1:1: parse error: anchored modifier can only be used with: changes, delta, increase, rate, resets - not with max_over_time");
  EXPECT_EQ(error_of("resets(foo[3m] smoothed)"),
            "1:1: parse error: smoothed modifier can only be used with: delta, increase, rate - not with resets");
  EXPECT_EQ(error_of("rate(x[5m] anchored smoothed)"), "1:6: parse error: anchored and smoothed modifiers cannot be used together");
  EXPECT_EQ(error_of("x[5m:1m] anchored"), "1:1: parse error: anchored modifier is not supported for subqueries");
}

TEST(PromqlParser, PrecedenceAndAssociativity) {
  // Explicit parentheses show how each query groups.
  auto shape = [](std::string_view q) {
    std::function<std::string(const Expr&)> walk = [&](const Expr& e) -> std::string {
      if (const auto* b = e.as<BinaryExpr>()) return "(" + walk(*b->lhs) + " " + binary_op_text(b->op) + " " + walk(*b->rhs) + ")";
      if (const auto* u = e.as<UnaryExpr>()) return std::string(u->op == UnaryOp::kMinus ? "-" : "+") + walk(*u->expr);
      return to_string(e);
    };
    auto r = parse_expr(q);
    return r ? walk(**r) : r.error().to_string(q);
  };
  EXPECT_EQ(shape("1 + 2 * 3"), "(1 + (2 * 3))");
  EXPECT_EQ(shape("1 * 2 + 3"), "((1 * 2) + 3)");
  EXPECT_EQ(shape("1 - 2 - 3"), "((1 - 2) - 3)");
  EXPECT_EQ(shape("2 ^ 3 ^ 2"), "(2 ^ (3 ^ 2))");
  EXPECT_EQ(shape("-2 ^ 2"), "-(2 ^ 2)");
  EXPECT_EQ(shape("-a * b"), "(-a * b)");
  EXPECT_EQ(shape("-a ^ b"), "-(a ^ b)");
  EXPECT_EQ(shape("1 + -a * 2"), "(1 + (-a * 2))");
  EXPECT_EQ(shape("2 ^ -1"), "(2 ^ -1)");
  EXPECT_EQ(shape("a or b and c unless d"), "(a or ((b and c) unless d))");
  EXPECT_EQ(shape("a > b + c"), "(a > (b + c))");
  EXPECT_EQ(shape("a == bool b or c"), "((a == b) or c)");
  EXPECT_EQ(shape("a atan2 b * c"), "((a atan2 b) * c)");
  EXPECT_EQ(shape("a % b / c"), "((a % b) / c)");
  EXPECT_EQ(shape("1 + 2 * 3 ^ 2 ^ 1"), "(1 + (2 * (3 ^ (2 ^ 1))))");
  EXPECT_EQ(printed("-2 ^ 2"), "-2 ^ 2");
  EXPECT_EQ(printed("- - 1"), "1");
  EXPECT_EQ(printed("-(1)"), "-(1)");
  EXPECT_EQ(printed("-x"), "-x");
  EXPECT_EQ(printed("+x"), "+x");
  EXPECT_NE(parse_ok("-x")->as<UnaryExpr>(), nullptr);
  EXPECT_NE(parse_ok("-1")->as<NumberLiteral>(), nullptr);
}

TEST(PromqlParser, BinaryModifiers) {
  auto e = parse_ok("a + on (b, c) group_left (d) e");
  ASSERT_TRUE(e);
  const auto* b = e->as<BinaryExpr>();
  ASSERT_TRUE(b->matching.has_value());
  EXPECT_TRUE(b->matching->on);
  EXPECT_EQ(b->matching->card, Cardinality::kManyToOne);
  EXPECT_EQ(b->matching->matching_labels, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(b->matching->include, (std::vector<std::string>{"d"}));
  EXPECT_EQ(printed("a + on(b) group_left(c) d"), "a + on (b) group_left (c) d");
  EXPECT_EQ(printed("a + ignoring(b) group_right d"), "a + ignoring (b) group_right () d");
  EXPECT_EQ(printed("a / on() b"), "a / on () b");
  EXPECT_EQ(printed("a > bool on(x) b"), "a > bool on (x) b");
  EXPECT_EQ(printed("a and on(x) b"), "a and on (x) b");
  EXPECT_EQ(printed("a + ignoring() b"), "a + b");
  EXPECT_EQ(printed("1 == bool 2"), "1 == bool 2");
  EXPECT_EQ(printed("a + on(\"a.b\") b"), "a + on (\"a.b\") b");

  auto set = parse_ok("a or b");
  EXPECT_EQ(set->as<BinaryExpr>()->matching->card, Cardinality::kManyToMany);
  auto vs = parse_ok("a > 1");
  EXPECT_FALSE(vs->as<BinaryExpr>()->matching.has_value());  // only vector/vector operations match
  auto ret_bool = parse_ok("a > bool 1");
  EXPECT_TRUE(ret_bool->as<BinaryExpr>()->return_bool);
  auto no_mod = parse_ok("a - b");
  ASSERT_TRUE(no_mod->as<BinaryExpr>()->matching.has_value());
  EXPECT_EQ(no_mod->as<BinaryExpr>()->matching->card, Cardinality::kOneToOne);
  EXPECT_FALSE(no_mod->as<BinaryExpr>()->matching->on);
}

TEST(PromqlParser, TypeErrors) {
  EXPECT_EQ(error_of("1 == 2"), "1:3: parse error: comparisons between scalars must use BOOL modifier");
  EXPECT_EQ(error_of("a + bool 1"), "1:3: parse error: bool modifier can only be used on comparison operators");
  EXPECT_EQ(error_of("1 and 2"), R"(1:1: parse error: set operator "and" not allowed in binary scalar expression)");
  EXPECT_EQ(error_of("a or 1"), R"(1:1: parse error: set operator "or" not allowed in binary scalar expression)");
  EXPECT_EQ(error_of("a[5m] + b"), "1:1: parse error: binary expression must contain only scalar and instant vector types");
  EXPECT_EQ(error_of("a + b[5m]"), "1:5: parse error: binary expression must contain only scalar and instant vector types");
  EXPECT_EQ(error_of(R"("a" + 1)"), "1:1: parse error: binary expression must contain only scalar and instant vector types");
  EXPECT_EQ(error_of("a + on(b) 1"), "1:1: parse error: vector matching only allowed between instant vectors");
  EXPECT_EQ(error_of("a and on(b) group_left c"), R"(1:1: parse error: no grouping allowed for "and" operation)");
  EXPECT_EQ(error_of("a + on(x) group_left(x) b"), R"(1:3: parse error: label "x" must not occur in ON and GROUP clause at once)");
  EXPECT_EQ(error_of("sum(x[5m])"), "1:5: parse error: expected type instant vector in aggregation expression, got range vector");
  EXPECT_EQ(error_of("topk(x, y)"), "1:6: parse error: expected type scalar in aggregation parameter, got instant vector");
  EXPECT_EQ(error_of("count_values(1, y)"), "1:14: parse error: expected type string in aggregation parameter, got scalar");
  EXPECT_EQ(error_of("rate(x)"), R"(1:6: parse error: expected type range vector in call to function "rate", got instant vector)");
  EXPECT_EQ(error_of("scalar(1)"), R"(1:8: parse error: expected type instant vector in call to function "scalar", got scalar)");
  EXPECT_EQ(error_of("rate(x[5m], 1)"), R"(1:1: parse error: expected 1 argument(s) in call to "rate", got 2)");
  EXPECT_EQ(error_of("round(x, 1, 2)"), R"(1:1: parse error: expected at most 2 argument(s) in call to "round", got 3)");
  EXPECT_EQ(error_of("time(x)"), R"(1:1: parse error: expected 0 argument(s) in call to "time", got 1)");
  EXPECT_EQ(error_of("label_join(x)"), R"(1:1: parse error: expected at least 3 argument(s) in call to "label_join", got 1)");
  EXPECT_EQ(error_of("-x[5m]"),
            R"(1:1: parse error: unary expression only allowed on expressions of type scalar or instant vector, got "range vector")");
  EXPECT_EQ(error_of("foo(x)"), R"(1:1: parse error: unknown function with name "foo")");
  EXPECT_EQ(error_of("holt_winters(x[1h], 0.5, 0.5)"), R"(1:1: parse error: unknown function with name "holt_winters")");
  EXPECT_EQ(error_of("Rate(x[5m])"), R"(1:1: parse error: unknown function with name "Rate")");
  EXPECT_EQ(error_of("sum()"), "1:1: parse error: no arguments for aggregate expression provided");
  EXPECT_EQ(error_of("sum(a, b)"), "1:1: parse error: wrong number of arguments for aggregate expression provided, expected 1, got 2");
  EXPECT_EQ(error_of("topk(a)"), "1:1: parse error: wrong number of arguments for aggregate expression provided, expected 2, got 1");
  EXPECT_EQ(error_of("rate(x[5m],)"), "1:11: parse error: trailing commas not allowed in function call args");
  // Experimental functions need the option.
  ParseOptions strict;
  strict.enable_experimental_functions = false;
  auto r = parse_expr("mad_over_time(x[5m])", strict);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, R"(function "mad_over_time" is not enabled)");
  r = parse_expr("limitk(1, x)", strict);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "limitk() is experimental and must be enabled with --enable-feature=promql-experimental-functions");
  EXPECT_TRUE(parse_expr("mad_over_time(x[5m])").has_value());
}

TEST(PromqlParser, SyntaxErrors) {
  EXPECT_EQ(error_of(""), "unknown position: parse error: no expression found in input");
  EXPECT_EQ(error_of("  # just a comment"), "1:1: parse error: no expression found in input");
  EXPECT_EQ(error_of("(x"), "1:3: parse error: unclosed left parenthesis");
  EXPECT_EQ(error_of("sum("), "1:5: parse error: unclosed left parenthesis");
  EXPECT_EQ(error_of("x)"), "1:3: parse error: unexpected right parenthesis ')'");
  EXPECT_EQ(error_of("x +"), "1:4: parse error: unexpected end of input");
  EXPECT_EQ(error_of("x and"), "1:6: parse error: unexpected end of input");
  EXPECT_EQ(error_of("github stars"), R"(1:8: parse error: unexpected identifier "stars")");
  EXPECT_EQ(error_of("bool"), "1:1: parse error: unexpected <bool>");
  EXPECT_EQ(error_of("x + + "), "1:7: parse error: unexpected end of input");
  EXPECT_EQ(error_of("x * /"), "1:5: parse error: unexpected <op:/>");
  EXPECT_EQ(error_of("x 1"), R"(1:3: parse error: unexpected number "1")");
  EXPECT_EQ(error_of("x \"a very long string\""), R"(1:3: parse error: unexpected string "\"a very lo"...)");
  EXPECT_EQ(error_of("sum by x (y)"), R"(1:8: parse error: unexpected identifier "x" in grouping opts, expected "(")");
  EXPECT_EQ(error_of("sum by (1) (y)"), R"(1:9: parse error: unexpected number "1" in grouping opts, expected label)");
  EXPECT_EQ(error_of("sum by (a b) (y)"), R"x(1:11: parse error: unexpected identifier "b" in grouping opts, expected "," or ")")x");
  EXPECT_EQ(error_of("sum by (a:b) (y)"), R"(1:9: parse error: unexpected metric identifier "a:b" in grouping opts, expected label)");
  EXPECT_EQ(error_of("sum by (a) y"), R"(1:12: parse error: unexpected identifier "y" in aggregation)");
  EXPECT_EQ(error_of("sum(x y)"), R"(1:7: parse error: unexpected identifier "y" in aggregation)");
  EXPECT_EQ(error_of("rate(x y)"), R"(1:8: parse error: unexpected identifier "y")");
  EXPECT_EQ(error_of("a + group_left b"), "1:5: parse error: unexpected <group_left>");
  EXPECT_EQ(error_of("a + on b"), R"(1:8: parse error: unexpected identifier "b" in grouping opts, expected "(")");
  EXPECT_EQ(error_of("a + fill(0) b"), "1:1: parse error: binop fill modifiers are experimental and not enabled");
  EXPECT_EQ(error_of("sum(\n  x\n) +"), "3:4: parse error: unexpected end of input");
  EXPECT_EQ(error_of("x{a=\"b\"}\n  y"), R"(2:3: parse error: unexpected identifier "y")");
  // A lexical error wins over whatever the parser would have said next.
  EXPECT_EQ(error_of("sum(x, \"abc"), "1:8: parse error: unterminated quoted string");
}

TEST(PromqlParser, Aggregations) {
  auto e = parse_ok("sum by (job, instance) (rate(x[5m]))");
  ASSERT_TRUE(e);
  const auto* a = e->as<AggregateExpr>();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->op, AggregateOp::kSum);
  EXPECT_EQ(a->grouping, (std::vector<std::string>{"job", "instance"}));
  EXPECT_FALSE(a->without);
  EXPECT_EQ(a->param, nullptr);
  EXPECT_NE(a->expr->as<Call>(), nullptr);
  auto after = parse_ok("sum(x) without (a,)");
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->as<AggregateExpr>()->without);
  EXPECT_EQ(after->as<AggregateExpr>()->grouping, (std::vector<std::string>{"a"}));
  auto topk = parse_ok("topk(3, x)");
  ASSERT_TRUE(topk);
  EXPECT_DOUBLE_EQ(topk->as<AggregateExpr>()->param->as<NumberLiteral>()->value, 3);
  auto cv = parse_ok(R"(count_values("value", x))");
  ASSERT_TRUE(cv);
  EXPECT_EQ(cv->as<AggregateExpr>()->param->as<StringLiteral>()->value, "value");

  EXPECT_EQ(printed("sum(x) by (a)"), "sum by (a) (x)");
  EXPECT_EQ(printed("sum by (a) (x)"), "sum by (a) (x)");
  EXPECT_EQ(printed("sum(x) by ()"), "sum(x)");
  EXPECT_EQ(printed("sum without () (x)"), "sum without () (x)");
  EXPECT_EQ(printed("quantile(0.9, x)"), "quantile(0.9, x)");
  EXPECT_EQ(printed("bottomk by (a) (5, x)"), "bottomk by (a) (5, x)");
  EXPECT_EQ(printed("count(x) by (on, by, sum)"), "count by (on, by, sum) (x)");
  EXPECT_EQ(printed(R"(sum by ("a.b") (x))"), R"(sum by ("a.b") (x))");
  EXPECT_EQ(printed("limitk(2, x)"), "limitk(2, x)");
  EXPECT_EQ(printed("limit_ratio(0.5, x)"), "limit_ratio(0.5, x)");
  EXPECT_EQ(printed("group(x)"), "group(x)");
  EXPECT_EQ(printed("stddev(x) + stdvar(x)"), "stddev(x) + stdvar(x)");
  EXPECT_EQ(printed("AVG(x)"), "avg(x)");
}

TEST(PromqlParser, CallsAndFunctionTable) {
  auto e = parse_ok(R"x(label_replace(up, "dst", "$1", "src", "(.*)"))x");
  ASSERT_TRUE(e);
  const auto* c = e->as<Call>();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->func->name, "label_replace");
  EXPECT_EQ(c->args.size(), 5u);
  EXPECT_EQ(printed(R"(label_join(x, "d", ",", "a", "b", "c"))"), R"(label_join(x, "d", ",", "a", "b", "c"))");
  EXPECT_EQ(printed("time()"), "time()");
  EXPECT_EQ(printed("vector(1)"), "vector(1)");
  EXPECT_EQ(printed("round(x, 0.5)"), "round(x, 0.5)");
  EXPECT_EQ(printed("hour()"), "hour()");
  EXPECT_EQ(printed(R"(sort_by_label(x, "a", "b"))"), R"(sort_by_label(x, "a", "b"))");
  EXPECT_EQ(printed("info(x, {k=\"v\"})"), "info(x, {k=\"v\"})");
  EXPECT_EQ(parse_ok("time()")->type(), ValueType::kScalar);
  EXPECT_EQ(parse_ok("scalar(x)")->type(), ValueType::kScalar);
  EXPECT_EQ(parse_ok("abs(x)")->type(), ValueType::kVector);

  for (const char* name : {"abs", "absent", "absent_over_time", "acos", "avg_over_time", "ceil", "changes", "clamp", "clamp_max",
                           "clamp_min", "count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "delta",
                           "deriv", "exp", "floor", "histogram_quantile", "histogram_fraction", "double_exponential_smoothing",
                           "hour", "idelta", "increase", "info", "irate", "label_join", "label_replace", "last_over_time", "ln",
                           "log10", "log2", "mad_over_time", "max_over_time", "min_over_time", "minute", "month", "pi",
                           "predict_linear", "present_over_time", "quantile_over_time", "rate", "resets", "round", "scalar", "sgn",
                           "sort", "sort_desc", "sort_by_label", "sort_by_label_desc", "sqrt", "stddev_over_time",
                           "stdvar_over_time", "sum_over_time", "time", "timestamp", "sin", "cos", "tan", "asin", "atan",
                           "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "deg", "rad", "vector", "year", "first_over_time",
                           "ts_of_max_over_time", "ts_of_min_over_time", "ts_of_last_over_time", "ts_of_first_over_time"}) {
    const Function* f = find_function(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->name, name);
  }
  EXPECT_EQ(find_function("holt_winters"), nullptr);
  EXPECT_EQ(find_function("nope"), nullptr);
  const Function* rate = find_function("rate");
  EXPECT_EQ(rate->arg_types, std::vector<ValueType>{ValueType::kMatrix});
  EXPECT_EQ(rate->variadic, 0);
  EXPECT_FALSE(rate->experimental);
  EXPECT_EQ(find_function("round")->variadic, 1);
  EXPECT_EQ(find_function("label_join")->variadic, kUnboundedVariadic);
  EXPECT_TRUE(find_function("mad_over_time")->experimental);
  EXPECT_EQ(find_function("pi")->return_type, ValueType::kScalar);
}

TEST(PromqlParser, ParenAndStringNodes) {
  auto e = parse_ok("(x + 1)");
  ASSERT_TRUE(e);
  ASSERT_NE(e->as<ParenExpr>(), nullptr);
  EXPECT_EQ(e->pos.start, 0u);
  EXPECT_EQ(e->pos.end, 7u);
  EXPECT_EQ(e->type(), ValueType::kVector);
  EXPECT_EQ(parse_ok("((1))")->type(), ValueType::kScalar);
  EXPECT_EQ(parse_ok(R"("s")")->type(), ValueType::kString);
}

TEST(PromqlParser, ParseSelector) {
  auto e = parse_selector(R"(up{job="x"})");
  ASSERT_TRUE(e.has_value());
  const auto* vs = (*e)->as<VectorSelector>();
  ASSERT_NE(vs, nullptr);
  EXPECT_EQ(vs->matchers.size(), 2u);
  EXPECT_TRUE(parse_selector(R"({__name__=~"a.*"})").has_value());
  EXPECT_TRUE(parse_selector(R"({job=~".*"})").has_value());  // as Prometheus: the API layer checks emptiness
  auto bad = parse_selector("sum(x)");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().to_string("sum(x)"), R"(1:4: parse error: unexpected "(")");
  bad = parse_selector("1");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().to_string("1"), R"(1:1: parse error: unexpected number "1")");
  bad = parse_selector("");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().to_string(""), "unknown position: parse error: unexpected end of input");
  bad = parse_selector("up offset 5m");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, "unexpected <offset>");
}

TEST(PromqlParser, ErrorPositionFormat) {
  ParseError e{{5, 6}, "boom"};
  EXPECT_EQ(e.to_string("abcdefgh"), "1:6: parse error: boom");
  EXPECT_EQ(e.to_string("ab\ncdefgh"), "2:3: parse error: boom");
  EXPECT_EQ(e.to_string(""), "unknown position: parse error: boom");
  EXPECT_EQ(e.to_string("abc"), "invalid position: parse error: boom");
}

// parse -> to_string -> parse gives the same text again.
TEST(PromqlParser, RoundTrip) {
  const char* queries[] = {
      "avg_over_time(DCGM_FI_DEV_GPU_UTIL[10m]) < 5",
      "deriv(DCGM_FI_DEV_FB_USED[1h]) > 0",
      "stddev_over_time(DCGM_FI_PROF_SM_ACTIVE[5m]) > 0.15",
      "(DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) * 100",
      "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[1h]) > 0",
      "(DCGM_FI_PROF_DRAM_ACTIVE > 0.8) and (DCGM_FI_PROF_SM_ACTIVE < 0.3)",
      "avg by (gpu, Hostname) (DCGM_FI_DEV_GPU_UTIL)",
      "sum without (instance) (rate(http_requests_total{job=\"api\",code=~\"5..\"}[5m] offset 1m))",
      "max(DCGM_FI_DEV_GPU_TEMP) by (Hostname) > 85",
      "topk(3, sum by (gpu) (DCGM_FI_DEV_POWER_USAGE))",
      "bottomk(2, x)",
      "quantile(0.99, rate(x[1m]))",
      "count_values(\"version\", build_info)",
      "a + on (b) group_left (c) d",
      "a * ignoring (x, y) group_right () b",
      "a / on () b",
      "a > bool 10",
      "1 < bool 2",
      "a unless b or c and d",
      "x @ 1609746000 offset 1d",
      "x[5m] @ start()",
      "rate(x[5m])[30m:1m] @ end() offset -10m",
      "x[1h:]",
      "-x",
      "-2 ^ 2",
      "2 ^ 3 ^ 2",
      "(1 + 2) * 3",
      "a % 3 atan2 b",
      "histogram_quantile(0.9, sum by (le) (rate(h_bucket[5m])))",
      "label_replace(up, \"dst\", \"$1\", \"src\", \"(.*)\")",
      "absent(nonexistent{job=\"x\"})",
      "clamp(x, 0, 100)",
      "predict_linear(DCGM_FI_DEV_FB_USED[1h], 3600) > 80e9",
      "time() - x",
      "scalar(sum(x)) * 2",
      "vector(1) or on () absent(up)",
      "{__name__=~\"DCGM_.*\",gpu=\"0\"}",
      "{\"a.b\"=\"c\",__name__=\"my.metric\"}",
      "x{a!~\"b|c\",d!=\"\"}",
      "NaN",
      "+Inf",
      "-Inf",
      "0.000001",
      "1e+21 + 1",
      "\"a\\tb\"",
      "increase(x[1m] anchored)",
      "sum(rate(x[5m] smoothed))",
      "group by (a) (x)",
      "last_over_time(x[1d2h])",
      "min_over_time(rate(x[1m])[5m:30s] offset 1m)",
  };
  for (const char* q : queries) {
    auto first = parse_expr(q);
    ASSERT_TRUE(first.has_value()) << q << ": " << first.error().to_string(q);
    const std::string once = to_string(**first);
    auto second = parse_expr(once);
    ASSERT_TRUE(second.has_value()) << q << " printed as " << once << ": " << second.error().to_string(once);
    EXPECT_EQ(to_string(**second), once) << q;
  }
  // The canonical spelling of several of them.
  EXPECT_EQ(printed("avg_over_time(DCGM_FI_DEV_GPU_UTIL[10m]) < 5"), "avg_over_time(DCGM_FI_DEV_GPU_UTIL[10m]) < 5");
  EXPECT_EQ(printed("(DCGM_FI_PROF_DRAM_ACTIVE > 0.8) and (DCGM_FI_PROF_SM_ACTIVE < 0.3)"),
            "(DCGM_FI_PROF_DRAM_ACTIVE > 0.8) and (DCGM_FI_PROF_SM_ACTIVE < 0.3)");
  EXPECT_EQ(printed("sum by (a) (rate(x{job=\"a\"}[5m] offset 1m))"), "sum by (a) (rate(x{job=\"a\"}[5m] offset 1m))");
  EXPECT_EQ(printed("1e3"), "1000");
  EXPECT_EQ(printed("0x1F"), "31");
  EXPECT_EQ(printed("Inf"), "+Inf");
  EXPECT_EQ(printed("0.1 + 0.2"), "0.1 + 0.2");
}

// ---- Prometheus's own test scripts --------------------------------------------------------------

struct EvalCase {
  std::string file;
  int line = 0;
  std::string expr;
  bool expect_fail = false;
};

std::string conformance_dir() { return GPUSCOPE_SOURCE_DIR "/../shared/conformance/promql"; }

// The expression of every `eval` command (and its older spellings) in the *.test files.
std::vector<EvalCase> conformance_evals() {
  std::vector<EvalCase> out;
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(conformance_dir(), ec)) {
    if (entry.path().extension() == ".test") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      if (!l.starts_with("eval")) continue;
      std::istringstream words(l);
      std::string command, mode;
      words >> command >> mode;
      std::string skip;
      if (mode == "instant") {
        words >> skip >> skip;  // at <t>
      } else if (mode == "range") {
        words >> skip >> skip >> skip >> skip >> skip >> skip;  // from <t0> to <t1> step <s>
      } else {
        continue;
      }
      std::string rest;
      std::getline(words, rest);
      const auto first = rest.find_first_not_of(" \t");
      if (first == std::string::npos) continue;
      EvalCase c{path.filename().string(), static_cast<int>(i + 1), rest.substr(first), command == "eval_fail"};
      for (std::size_t j = i + 1; j < lines.size() && !lines[j].empty() && (lines[j][0] == ' ' || lines[j][0] == '\t'); ++j) {
        if (lines[j].find("expect fail") != std::string::npos) c.expect_fail = true;
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::set<std::string> in_subset() {
  std::set<std::string> out;
  std::ifstream in(conformance_dir() + "/IN_SUBSET.txt");
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l[0] != '#') out.insert(l);
  }
  return out;
}

TEST(PromqlParserConformance, EveryEvalExpressionParsesOrFailsCleanly) {
  const auto evals = conformance_evals();
  if (evals.empty()) GTEST_SKIP() << "no conformance scripts at " << conformance_dir();
  const auto subset = in_subset();
  int parsed = 0, failed = 0, subset_parsed = 0, expected_failures = 0;
  std::vector<std::string> unparsed;
  for (const auto& c : evals) {
    const std::string key = c.file + ":" + std::to_string(c.line);
    auto r = parse_expr(c.expr);
    if (r) {
      ++parsed;
      if (subset.contains(key)) ++subset_parsed;
      // What we print must parse back to the same text.
      const std::string once = to_string(**r);
      auto again = parse_expr(once);
      EXPECT_TRUE(again.has_value()) << key << ": " << c.expr << " printed as " << once;
      if (again) {
        EXPECT_EQ(to_string(**again), once) << key;
      }
      continue;
    }
    ++failed;
    if (c.expect_fail) {
      ++expected_failures;
      continue;
    }
    EXPECT_FALSE(subset.contains(key)) << key << ": " << c.expr << " -> " << r.error().to_string(c.expr);
    unparsed.push_back(key + ": " + c.expr + "  ->  " + r.error().to_string(c.expr));
  }
  std::cout << "conformance eval expressions: " << evals.size() << " total, " << parsed << " parsed, " << failed
            << " rejected (" << expected_failures << " of them expected to fail); IN_SUBSET parsed " << subset_parsed << "/"
            << subset.size() << "\n";
  for (const auto& u : unparsed) std::cout << "  not parsed: " << u << "\n";
}

TEST(PromqlParserConformance, TruncationsAndRandomBytesNeverCrash) {
  auto evals = conformance_evals();
  std::vector<std::string> seeds;
  for (const auto& c : evals) seeds.push_back(c.expr);
  for (const char* extra : {"sum by (a) (rate(x{a=~\"b\"}[5m:1m] offset 1m @ 10))", "a + on(b) group_left(c) d", "'\\u12", "\"\\x",
                            "x[1h30m % 1h]", "{\"a\"}", "0x_", "1_", "1e+", "((((((((((", "`"}) {
    seeds.emplace_back(extra);
  }
  std::mt19937 rng(42);
  std::size_t runs = 0;
  for (const auto& s : seeds) {
    for (std::size_t cut = 0; cut <= s.size(); cut += 1 + s.size() / 16) {
      (void)parse_expr(s.substr(0, cut));
      (void)parse_expr(s.substr(cut));
      runs += 2;
    }
    // Flip a few bytes.
    std::string mutated = s;
    for (int k = 0; k < 3 && !mutated.empty(); ++k) mutated[rng() % mutated.size()] = static_cast<char>(rng() % 256);
    (void)parse_expr(mutated);
    ++runs;
  }
  const std::string alphabet = "abcxyz_:{}[]()\"'`,=!~<>+-*/%^@#.0123456789 \n\teEmsh";
  for (int i = 0; i < 3000; ++i) {
    std::string q;
    const std::size_t n = rng() % 40;
    for (std::size_t k = 0; k < n; ++k) {
      q += (rng() % 8 == 0) ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
    }
    auto r = parse_expr(q);
    if (r) (void)to_string(**r);
    else (void)r.error().to_string(q);
    ++runs;
  }
  // Deep nesting is refused, not a stack overflow.
  EXPECT_FALSE(parse_expr(std::string(100000, '(') + "1" + std::string(100000, ')')).has_value());
  EXPECT_FALSE(parse_expr(std::string(100000, '-') + "x").has_value());
  EXPECT_GT(runs, 3000u);
}

}  // namespace
}  // namespace gpuscope::promql
