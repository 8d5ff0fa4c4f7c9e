#include "promql/parser.h"

#include <re2/re2.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "promql/functions.h"
#include "promql/lexer.h"

namespace gpuscope::promql {

std::string ParseError::to_string(std::string_view query) const {
  std::string where;
  if (query.empty()) {
    where = "unknown position";
  } else if (pos.start > query.size()) {
    where = "invalid position";
  } else {
    std::size_t line = 1;
    std::size_t line_start = 0;  // one past the last line break before pos
    for (std::size_t i = 0; i < pos.start; ++i) {
      if (query[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    where = fmt::format("{}:{}", line, pos.start - line_start + 1);
  }
  return fmt::format("{}: parse error: {}", where, message);
}

namespace {

constexpr int kMaxNesting = 500;  // keeps hostile input from exhausting the stack

// Units of Prometheus durations, biggest first; the position enforces that order.
struct DurationUnit {
  std::string_view name;
  std::int64_t ms;
};
constexpr DurationUnit kDurationUnits[] = {
    {"y", 365LL * 24 * 3600 * 1000}, {"w", 7LL * 24 * 3600 * 1000}, {"d", 24LL * 3600 * 1000}, {"h", 3600LL * 1000},
    {"m", 60LL * 1000},              {"s", 1000},                   {"ms", 1},
};
// time.Duration is int64 nanoseconds; durations beyond it are out of range in Prometheus.
constexpr std::int64_t kMaxDurationMs = INT64_MAX / 1000000;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// Go's strconv underscoreOK: '_' only between digits or right after a base prefix.
bool underscores_ok(std::string_view s) {
  char saw = '^';
  std::size_t i = 0;
  bool hex = false;
  if (s.size() >= 2 && s[0] == '0' && std::string_view("bBoOxX").find(s[1]) != std::string_view::npos) {
    i = 2;
    saw = '0';
    hex = s[1] == 'x' || s[1] == 'X';
  }
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (is_digit(c) || (hex && hex_value(c) < 16)) {
      saw = '0';
      continue;
    }
    if (c == '_') {
      if (saw != '0') return false;
      saw = '_';
      continue;
    }
    if (saw == '_') return false;
    saw = '!';
  }
  return saw != '_';
}

// Go's strconv.ParseInt(s, 0, 64): 0x/0o/0b prefixes, a leading 0 for octal, '_' separators.
std::optional<std::int64_t> parse_go_int(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int base = 10;
  std::size_t i = 0;
  if (s[0] == '0' && s.size() > 1) {
    const char p = s[1];
    if (p == 'x' || p == 'X') {
      base = 16, i = 2;
    } else if (p == 'o' || p == 'O') {
      base = 8, i = 2;
    } else if (p == 'b' || p == 'B') {
      base = 2, i = 2;
    } else {
      base = 8, i = 1;
    }
  }
  if (!underscores_ok(s)) return std::nullopt;
  std::uint64_t v = 0;
  bool any = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '_') continue;
    const int d = hex_value(s[i]);
    if (d >= base) return std::nullopt;
    if (v > (static_cast<std::uint64_t>(INT64_MAX) - static_cast<std::uint64_t>(d)) / static_cast<std::uint64_t>(base)) return std::nullopt;
    v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    any = true;
  }
  if (!any && base != 8) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

// Go's strconv.ParseFloat(s, 64), for the texts the lexer produces as numbers.
std::expected<double, std::string> parse_go_float(std::string_view s) {
  auto syntax_error = [&] { return std::unexpected(fmt::format("strconv.ParseFloat: parsing {}: invalid syntax", go_quote(s))); };
  if (s.find('_') != std::string_view::npos && !underscores_ok(s)) return syntax_error();
  std::string clean;
  for (char c : s) {
    if (c != '_') clean += c;
  }
  if (clean.empty() || clean.find_first_of("pP(") != std::string::npos) return syntax_error();
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return syntax_error();
  if (std::isinf(v) && clean.find_first_of("iI") == std::string::npos) {
    return std::unexpected(fmt::format("strconv.ParseFloat: parsing {}: value out of range", go_quote(s)));
  }
  return v;
}

// Seconds (a float, as Prometheus's number and duration literals are) to whole milliseconds,
// truncating as time.Duration(v*1000)*time.Millisecond does. A duration literal reaches here as
// seconds too, so 1001ms is 1.001 s, whose product is 1000.9999999999999: values that close to a whole
// millisecond are that millisecond, or "[1001ms]" would read as 1000 ms.
std::optional<std::int64_t> seconds_to_ms(double seconds) {
  const double product = seconds * 1000.0;
  const double nearest = std::round(product);
  const double ms = std::abs(product - nearest) < 1e-6 * std::max(1.0, std::abs(nearest)) ? nearest : std::trunc(product);
  if (!std::isfinite(ms) || ms > static_cast<double>(kMaxDurationMs) || ms < -static_cast<double>(kMaxDurationMs)) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(ms);
}

// Go's %f.
std::string format_go_f(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{:f}", v);
}

// RE2's error codes in the words of Go's regexp/syntax, which Prometheus users see.
const char* go_regexp_error_text(re2::RE2::ErrorCode code) {
  switch (code) {
    case re2::RE2::ErrorMissingParen: return "missing closing )";
    case re2::RE2::ErrorUnexpectedParen: return "unexpected )";
    case re2::RE2::ErrorMissingBracket: return "missing closing ]";
    case re2::RE2::ErrorBadCharRange: return "invalid character class range";
    case re2::RE2::ErrorBadEscape: return "invalid escape sequence";
    case re2::RE2::ErrorRepeatArgument: return "missing argument to repetition operator";
    case re2::RE2::ErrorRepeatSize: return "invalid repeat count";
    case re2::RE2::ErrorRepeatOp: return "invalid nested repetition operator";
    case re2::RE2::ErrorTrailingBackslash: return "trailing backslash at end of expression";
    case re2::RE2::ErrorBadNamedCapture: return "invalid named capture";
    case re2::RE2::ErrorBadPerlOp: return "invalid or unsupported Perl syntax";
    case re2::RE2::ErrorBadCharClass: return "invalid character class";
    case re2::RE2::ErrorBadUTF8: return "invalid UTF-8";
    default: return "invalid regular expression";
  }
}

std::string regex_error_message(const std::string& pattern) {
  re2::RE2::Options options;
  options.set_log_errors(false);
  options.set_dot_nl(true);
  const std::string wrapped = "^(?:" + pattern + ")$";
  re2::RE2 re(wrapped, options);
  std::string arg = re.error_arg();
  if (arg == wrapped) arg = pattern;
  return fmt::format("error parsing regexp: {}: `{}`", go_regexp_error_text(re.error_code()), arg);
}

bool is_legacy_label_name(std::string_view s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alpha && !(i > 0 && is_digit(c))) return false;
  }
  return true;
}

int binary_precedence(TokenKind k) {
  switch (k) {
    case TokenKind::kLor: return 1;
    case TokenKind::kLand:
    case TokenKind::kLunless: return 2;
    case TokenKind::kEqlc:
    case TokenKind::kNeq:
    case TokenKind::kLss:
    case TokenKind::kLte:
    case TokenKind::kGtr:
    case TokenKind::kGte: return 3;
    case TokenKind::kAdd:
    case TokenKind::kSub: return 4;
    case TokenKind::kMul:
    case TokenKind::kDiv:
    case TokenKind::kMod:
    case TokenKind::kAtan2: return 5;
    case TokenKind::kPow: return 6;
    default: return 0;
  }
}
// Unary +/- bind like '*': only '^' and the postfix modifiers bind tighter.
constexpr int kPowPrecedence = 6;

BinaryOp binary_op_of(TokenKind k) {
  switch (k) {
    case TokenKind::kAdd: return BinaryOp::kAdd;
    case TokenKind::kSub: return BinaryOp::kSub;
    case TokenKind::kMul: return BinaryOp::kMul;
    case TokenKind::kDiv: return BinaryOp::kDiv;
    case TokenKind::kMod: return BinaryOp::kMod;
    case TokenKind::kPow: return BinaryOp::kPow;
    case TokenKind::kAtan2: return BinaryOp::kAtan2;
    case TokenKind::kEqlc: return BinaryOp::kEql;
    case TokenKind::kNeq: return BinaryOp::kNeq;
    case TokenKind::kGtr: return BinaryOp::kGtr;
    case TokenKind::kLss: return BinaryOp::kLss;
    case TokenKind::kGte: return BinaryOp::kGte;
    case TokenKind::kLte: return BinaryOp::kLte;
    case TokenKind::kLand: return BinaryOp::kAnd;
    case TokenKind::kLor: return BinaryOp::kOr;
    default: return BinaryOp::kUnless;
  }
}

AggregateOp aggregate_op_of(TokenKind k) {
  switch (k) {
    case TokenKind::kSum: return AggregateOp::kSum;
    case TokenKind::kAvg: return AggregateOp::kAvg;
    case TokenKind::kMin: return AggregateOp::kMin;
    case TokenKind::kMax: return AggregateOp::kMax;
    case TokenKind::kCount: return AggregateOp::kCount;
    case TokenKind::kStddev: return AggregateOp::kStddev;
    case TokenKind::kStdvar: return AggregateOp::kStdvar;
    case TokenKind::kTopk: return AggregateOp::kTopk;
    case TokenKind::kBottomk: return AggregateOp::kBottomk;
    case TokenKind::kQuantile: return AggregateOp::kQuantile;
    case TokenKind::kCountValues: return AggregateOp::kCountValues;
    case TokenKind::kGroup: return AggregateOp::kGroup;
    case TokenKind::kLimitk: return AggregateOp::kLimitk;
    default: return AggregateOp::kLimitRatio;
  }
}

bool takes_parameter(AggregateOp op) {
  return op == AggregateOp::kTopk || op == AggregateOp::kBottomk || op == AggregateOp::kQuantile ||
         op == AggregateOp::kCountValues || op == AggregateOp::kLimitk || op == AggregateOp::kLimitRatio;
}

// Words Prometheus's grammar accepts as a metric name (its metric_identifier rule): keywords that
// cannot start anything else in that position.
bool is_metric_name_token(TokenKind k) {
  switch (k) {
    case TokenKind::kIdentifier:
    case TokenKind::kMetricIdentifier:
    case TokenKind::kBy:
    case TokenKind::kWithout:
    case TokenKind::kLand:
    case TokenKind::kLor:
    case TokenKind::kLunless:
    case TokenKind::kOffset:
    case TokenKind::kStart:
    case TokenKind::kEnd:
    case TokenKind::kAnchored:
    case TokenKind::kSmoothed: return true;
    default: return is_aggregator(k);
  }
}

// Words accepted as a label name in by/without/on/ignoring/group_* lists (the maybe_label rule).
bool is_label_word_token(TokenKind k) {
  return k == TokenKind::kIdentifier || k == TokenKind::kMetricIdentifier || is_aggregator(k) || is_keyword(k) ||
         k == TokenKind::kLand || k == TokenKind::kLor || k == TokenKind::kLunless || k == TokenKind::kAtan2 ||
         k == TokenKind::kStart || k == TokenKind::kEnd;
}

bool is_match_op(TokenKind k) {
  return k == TokenKind::kAssign || k == TokenKind::kNeq || k == TokenKind::kEqlRegex || k == TokenKind::kNeqRegex;
}

// Prometheus's internal value-type names ("matrix", "vector"), used by a few of its messages.
const char* raw_type_name(ValueType t) {
  switch (t) {
    case ValueType::kScalar: return "scalar";
    case ValueType::kVector: return "vector";
    case ValueType::kMatrix: return "matrix";
    case ValueType::kString: return "string";
    case ValueType::kNone: break;
  }
  return "none";
}

template <class T>
ExprPtr make_expr(T node, PosRange pos) {
  auto e = std::make_unique<Expr>();
  e->node = std::move(node);
  e->pos = pos;
  return e;
}

class Parser {
 public:
  Parser(std::string_view input, const ParseOptions& options) : input_(input), options_(options) {
    for (auto& t : lex(input)) {
      if (t.kind != TokenKind::kComment) tokens_.push_back(std::move(t));
    }
  }

  std::expected<ExprPtr, ParseError> parse_query() {
    if (peek().kind == TokenKind::kEof) return std::unexpected(ParseError{{0, 0}, "no expression found in input"});
    ExprPtr e = parse_binary(0);
    if (e && peek().kind != TokenKind::kEof) unexpected(peek());
    if (e && !error_) check(*e);
    if (error_) return std::unexpected(*error_);
    return e;
  }

  std::expected<ExprPtr, ParseError> parse_series_selector() {
    const Token& t = peek();
    ExprPtr e;
    if (t.kind == TokenKind::kLeftBrace) {
      e = parse_vector_selector(nullptr);
    } else if (is_metric_name_token(t.kind)) {
      e = parse_vector_selector(&t);
    } else {
      unexpected(t);
    }
    if (e && peek().kind != TokenKind::kEof) unexpected(peek());
    if (error_) return std::unexpected(*error_);
    return e;
  }

 private:
  // Counts nesting depth for as long as it lives.
  class NestingGuard {
   public:
    explicit NestingGuard(int& depth) : depth_(depth) { ++depth_; }
    ~NestingGuard() { --depth_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    int& depth_;
  };

  const Token& peek(std::size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& advance() {
    const Token& t = tokens_[pos_];
    last_end_ = t.end();
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }

  std::nullptr_t fail(PosRange range, std::string message) {
    if (!error_) error_ = ParseError{range, std::move(message)};
    return nullptr;
  }

  // "unexpected <token>[ in <context>][, expected <what>]". A lexical error token stands for
  // itself. Without a context, an error inside an aggregation's parentheses is reported "in
  // aggregation", as the recovery rules of Prometheus's grammar do.
  std::nullptr_t unexpected(const Token& t, std::string_view context = {}, std::string_view expected = {}) {
    if (t.kind == TokenKind::kError) return fail({t.pos, input_.size()}, t.error);
    if (context.empty() && aggregation_depth_ > 0) context = "aggregation";
    std::string message = "unexpected " + describe_token(t);
    if (!context.empty()) message += fmt::format(" in {}", context);
    if (!expected.empty()) message += fmt::format(", expected {}", expected);
    return fail({t.pos, t.end()}, std::move(message));
  }

  // ---- Expressions -------------------------------------------------------------------------

  ExprPtr parse_binary(int min_precedence) {
    ExprPtr lhs = parse_unary();
    if (!lhs) return nullptr;
    while (true) {
      const Token& op = peek();
      const int precedence = binary_precedence(op.kind);
      if (precedence == 0 || precedence < min_precedence) return lhs;
      advance();
      BinaryExpr binary;
      binary.op = binary_op_of(op.kind);
      VectorMatching matching;
      if (peek().kind == TokenKind::kBool) {
        advance();
        binary.return_bool = true;
      }
      if (peek().kind == TokenKind::kOn || peek().kind == TokenKind::kIgnoring) {
        matching.on = advance().kind == TokenKind::kOn;
        if (!parse_grouping_labels(matching.matching_labels)) return nullptr;
        if (peek().kind == TokenKind::kGroupLeft || peek().kind == TokenKind::kGroupRight) {
          matching.card = advance().kind == TokenKind::kGroupLeft ? Cardinality::kManyToOne : Cardinality::kOneToMany;
          if (peek().kind == TokenKind::kLeftParen && !parse_grouping_labels(matching.include)) return nullptr;
        }
      }
      const TokenKind next = peek().kind;
      if (next == TokenKind::kFill || next == TokenKind::kFillLeft || next == TokenKind::kFillRight) {
        return fail({lhs->pos.start, peek().end()}, "binop fill modifiers are experimental and not enabled");
      }
      // '^' is right-associative; every other operator is left-associative.
      ExprPtr rhs = parse_binary(op.kind == TokenKind::kPow ? precedence : precedence + 1);
      if (!rhs) return nullptr;
      const PosRange range{lhs->pos.start, rhs->pos.end};
      binary.lhs = std::move(lhs);
      binary.rhs = std::move(rhs);
      binary.matching = std::move(matching);  // dropped by the type check unless both sides are vectors
      lhs = make_expr(std::move(binary), range);
    }
  }

  ExprPtr parse_unary() {
    NestingGuard guard(depth_);
    if (depth_ > kMaxNesting) return fail({peek().pos, peek().end()}, "expression nesting too deep");
    const Token& t = peek();
    if (t.kind == TokenKind::kAdd || t.kind == TokenKind::kSub) {
      advance();
      ExprPtr operand = parse_binary(kPowPrecedence);
      if (!operand) return nullptr;
      // A sign on a number literal folds into it: `-1` is the literal -1, as in Prometheus.
      if (auto* number = operand->as<NumberLiteral>()) {
        if (t.kind == TokenKind::kSub) number->value = -number->value;
        operand->pos.start = t.pos;
        return operand;
      }
      const PosRange range{t.pos, operand->pos.end};
      return make_expr(UnaryExpr{t.kind == TokenKind::kSub ? UnaryOp::kMinus : UnaryOp::kPlus, std::move(operand)}, range);
    }
    ExprPtr e = parse_primary();
    if (!e) return nullptr;
    return parse_postfix(std::move(e));
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
      case TokenKind::kNumber: {
        advance();
        auto value = number_value(t);
        if (!value) return nullptr;
        return make_expr(NumberLiteral{*value}, {t.pos, t.end()});
      }
      case TokenKind::kDuration: {
        advance();
        auto ms = parse_duration(t.text);
        if (!ms) return fail({t.pos, t.end()}, ms.error());
        return make_expr(NumberLiteral{static_cast<double>(*ms) / 1000.0}, {t.pos, t.end()});
      }
      case TokenKind::kString:
        advance();
        return make_expr(StringLiteral{unquote_string(t.text)}, {t.pos, t.end()});
      case TokenKind::kLeftParen: {
        advance();
        ExprPtr inner = parse_binary(0);
        if (!inner) return nullptr;
        if (peek().kind != TokenKind::kRightParen) return unexpected(peek());
        const Token& close = advance();
        return make_expr(ParenExpr{std::move(inner)}, {t.pos, close.end()});
      }
      case TokenKind::kLeftBrace: return parse_vector_selector(nullptr);
      case TokenKind::kIdentifier:
        if (peek(1).kind == TokenKind::kLeftParen) return parse_call();
        return parse_vector_selector(&t);
      case TokenKind::kStart:
      case TokenKind::kEnd:
        // `start` and `end` are keywords for `@ start()`, and also the functions start() and end().
        if (peek(1).kind == TokenKind::kLeftParen) return parse_call();
        break;
      default: break;
    }
    if (is_aggregator(t.kind)) {
      const TokenKind next = peek(1).kind;
      if (next == TokenKind::kLeftParen || next == TokenKind::kBy || next == TokenKind::kWithout) return parse_aggregate();
    }
    if (is_metric_name_token(t.kind)) return parse_vector_selector(&t);
    return unexpected(t);
  }

  std::optional<double> number_value(const Token& t) {
    if (auto i = parse_go_int(t.text)) return static_cast<double>(*i);
    auto f = parse_go_float(t.text);
    if (!f) {
      fail({t.pos, t.end()}, "error parsing number: " + f.error());
      return std::nullopt;
    }
    return *f;
  }

  // `(` args `)`; the current token is the '('.
  bool parse_call_body(std::vector<ExprPtr>& args) {
    advance();
    if (peek().kind == TokenKind::kRightParen) {
      advance();
      return true;
    }
    while (true) {
      ExprPtr arg = parse_binary(0);
      if (!arg) return false;
      args.push_back(std::move(arg));
      const Token& sep = peek();
      if (sep.kind == TokenKind::kComma) {
        advance();
        if (peek().kind == TokenKind::kRightParen) {
          fail({sep.pos, sep.end()}, "trailing commas not allowed in function call args");
          return false;
        }
        continue;
      }
      if (sep.kind == TokenKind::kRightParen) {
        advance();
        return true;
      }
      unexpected(sep);
      return false;
    }
  }

  ExprPtr parse_call() {
    const Token& name = advance();
    std::vector<ExprPtr> args;
    if (!parse_call_body(args)) return nullptr;
    const PosRange range{name.pos, last_end_};
    const Function* function = find_function(name.text);
    if (function == nullptr) return fail({name.pos, name.end()}, "unknown function with name " + go_quote(name.text));
    if (function->experimental && !options_.enable_experimental_functions) {
      return fail({name.pos, name.end()}, fmt::format("function {} is not enabled", go_quote(name.text)));
    }
    for (const auto& arg : args) {
      const auto* matrix = arg->as<MatrixSelector>();
      if (matrix == nullptr) continue;
      const std::string_view n = function->name;
      if (matrix->anchored && n != "changes" && n != "delta" && n != "increase" && n != "rate" && n != "resets") {
        return fail(range, fmt::format("anchored modifier can only be used with: changes, delta, increase, rate, resets - not with {}", n));
      }
      if (matrix->smoothed && n != "delta" && n != "increase" && n != "rate") {
        return fail(range, fmt::format("smoothed modifier can only be used with: delta, increase, rate - not with {}", n));
      }
    }
    return make_expr(Call{function, std::move(args)}, range);
  }

  ExprPtr parse_aggregate() {
    const Token& op = advance();
    AggregateExpr aggregate;
    aggregate.op = aggregate_op_of(op.kind);
    std::vector<ExprPtr> args;
    {
      NestingGuard in_aggregation(aggregation_depth_);
      bool grouped = false;
      if (peek().kind == TokenKind::kBy || peek().kind == TokenKind::kWithout) {
        aggregate.without = advance().kind == TokenKind::kWithout;
        if (!parse_grouping_labels(aggregate.grouping)) return nullptr;
        grouped = true;
      }
      if (peek().kind != TokenKind::kLeftParen) return unexpected(peek(), "aggregation");
      if (!parse_call_body(args)) return nullptr;
      if (!grouped && (peek().kind == TokenKind::kBy || peek().kind == TokenKind::kWithout)) {
        aggregate.without = advance().kind == TokenKind::kWithout;
        if (!parse_grouping_labels(aggregate.grouping)) return nullptr;
      }
    }
    const PosRange range{op.pos, last_end_};
    if (args.empty()) return fail(range, "no arguments for aggregate expression provided");
    std::size_t wanted = 1;
    if (takes_parameter(aggregate.op)) {
      if (!options_.enable_experimental_functions &&
          (aggregate.op == AggregateOp::kLimitk || aggregate.op == AggregateOp::kLimitRatio)) {
        return fail(range, fmt::format("{}() is experimental and must be enabled with --enable-feature=promql-experimental-functions",
                                       aggregate_op_text(aggregate.op)));
      }
      wanted = 2;
    }
    if (args.size() != wanted) {
      return fail(range, fmt::format("wrong number of arguments for aggregate expression provided, expected {}, got {}", wanted,
                                     args.size()));
    }
    if (wanted == 2) aggregate.param = std::move(args[0]);
    aggregate.expr = std::move(args[wanted - 1]);
    return make_expr(std::move(aggregate), range);
  }

  // `(a, b, "c.d")` after by/without/on/ignoring/group_left/group_right.
  bool parse_grouping_labels(std::vector<std::string>& out) {
    if (peek().kind != TokenKind::kLeftParen) {
      unexpected(peek(), "grouping opts", "\"(\"");
      return false;
    }
    advance();
    if (peek().kind == TokenKind::kRightParen) {
      advance();
      return true;
    }
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::kString) {
        out.push_back(unquote_string(t.text));
      } else if (is_label_word_token(t.kind) && is_legacy_label_name(t.text)) {
        out.emplace_back(t.text);
      } else {
        unexpected(t, "grouping opts", "label");
        return false;
      }
      advance();
      const Token& sep = peek();
      if (sep.kind == TokenKind::kComma) {
        advance();
        if (peek().kind == TokenKind::kRightParen) {
          advance();
          return true;
        }
        continue;
      }
      if (sep.kind == TokenKind::kRightParen) {
        advance();
        return true;
      }
      unexpected(sep, "grouping opts", "\",\" or \")\"");
      return false;
    }
  }

  // `name`, `name{...}` or `{...}`; `name` is the current token when given.
  ExprPtr parse_vector_selector(const Token* name) {
    VectorSelector selector;
    PosRange range{peek().pos, peek().end()};
    if (name != nullptr) {
      advance();
      selector.name = std::string(name->text);
    }
    if (peek().kind == TokenKind::kLeftBrace) {
      advance();
      if (!parse_label_matchers(selector.matchers)) return nullptr;
      range.end = last_end_;
    }
    if (name != nullptr) {
      auto m = store::LabelMatcher::make(store::LabelMatcher::Op::kEqual, "__name__", selector.name);
      if (!m) return fail(range, m.error());
      selector.matchers.push_back(std::move(*m));
    }
    return make_expr(std::move(selector), range);
  }

  // The matchers after '{' up to and including '}'.
  bool parse_label_matchers(std::vector<store::LabelMatcher>& out) {
    using Op = store::LabelMatcher::Op;
    if (peek().kind == TokenKind::kRightBrace) {
      advance();
      return true;
    }
    while (true) {
      const Token& label = peek();
      std::string label_name;
      if (label.kind == TokenKind::kIdentifier) {
        advance();
        label_name = std::string(label.text);
        if (!is_match_op(peek().kind)) {
          unexpected(peek(), "label matching", "label matching operator");
          return false;
        }
      } else if (label.kind == TokenKind::kString) {
        advance();
        label_name = unquote_string(label.text);
      } else {
        unexpected(label, "label matching", "identifier or \"}\"");
        return false;
      }
      if (label.kind == TokenKind::kString && !is_match_op(peek().kind)) {
        // A quoted name alone is the metric name: {"metric.with.dots"}.
        auto m = store::LabelMatcher::make(Op::kEqual, "__name__", label_name);
        if (!m) {
          fail({label.pos, label.end()}, m.error());
          return false;
        }
        out.push_back(std::move(*m));
      } else {
        const Token& op = advance();
        const Token& value = peek();
        if (value.kind != TokenKind::kString) {
          unexpected(value, "label matching", "string");
          return false;
        }
        advance();
        Op match_op = Op::kEqual;
        if (op.kind == TokenKind::kNeq) match_op = Op::kNotEqual;
        if (op.kind == TokenKind::kEqlRegex) match_op = Op::kRegex;
        if (op.kind == TokenKind::kNeqRegex) match_op = Op::kNotRegex;
        std::string text = unquote_string(value.text);
        auto m = store::LabelMatcher::make(match_op, label_name, text);
        if (!m) {
          fail({label.pos, value.end()}, regex_error_message(text));
          return false;
        }
        out.push_back(std::move(*m));
      }
      const Token& sep = peek();
      if (sep.kind == TokenKind::kComma) {
        advance();
        if (peek().kind == TokenKind::kRightBrace) {
          advance();
          return true;
        }
        continue;
      }
      if (sep.kind == TokenKind::kRightBrace) {
        advance();
        return true;
      }
      unexpected(sep, "label matching", "\",\" or \"}\"");
      return false;
    }
  }

  // ---- Postfix modifiers: [range], [range:step], offset, @, anchored, smoothed ----------------

  ExprPtr parse_postfix(ExprPtr e) {
    while (e) {
      switch (peek().kind) {
        case TokenKind::kLeftBracket: e = parse_range(std::move(e)); break;
        case TokenKind::kOffset: e = parse_offset(std::move(e)); break;
        case TokenKind::kAt: e = parse_at(std::move(e)); break;
        case TokenKind::kAnchored:
        case TokenKind::kSmoothed: e = parse_range_modifier(std::move(e)); break;
        default: return e;
      }
    }
    return nullptr;
  }

  static bool starts_duration_expr(TokenKind k) {
    return k == TokenKind::kNumber || k == TokenKind::kDuration || k == TokenKind::kLeftParen || k == TokenKind::kAdd ||
           k == TokenKind::kSub || k == TokenKind::kIdentifier;
  }

  // Duration arithmetic (Prometheus 3's experimental duration expressions) with constants only:
  // numbers are seconds, durations their length in seconds. The value is in seconds.
  std::optional<double> parse_duration_expr(int min_precedence) {
    NestingGuard guard(depth_);
    if (depth_ > kMaxNesting) {
      fail({peek().pos, peek().end()}, "expression nesting too deep");
      return std::nullopt;
    }
    std::optional<double> lhs = parse_duration_operand();
    while (lhs) {
      const Token& op = peek();
      const int precedence = binary_precedence(op.kind);
      if (precedence < 4 || precedence < min_precedence) return lhs;
      advance();
      auto rhs = parse_duration_expr(op.kind == TokenKind::kPow ? precedence : precedence + 1);
      if (!rhs) return std::nullopt;
      switch (op.kind) {
        case TokenKind::kAdd: *lhs += *rhs; break;
        case TokenKind::kSub: *lhs -= *rhs; break;
        case TokenKind::kMul: *lhs *= *rhs; break;
        case TokenKind::kPow: *lhs = std::pow(*lhs, *rhs); break;
        case TokenKind::kDiv:
        case TokenKind::kMod:
          if (*rhs == 0) {
            fail({op.pos, op.end()}, "division by zero");
            return std::nullopt;
          }
          *lhs = op.kind == TokenKind::kDiv ? *lhs / *rhs : std::fmod(*lhs, *rhs);
          break;
        default:
          unexpected(op);
          return std::nullopt;
      }
    }
    return lhs;
  }

  std::optional<double> parse_duration_operand() {
    const Token& t = peek();
    switch (t.kind) {
      case TokenKind::kNumber:
        advance();
        return number_value(t);
      case TokenKind::kDuration: {
        advance();
        auto ms = parse_duration(t.text);
        if (!ms) {
          fail({t.pos, t.end()}, ms.error());
          return std::nullopt;
        }
        return static_cast<double>(*ms) / 1000.0;
      }
      case TokenKind::kAdd:
      case TokenKind::kSub: {
        advance();
        auto v = parse_duration_expr(kPowPrecedence);
        if (v && t.kind == TokenKind::kSub) *v = -*v;
        return v;
      }
      case TokenKind::kLeftParen: {
        advance();
        auto v = parse_duration_expr(0);
        if (!v) return std::nullopt;
        if (peek().kind != TokenKind::kRightParen) {
          unexpected(peek());
          return std::nullopt;
        }
        advance();
        return v;
      }
      case TokenKind::kIdentifier:
        if (peek(1).kind == TokenKind::kLeftParen &&
            (t.text == "step" || t.text == "range" || t.text == "min_of" || t.text == "max_of" || t.text == "min" || t.text == "max")) {
          fail({t.pos, t.end()}, fmt::format("{}() in duration expressions is not supported", t.text));
          return std::nullopt;
        }
        break;
      default: break;
    }
    unexpected(t);
    return std::nullopt;
  }

  std::optional<std::int64_t> duration_ms(double seconds, PosRange range) {
    auto ms = seconds_to_ms(seconds);
    if (!ms) fail(range, "duration out of range");
    return ms;
  }

  ExprPtr parse_range(ExprPtr e) {
    const Token& open = advance();
    if (!starts_duration_expr(peek().kind)) return unexpected(peek(), "subquery selector", "number or duration");
    const std::size_t range_start = peek().pos;
    auto range_seconds = parse_duration_expr(0);
    if (!range_seconds) return nullptr;
    const PosRange range_pos{range_start, last_end_};
    auto range_ms = duration_ms(*range_seconds, range_pos);
    if (!range_ms) return nullptr;
    if (peek().kind == TokenKind::kRightBracket) {
      const Token& close = advance();
      const PosRange brackets{open.pos, close.end()};
      auto* selector = e->as<VectorSelector>();
      if (selector == nullptr) return fail(brackets, "ranges only allowed for vector selectors");
      if (selector->offset_ms != 0) return fail(brackets, "no offset modifiers allowed before range");
      if (selector->at.kind != AtModifier::Kind::kNone) return fail(brackets, "no @ modifiers allowed before range");
      if (*range_ms <= 0) return fail(range_pos, "duration must be greater than 0");
      const PosRange range{e->pos.start, close.end()};
      MatrixSelector matrix;
      matrix.vector_selector = std::move(e);
      matrix.range_ms = *range_ms;
      return make_expr(std::move(matrix), range);
    }
    if (peek().kind != TokenKind::kColon) return unexpected(peek(), "subquery or range", "\":\" or \"]\"");
    advance();
    std::int64_t step_ms = 0;
    if (peek().kind != TokenKind::kRightBracket) {
      if (!starts_duration_expr(peek().kind)) return unexpected(peek(), "subquery selector", "number or duration or \"]\"");
      const std::size_t step_start = peek().pos;
      auto step_seconds = parse_duration_expr(0);
      if (!step_seconds) return nullptr;
      auto ms = duration_ms(*step_seconds, {step_start, last_end_});
      if (!ms) return nullptr;
      step_ms = *ms;
      if (peek().kind != TokenKind::kRightBracket) return unexpected(peek(), "subquery selector", "\"]\"");
    }
    const Token& close = advance();
    if (*range_ms <= 0) return fail(range_pos, "duration must be greater than 0");
    const PosRange range{e->pos.start, close.end()};
    SubqueryExpr subquery;
    subquery.expr = std::move(e);
    subquery.range_ms = *range_ms;
    subquery.step_ms = step_ms;
    return make_expr(std::move(subquery), range);
  }

  ExprPtr parse_offset(ExprPtr e) {
    advance();
    bool negative = false;
    if (peek().kind == TokenKind::kSub || peek().kind == TokenKind::kAdd) negative = advance().kind == TokenKind::kSub;
    const Token& t = peek();
    std::optional<double> seconds;
    if (t.kind == TokenKind::kNumber || t.kind == TokenKind::kDuration || t.kind == TokenKind::kLeftParen) {
      seconds = parse_duration_operand();
    } else {
      return unexpected(t, "offset", "number or duration");
    }
    if (!seconds) return nullptr;
    auto ms = duration_ms(negative ? -*seconds : *seconds, {t.pos, last_end_});
    if (!ms) return nullptr;

    std::int64_t* offset = nullptr;
    if (auto* selector = e->as<VectorSelector>()) offset = &selector->offset_ms;
    if (auto* matrix = e->as<MatrixSelector>()) offset = &matrix->vector_selector->as<VectorSelector>()->offset_ms;
    if (auto* subquery = e->as<SubqueryExpr>()) offset = &subquery->offset_ms;
    if (offset == nullptr) {
      return fail(e->pos, "offset modifier must be preceded by an instant vector selector or range vector selector or a subquery");
    }
    if (*offset != 0) return fail(e->pos, "offset may not be set multiple times");
    *offset = *ms;
    e->pos.end = last_end_;
    return e;
  }

  ExprPtr parse_at(ExprPtr e) {
    advance();
    AtModifier at;
    const Token& t = peek();
    if (t.kind == TokenKind::kStart || t.kind == TokenKind::kEnd) {
      advance();
      if (peek().kind != TokenKind::kLeftParen) return unexpected(peek(), "@", "timestamp");
      advance();
      if (peek().kind != TokenKind::kRightParen) return unexpected(peek(), "@", "timestamp");
      advance();
      at.kind = t.kind == TokenKind::kStart ? AtModifier::Kind::kStart : AtModifier::Kind::kEnd;
    } else {
      bool negative = false;
      if (t.kind == TokenKind::kSub || t.kind == TokenKind::kAdd) negative = advance().kind == TokenKind::kSub;
      const Token& number = peek();
      if (number.kind != TokenKind::kNumber && number.kind != TokenKind::kDuration) return unexpected(number, "@", "timestamp");
      auto seconds = parse_duration_operand();
      if (!seconds) return nullptr;
      const double ts = negative ? -*seconds : *seconds;
      if (!std::isfinite(ts) || ts >= 9.223372036854775807e18 || ts <= -9.223372036854775807e18) {
        return fail(e->pos, "timestamp out of bounds for @ modifier: " + format_go_f(ts));
      }
      const double ms = std::round(ts * 1000.0);
      at.kind = AtModifier::Kind::kTime;
      at.t_ms = ms >= 9.2e18 ? INT64_MAX : ms <= -9.2e18 ? INT64_MIN : static_cast<std::int64_t>(ms);
    }
    AtModifier* target = nullptr;
    if (auto* selector = e->as<VectorSelector>()) target = &selector->at;
    if (auto* matrix = e->as<MatrixSelector>()) target = &matrix->vector_selector->as<VectorSelector>()->at;
    if (auto* subquery = e->as<SubqueryExpr>()) target = &subquery->at;
    if (target == nullptr) {
      return fail(e->pos, "@ modifier must be preceded by an instant vector selector or range vector selector or a subquery");
    }
    if (target->kind != AtModifier::Kind::kNone) return fail(e->pos, "@ <timestamp> may not be set multiple times");
    *target = at;
    e->pos.end = last_end_;
    return e;
  }

  ExprPtr parse_range_modifier(ExprPtr e) {
    const Token& keyword = advance();
    const bool anchored = keyword.kind == TokenKind::kAnchored;
    const char* name = anchored ? "anchored" : "smoothed";
    if (auto* matrix = e->as<MatrixSelector>()) {
      (anchored ? matrix->anchored : matrix->smoothed) = true;
      if (matrix->anchored && matrix->smoothed) return fail(e->pos, "anchored and smoothed modifiers cannot be used together");
      return e;
    }
    if (e->as<SubqueryExpr>() != nullptr) return fail(e->pos, fmt::format("{} modifier is not supported for subqueries", name));
    if (e->as<VectorSelector>() != nullptr) {
      // The AST has no place for it on instant selectors; refusing beats silently ignoring it.
      return fail(e->pos, fmt::format("{} modifier on an instant vector selector is not supported", name));
    }
    return fail(e->pos, fmt::format("{} modifier not implemented", name));
  }

  // ---- Type check (Prometheus's checkAST, in the same order so the first error is the same) ----

  ValueType check(Expr& e, bool bypass_empty_matcher_check = false) {
    if (error_) return ValueType::kNone;
    const ValueType type = e.type();
    if (auto* aggregate = e.as<AggregateExpr>()) {
      expect_type(*aggregate->expr, ValueType::kVector, "aggregation expression");
      switch (aggregate->op) {
        case AggregateOp::kTopk:
        case AggregateOp::kBottomk:
        case AggregateOp::kQuantile:
        case AggregateOp::kLimitk:
        case AggregateOp::kLimitRatio: expect_type(*aggregate->param, ValueType::kScalar, "aggregation parameter"); break;
        case AggregateOp::kCountValues: expect_type(*aggregate->param, ValueType::kString, "aggregation parameter"); break;
        default: break;
      }
    } else if (auto* binary = e.as<BinaryExpr>()) {
      check_binary(e, *binary);
    } else if (auto* call = e.as<Call>()) {
      check_call(e, *call);
    } else if (auto* paren = e.as<ParenExpr>()) {
      check(*paren->expr);
    } else if (auto* unary = e.as<UnaryExpr>()) {
      const ValueType t = check(*unary->expr);
      if (!error_ && t != ValueType::kScalar && t != ValueType::kVector) {
        fail(e.pos, fmt::format("unary expression only allowed on expressions of type scalar or instant vector, got \"{}\"",
                                value_type_name(t)));
      }
    } else if (auto* subquery = e.as<SubqueryExpr>()) {
      const ValueType t = check(*subquery->expr);
      if (!error_ && t != ValueType::kVector) {
        fail(e.pos, fmt::format("subquery is only allowed on instant vector, got {} instead", raw_type_name(t)));
      }
    } else if (auto* matrix = e.as<MatrixSelector>()) {
      check(*matrix->vector_selector);
    } else if (auto* selector = e.as<VectorSelector>()) {
      check_selector(e, *selector, bypass_empty_matcher_check);
    }
    return type;
  }

  void expect_type(Expr& e, ValueType want, std::string_view context) {
    const ValueType t = check(e);
    if (!error_ && t != want) {
      fail(e.pos, fmt::format("expected type {} in {}, got {}", value_type_name(want), context, value_type_name(t)));
    }
  }

  void check_selector(const Expr& e, const VectorSelector& selector, bool bypass_empty_matcher_check) {
    if (!selector.name.empty()) {
      // The last matcher is the name written before the braces; another __name__ is a conflict.
      for (std::size_t i = 0; i + 1 < selector.matchers.size(); ++i) {
        if (selector.matchers[i].name() == "__name__") {
          fail(e.pos, fmt::format("metric name must not be set twice: {} or {}", go_quote(selector.name),
                                  go_quote(selector.matchers[i].value())));
          return;
        }
      }
      return;
    }
    if (bypass_empty_matcher_check) return;
    for (const auto& m : selector.matchers) {
      if (!m.matches_empty()) return;
    }
    fail(e.pos, "vector selector must contain at least one non-empty matcher");
  }

  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

  // The operator's span between the operands, trimmed of white space.
  PosRange operator_range(const BinaryExpr& binary) const {
    std::size_t start = binary.lhs->pos.end;
    while (start < input_.size() && is_space(input_[start])) ++start;
    std::size_t end = binary.rhs->pos.start;
    while (end > start && is_space(input_[end - 1])) --end;
    return {start, end};
  }

  void check_binary(Expr& e, BinaryExpr& binary) {
    const ValueType lt = check(*binary.lhs);
    const ValueType rt = check(*binary.rhs);
    if (error_) return;
    const bool comparison = is_comparison(binary.op);
    const bool set_operator = is_set_operator(binary.op);
    if (binary.return_bool && !comparison) {
      fail(operator_range(binary), "bool modifier can only be used on comparison operators");
      return;
    }
    if (comparison && !binary.return_bool && lt == ValueType::kScalar && rt == ValueType::kScalar) {
      fail(operator_range(binary), "comparisons between scalars must use BOOL modifier");
      return;
    }
    VectorMatching& matching = *binary.matching;
    if (set_operator && matching.card == Cardinality::kOneToOne) matching.card = Cardinality::kManyToMany;
    if (matching.on) {
      for (const auto& l1 : matching.matching_labels) {
        for (const auto& l2 : matching.include) {
          if (l1 == l2) {
            fail(operator_range(binary), fmt::format("label {} must not occur in ON and GROUP clause at once", go_quote(l1)));
            return;
          }
        }
      }
    }
    if (lt != ValueType::kScalar && lt != ValueType::kVector) {
      fail(binary.lhs->pos, "binary expression must contain only scalar and instant vector types");
      return;
    }
    if (rt != ValueType::kScalar && rt != ValueType::kVector) {
      fail(binary.rhs->pos, "binary expression must contain only scalar and instant vector types");
      return;
    }
    if (lt != ValueType::kVector || rt != ValueType::kVector) {
      if (!matching.matching_labels.empty()) {
        fail(e.pos, "vector matching only allowed between instant vectors");
        return;
      }
      binary.matching.reset();
    } else if (set_operator) {
      if (matching.card == Cardinality::kOneToMany || matching.card == Cardinality::kManyToOne) {
        fail(e.pos, fmt::format("no grouping allowed for \"{}\" operation", binary_op_text(binary.op)));
        return;
      }
      if (matching.card != Cardinality::kManyToMany) {
        fail(e.pos, "set operations must always be many-to-many");
        return;
      }
    }
    if ((lt == ValueType::kScalar || rt == ValueType::kScalar) && set_operator) {
      fail(e.pos, fmt::format("set operator \"{}\" not allowed in binary scalar expression", binary_op_text(binary.op)));
    }
  }

  void check_call(const Expr& e, Call& call) {
    const Function& f = *call.func;
    const std::size_t declared = f.arg_types.size();
    const std::size_t given = call.args.size();
    const std::string name = go_quote(f.name);
    if (f.variadic == 0) {
      if (declared != given) {
        fail(e.pos, fmt::format("expected {} argument(s) in call to {}, got {}", declared, name, given));
        return;
      }
    } else {
      const std::size_t required = declared - 1;
      if (required > given) {
        fail(e.pos, fmt::format("expected at least {} argument(s) in call to {}, got {}", required, name, given));
        return;
      }
      if (f.variadic > 0 && required + static_cast<std::size_t>(f.variadic) < given) {
        fail(e.pos, fmt::format("expected at most {} argument(s) in call to {}, got {}",
                                required + static_cast<std::size_t>(f.variadic), name, given));
        return;
      }
    }
    bool info_selector = false;  // info()'s second argument may select by labels alone
    if (f.name == "info" && given > 1) {
      Expr& selector = *call.args[1];
      if (selector.type() != ValueType::kVector) {
        fail(e.pos, fmt::format("expected type instant vector in call to function {}, got {}", name,
                                value_type_name(selector.type())));
        return;
      }
      const auto* vs = selector.as<VectorSelector>();
      if (vs != nullptr && !vs->name.empty()) {
        fail(selector.pos, "expected label selectors only, got vector selector instead");
        return;
      }
      if (vs == nullptr) {
        fail(selector.pos, "expected label selectors only");
        return;
      }
      info_selector = true;
    }
    for (std::size_t i = 0; i < given; ++i) {
      std::size_t slot = i;
      if (i >= declared) {
        if (f.variadic == 0) break;
        slot = declared - 1;
      }
      const ValueType t = check(*call.args[i], info_selector && i == 1);
      if (error_) return;
      if (t != f.arg_types[slot]) {
        fail(call.args[i]->pos, fmt::format("expected type {} in call to function {}, got {}", value_type_name(f.arg_types[slot]),
                                            name, value_type_name(t)));
        return;
      }
    }
  }

  std::string_view input_;
  const ParseOptions& options_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  std::size_t last_end_ = 0;
  int depth_ = 0;
  int aggregation_depth_ = 0;
  std::optional<ParseError> error_;
};

}  // namespace

std::expected<ExprPtr, ParseError> parse_expr(std::string_view query, const ParseOptions& options) {
  return Parser(query, options).parse_query();
}

std::expected<ExprPtr, ParseError> parse_selector(std::string_view query) {
  const ParseOptions options;
  return Parser(query, options).parse_series_selector();
}

std::expected<std::int64_t, std::string> parse_duration(std::string_view text) {
  // prometheus/common's model.ParseDuration: units biggest first, each at most once.
  if (text == "0") return 0;
  if (text.empty()) return std::unexpected(std::string("empty duration string"));
  const std::string invalid = fmt::format("not a valid duration string: {}", go_quote(text));
  std::string_view rest = text;
  std::int64_t total = 0;
  std::size_t last_unit = 0;  // index + 1 of the previous unit in kDurationUnits
  while (!rest.empty()) {
    if (!is_digit(rest[0])) return std::unexpected(invalid);
    std::size_t i = 0;
    std::uint64_t value = 0;
    bool overflow = false;
    for (; i < rest.size() && is_digit(rest[i]); ++i) {
      const auto d = static_cast<std::uint64_t>(rest[i] - '0');
      if (value > (UINT64_MAX - d) / 10) overflow = true;
      if (!overflow) value = value * 10 + d;
    }
    if (overflow) return std::unexpected(invalid);
    rest.remove_prefix(i);
    std::size_t u = 0;
    while (u < rest.size() && !is_digit(rest[u])) ++u;
    if (u == 0) return std::unexpected(invalid);
    const std::string_view unit = rest.substr(0, u);
    rest.remove_prefix(u);
    std::size_t index = 0;
    while (index < std::size(kDurationUnits) && kDurationUnits[index].name != unit) ++index;
    if (index == std::size(kDurationUnits)) {
      return std::unexpected(fmt::format("unknown unit {} in duration {}", go_quote(unit), go_quote(text)));
    }
    if (index + 1 <= last_unit) return std::unexpected(invalid);
    last_unit = index + 1;
    const auto unit_ms = static_cast<std::uint64_t>(kDurationUnits[index].ms);
    if (value > static_cast<std::uint64_t>(kMaxDurationMs) / unit_ms) return std::unexpected(std::string("duration out of range"));
    total += static_cast<std::int64_t>(value * unit_ms);
    if (total > kMaxDurationMs) return std::unexpected(std::string("duration out of range"));
  }
  return total;
}

}  // namespace gpuscope::promql
