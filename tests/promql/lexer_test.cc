#include "promql/lexer.h"

#include <gtest/gtest.h>

namespace gpuscope::promql {
namespace {

std::vector<TokenKind> kinds(std::string_view q) {
  std::vector<TokenKind> out;
  for (const auto& t : lex(q)) out.push_back(t.kind);
  return out;
}

using K = TokenKind;

TEST(PromqlLexer, TokenKinds) {
  EXPECT_EQ(kinds("sum by (a) (rate(x{a=~\"b\"}[5m]))"),
            (std::vector<K>{K::kSum, K::kBy, K::kLeftParen, K::kIdentifier, K::kRightParen, K::kLeftParen, K::kIdentifier,
                            K::kLeftParen, K::kIdentifier, K::kLeftBrace, K::kIdentifier, K::kEqlRegex, K::kString,
                            K::kRightBrace, K::kLeftBracket, K::kDuration, K::kRightBracket, K::kRightParen, K::kRightParen,
                            K::kEof}));
  EXPECT_EQ(kinds("a:b:c == bool 1e3"), (std::vector<K>{K::kMetricIdentifier, K::kEqlc, K::kBool, K::kNumber, K::kEof}));
  EXPECT_EQ(kinds("x[5m:1m] @ start() offset -1h"),
            (std::vector<K>{K::kIdentifier, K::kLeftBracket, K::kDuration, K::kColon, K::kDuration, K::kRightBracket, K::kAt,
                            K::kStart, K::kLeftParen, K::kRightParen, K::kOffset, K::kSub, K::kDuration, K::kEof}));
  EXPECT_EQ(kinds("a != b <= c >= d < e > f ^ g % h"),
            (std::vector<K>{K::kIdentifier, K::kNeq, K::kIdentifier, K::kLte, K::kIdentifier, K::kGte, K::kIdentifier, K::kLss,
                            K::kIdentifier, K::kGtr, K::kIdentifier, K::kPow, K::kIdentifier, K::kMod, K::kIdentifier, K::kEof}));
  // Keywords are case-insensitive; Inf and NaN are numbers.
  EXPECT_EQ(kinds("AND Or unless ATAN2 Inf nan"), (std::vector<K>{K::kLand, K::kLor, K::kLunless, K::kAtan2, K::kNumber, K::kNumber, K::kEof}));
  // Inside braces every word is a label name.
  EXPECT_EQ(kinds("{by=\"1\"}"), (std::vector<K>{K::kLeftBrace, K::kIdentifier, K::kAssign, K::kString, K::kRightBrace, K::kEof}));
  // fill() is a keyword only before '('.
  EXPECT_EQ(kinds("fill + fill (0)"), (std::vector<K>{K::kIdentifier, K::kAdd, K::kFill, K::kLeftParen, K::kNumber, K::kRightParen, K::kEof}));
  EXPECT_EQ(kinds("x # comment\n"), (std::vector<K>{K::kIdentifier, K::kComment, K::kEof}));
  EXPECT_EQ(kinds("1h30m 250ms 0x1F .5 1_000"), (std::vector<K>{K::kDuration, K::kDuration, K::kNumber, K::kNumber, K::kNumber, K::kEof}));
}

TEST(PromqlLexer, PositionsAndText) {
  auto tokens = lex("  foo{a='b'}");
  ASSERT_GE(tokens.size(), 6u);
  EXPECT_EQ(tokens[0].pos, 2u);
  EXPECT_EQ(tokens[0].text, "foo");
  EXPECT_EQ(tokens[4].text, "'b'");
  EXPECT_EQ(tokens[4].pos, 8u);
  EXPECT_EQ(tokens.back().kind, K::kEof);
  EXPECT_EQ(tokens.back().pos, 12u);
}

TEST(PromqlLexer, Errors) {
  auto last = [](std::string_view q) { return lex(q).back(); };
  EXPECT_EQ(last("(a").error, "unclosed left parenthesis");
  EXPECT_EQ(last("a)").error, "unexpected right parenthesis ')'");
  EXPECT_EQ(last("a)").pos, 2u);
  EXPECT_EQ(last("a[5m").error, "unclosed left bracket");
  EXPECT_EQ(last("a{").error, "unexpected end of input inside braces");
  EXPECT_EQ(last("\"\\z\"").error, "unknown escape sequence U+007A 'z'");
  EXPECT_EQ(last("\"\\x4\"").error, "illegal character U+0022 '\"' in escape sequence");
  EXPECT_EQ(last("\"\\").error, "escape sequence not terminated");
  EXPECT_EQ(last("$").error, "unexpected character: '$'");
  EXPECT_EQ(last("1.2.3").error, "bad number or duration syntax: \"1.2.\"");
  EXPECT_EQ(last("5mx").error, "bad number or duration syntax: \"5mx\"");
}

TEST(PromqlLexer, DescribeToken) {
  auto describe = [](std::string_view q) { return describe_token(lex(q).front()); };
  EXPECT_EQ(describe("foo"), "identifier \"foo\"");
  EXPECT_EQ(describe("a:b"), "metric identifier \"a:b\"");
  EXPECT_EQ(describe("+"), "<op:+>");
  EXPECT_EQ(describe("and"), "<op:and>");
  EXPECT_EQ(describe("sum"), "<aggr:sum>");
  EXPECT_EQ(describe("BY"), "<BY>");
  EXPECT_EQ(describe("("), "\"(\"");
  EXPECT_EQ(describe("start"), "\"start\"");
  EXPECT_EQ(describe("12"), "number \"12\"");
  EXPECT_EQ(describe("5m"), "duration \"5m\"");
  EXPECT_EQ(describe("'abcdefghijkl'"), "string \"'abcdefghi\"...");
  EXPECT_EQ(describe(""), "end of input");
}

TEST(PromqlLexer, QuoteAndUnquote) {
  EXPECT_EQ(unquote_string(R"("a\n\"b\"\\")"), "a\n\"b\"\\");
  EXPECT_EQ(unquote_string("`a\\n`"), "a\\n");
  EXPECT_EQ(unquote_string(R"('\'\x41\101\u00e9')"), "'AA\xc3\xa9");
  EXPECT_EQ(go_quote("a\"b\\c\n\t\x01\xc3\xa9"), "\"a\\\"b\\\\c\\n\\t\\x01\xc3\xa9\"");
  EXPECT_EQ(go_quote("\xff"), "\"\\xff\"");
}

}  // namespace
}  // namespace gpuscope::promql
