// PromQL's lexer: query text to tokens, with the token boundaries, keyword rules and lexical error
// messages of Prometheus's own lexer (promql/parser/lex.go), so parse errors read the same.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::promql {

enum class TokenKind {
  kEof,
  kError,  // a lexical error; `error` holds Prometheus's message and lexing stops there
  kComment,
  kIdentifier,
  kMetricIdentifier,  // an identifier with a ':' in it
  kNumber,
  kDuration,
  kString,  // text keeps the quotes; see unquote_string
  kLeftParen,
  kRightParen,
  kLeftBrace,
  kRightBrace,
  kLeftBracket,
  kRightBracket,
  kComma,
  kAssign,  // '=' (label matching)
  kColon,
  // Operators.
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kPow,
  kEqlc,
  kNeq,
  kLss,
  kLte,
  kGtr,
  kGte,
  kEqlRegex,
  kNeqRegex,
  kAt,
  kLand,
  kLor,
  kLunless,
  kAtan2,
  // Aggregators.
  kSum,
  kAvg,
  kCount,
  kMin,
  kMax,
  kGroup,
  kStddev,
  kStdvar,
  kTopk,
  kBottomk,
  kCountValues,
  kQuantile,
  kLimitk,
  kLimitRatio,
  // Keywords.
  kBool,
  kBy,
  kWithout,
  kOn,
  kIgnoring,
  kGroupLeft,
  kGroupRight,
  kOffset,
  kAnchored,
  kSmoothed,
  kFill,
  kFillLeft,
  kFillRight,
  // `@ start()` / `@ end()`.
  kStart,
  kEnd,
};

bool is_operator(TokenKind k);
bool is_aggregator(TokenKind k);
bool is_keyword(TokenKind k);

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::size_t pos = 0;    // byte offset of the first character
  std::string_view text;  // the token's characters (a view into the lexed query)
  std::string error;      // kError only
  std::size_t end() const { return pos + text.size(); }
};

// The whole token sequence, ending with kEof or, at the first lexical error, kError.
std::vector<Token> lex(std::string_view query);

// How Prometheus names a token in "unexpected ..." messages: `identifier "foo"`, `<op:+>`,
// `<aggr:sum>`, `<by>`, `"("`, `end of input`.
std::string describe_token(const Token& token);

// The value of a string token (quotes removed, Go escapes resolved). The lexer has already
// validated the escapes, so this cannot fail on a token it produced.
std::string unquote_string(std::string_view quoted);

// Go's strconv.Quote: how Prometheus prints strings and label values.
std::string go_quote(std::string_view s);

}  // namespace gpuscope::promql
