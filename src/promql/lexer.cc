#include "promql/lexer.h"

#include <array>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

namespace gpuscope::promql {

namespace {

constexpr char32_t kEofRune = 0xFFFFFFFF;
constexpr char32_t kRuneError = 0xFFFD;

struct Decoded {
  char32_t rune;
  std::size_t width;
};

// One UTF-8 sequence at `pos`; an invalid byte decodes as U+FFFD with width 1, as Go does.
Decoded decode_rune(std::string_view s, std::size_t pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) return {b0, 1};
  std::size_t n = 0;
  char32_t r = 0;
  char32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2, r = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, r = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, r = b0 & 0x07, min = 0x10000;
  } else {
    return {kRuneError, 1};
  }
  if (pos + n > s.size()) return {kRuneError, 1};
  for (std::size_t i = 1; i < n; ++i) {
    const auto b = static_cast<unsigned char>(s[pos + i]);
    if ((b & 0xC0) != 0x80) return {kRuneError, 1};
    r = (r << 6) | (b & 0x3F);
  }
  if (r < min || r > 0x10FFFF || (r >= 0xD800 && r < 0xE000)) return {kRuneError, 1};
  return {r, n};
}

void append_utf8(std::string& out, char32_t r) {
  if (r < 0x80) {
    out += static_cast<char>(r);
  } else if (r < 0x800) {
    out += static_cast<char>(0xC0 | (r >> 6));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else if (r < 0x10000) {
    out += static_cast<char>(0xE0 | (r >> 12));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (r >> 18));
    out += static_cast<char>(0x80 | ((r >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  }
}

// An approximation of Go's unicode.IsPrint: ASCII graphic characters and space, and non-ASCII
// runes outside the C1 controls and the few invisible separators.
bool is_printable(char32_t r) {
  if (r < 0x80) return r >= 0x20 && r < 0x7F;
  if (r < 0xA0) return false;
  return r != 0xAD && r != 0x2028 && r != 0x2029 && r != 0xFEFF && r != 0x200B && r != kRuneError;
}

void append_escaped_rune(std::string& out, char32_t r, char quote) {
  if (r == static_cast<char32_t>(quote) || r == '\\') {
    out += '\\';
    out += static_cast<char>(r);
    return;
  }
  if (is_printable(r)) {
    append_utf8(out, r);
    return;
  }
  switch (r) {
    case '\a': out += "\\a"; return;
    case '\b': out += "\\b"; return;
    case '\f': out += "\\f"; return;
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    case '\v': out += "\\v"; return;
    default: break;
  }
  if (r < 0x20 || r == 0x7F) {
    out += fmt::format("\\x{:02x}", static_cast<unsigned>(r));
  } else if (r < 0x10000) {
    out += fmt::format("\\u{:04x}", static_cast<unsigned>(r));
  } else {
    out += fmt::format("\\U{:08x}", static_cast<unsigned>(r));
  }
}

// Go's %q of a rune: 'x', '\n', '§'.
std::string quote_rune(char32_t r) {
  if (r == kEofRune) r = kRuneError;
  std::string out = "'";
  append_escaped_rune(out, r, '\'');
  out += '\'';
  return out;
}

// Go's %#U: "U+0071 'q'" (the quoted character only when printable).
std::string unicode_name(char32_t r) {
  std::string out = fmt::format("U+{:04X}", static_cast<unsigned>(r));
  if (is_printable(r)) {
    out += " '";
    append_utf8(out, r);
    out += '\'';
  }
  return out;
}

bool is_space(char32_t r) { return r == ' ' || r == '\t' || r == '\n' || r == '\r'; }
bool is_digit(char32_t r) { return r >= '0' && r <= '9'; }
bool is_alpha(char32_t r) { return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'); }
bool is_alnum(char32_t r) { return is_alpha(r) || is_digit(r); }
bool contains(std::string_view set, char32_t r) { return r < 0x80 && set.find(static_cast<char>(r)) != std::string_view::npos; }

struct Keyword {
  std::string_view word;
  TokenKind kind;
};
constexpr std::array kKeywords = {
    Keyword{"and", TokenKind::kLand},           Keyword{"or", TokenKind::kLor},
    Keyword{"unless", TokenKind::kLunless},     Keyword{"atan2", TokenKind::kAtan2},
    Keyword{"sum", TokenKind::kSum},            Keyword{"avg", TokenKind::kAvg},
    Keyword{"count", TokenKind::kCount},        Keyword{"min", TokenKind::kMin},
    Keyword{"max", TokenKind::kMax},            Keyword{"group", TokenKind::kGroup},
    Keyword{"stddev", TokenKind::kStddev},      Keyword{"stdvar", TokenKind::kStdvar},
    Keyword{"topk", TokenKind::kTopk},          Keyword{"bottomk", TokenKind::kBottomk},
    Keyword{"count_values", TokenKind::kCountValues}, Keyword{"quantile", TokenKind::kQuantile},
    Keyword{"limitk", TokenKind::kLimitk},      Keyword{"limit_ratio", TokenKind::kLimitRatio},
    Keyword{"offset", TokenKind::kOffset},      Keyword{"smoothed", TokenKind::kSmoothed},
    Keyword{"anchored", TokenKind::kAnchored},  Keyword{"by", TokenKind::kBy},
    Keyword{"without", TokenKind::kWithout},    Keyword{"on", TokenKind::kOn},
    Keyword{"ignoring", TokenKind::kIgnoring},  Keyword{"group_left", TokenKind::kGroupLeft},
    Keyword{"group_right", TokenKind::kGroupRight}, Keyword{"fill", TokenKind::kFill},
    Keyword{"fill_left", TokenKind::kFillLeft}, Keyword{"fill_right", TokenKind::kFillRight},
    Keyword{"bool", TokenKind::kBool},          Keyword{"start", TokenKind::kStart},
    Keyword{"end", TokenKind::kEnd},            Keyword{"inf", TokenKind::kNumber},
    Keyword{"nan", TokenKind::kNumber},
};

std::optional<TokenKind> keyword_kind(std::string_view word) {
  std::string lower(word);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  for (const auto& k : kKeywords) {
    if (k.word == lower) return k.kind;
  }
  return std::nullopt;
}

// A hand-written transcription of the state machine in Prometheus's lex.go: the same states
// (statements, inside braces, inside brackets) and the same error texts, minus the series
// description mode that only test files use.
class Lexer {
 public:
  explicit Lexer(std::string_view input) : in_(input) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      Token t = next_token();
      const bool last = t.kind == TokenKind::kEof || t.kind == TokenKind::kError;
      out.push_back(std::move(t));
      if (last) break;
    }
    return out;
  }

 private:
  char32_t peek() const { return pos_ >= in_.size() ? kEofRune : decode_rune(in_, pos_).rune; }
  char32_t next() {
    if (pos_ >= in_.size()) {
      width_ = 0;
      return kEofRune;
    }
    auto d = decode_rune(in_, pos_);
    width_ = d.width;
    pos_ += d.width;
    return d.rune;
  }
  void backup() { pos_ -= width_; width_ = 0; }
  bool accept(std::string_view set) {
    if (contains(set, next())) return true;
    backup();
    return false;
  }
  bool is(std::string_view set) const { return contains(set, peek()); }
  void accept_run(std::string_view set) {
    while (contains(set, next())) {
    }
    backup();
  }

  Token emit(TokenKind kind) {
    Token t{kind, start_, in_.substr(start_, pos_ - start_), {}};
    start_ = pos_;
    return t;
  }
  Token error(std::string message) const {
    Token t{TokenKind::kError, start_, in_.substr(start_, 0), std::move(message)};
    return t;
  }

  void skip_spaces() {
    while (is_space(peek())) next();
    start_ = pos_;
  }

  Token next_token() {
    if (brace_open_) return inside_braces();
    skip_spaces();
    if (in_.substr(pos_).starts_with('#')) return comment();
    const char32_t r = next();
    if (r == kEofRune) {
      if (paren_depth_ != 0) return error("unclosed left parenthesis");
      if (bracket_open_) return error("unclosed left bracket");
      return emit(TokenKind::kEof);
    }
    switch (r) {
      case ',': return emit(TokenKind::kComma);
      case '*': return emit(TokenKind::kMul);
      case '/': return emit(TokenKind::kDiv);
      case '%': return emit(TokenKind::kMod);
      case '+': return emit(TokenKind::kAdd);
      case '-': return emit(TokenKind::kSub);
      case '^': return emit(TokenKind::kPow);
      case '@': return emit(TokenKind::kAt);
      case '=': {
        const char32_t t = peek();
        if (t == '=') {
          next();
          return emit(TokenKind::kEqlc);
        }
        if (t == '~') return error("unexpected character after '=': " + quote_rune(t));
        return emit(TokenKind::kAssign);
      }
      case '!': {
        const char32_t t = next();
        if (t != '=') return error("unexpected character after '!': " + quote_rune(t));
        return emit(TokenKind::kNeq);
      }
      case '<':
        if (peek() == '=') {
          next();
          return emit(TokenKind::kLte);
        }
        return emit(TokenKind::kLss);
      case '>':
        if (peek() == '=') {
          next();
          return emit(TokenKind::kGte);
        }
        return emit(TokenKind::kGtr);
      case '"':
      case '\'': return string_token(static_cast<char>(r));
      case '`': return raw_string();
      case '(':
        ++paren_depth_;
        return emit(TokenKind::kLeftParen);
      case ')': {
        Token t = emit(TokenKind::kRightParen);
        if (--paren_depth_ < 0) return error("unexpected right parenthesis " + quote_rune(')'));
        return t;
      }
      case '{':
        brace_open_ = true;
        return emit(TokenKind::kLeftBrace);
      case '[':
        if (bracket_open_) return error("unexpected left bracket " + quote_rune('['));
        got_colon_ = false;
        bracket_open_ = true;
        return emit(TokenKind::kLeftBracket);
      case ']':
        if (!bracket_open_) return error("unexpected right bracket " + quote_rune(']'));
        bracket_open_ = false;
        return emit(TokenKind::kRightBracket);
      default: break;
    }
    if (is_digit(r) || (r == '.' && is_digit(peek()))) {
      backup();
      return number_or_duration();
    }
    if (is_alpha(r) || r == ':') {
      if (!bracket_open_) {
        backup();
        return keyword_or_identifier();
      }
      if (r == ':') {
        if (got_colon_) return error("unexpected colon " + quote_rune(':'));
        got_colon_ = true;
        return emit(TokenKind::kColon);
      }
      // Inside brackets only duration-expression function names (step(), min_of(), ...) are
      // words; the parser decides which it supports.
      while (is_alnum(peek())) next();
      return emit(TokenKind::kIdentifier);
    }
    return error("unexpected character: " + quote_rune(r));
  }

  Token comment() {
    pos_ += 1;
    while (pos_ < in_.size() && in_[pos_] != '\n' && in_[pos_] != '\r') ++pos_;
    return emit(TokenKind::kComment);
  }

  Token inside_braces() {
    skip_spaces();
    if (in_.substr(pos_).starts_with('#')) return comment();
    const char32_t r = next();
    if (r == kEofRune) return error("unexpected end of input inside braces");
    if (is_alpha(r)) {
      while (is_alnum(peek())) next();
      return emit(TokenKind::kIdentifier);
    }
    switch (r) {
      case ',': return emit(TokenKind::kComma);
      case '"':
      case '\'': return string_token(static_cast<char>(r));
      case '`': return raw_string();
      case '=':
        if (peek() == '~') {
          next();
          return emit(TokenKind::kEqlRegex);
        }
        return emit(TokenKind::kAssign);
      case '!': {
        const char32_t t = next();
        if (t == '~') return emit(TokenKind::kNeqRegex);
        if (t == '=') return emit(TokenKind::kNeq);
        return error("unexpected character after '!' inside braces: " + quote_rune(t));
      }
      case '{': return error("unexpected left brace " + quote_rune('{'));
      case '}':
        brace_open_ = false;
        return emit(TokenKind::kRightBrace);
      default: return error("unexpected character inside braces: " + quote_rune(r));
    }
  }

  Token keyword_or_identifier() {
    while (is_alnum(peek()) || peek() == ':') next();
    const std::string_view word = in_.substr(start_, pos_ - start_);
    if (auto kind = keyword_kind(word)) {
      if (*kind == TokenKind::kFill || *kind == TokenKind::kFillLeft || *kind == TokenKind::kFillRight) {
        // fill/fill_left/fill_right are keywords only before '(' so they stay usable as metric names.
        std::size_t p = pos_;
        while (p < in_.size() && is_space(static_cast<unsigned char>(in_[p]))) ++p;
        if (p >= in_.size() || in_[p] != '(') return emit(TokenKind::kIdentifier);
      }
      return emit(*kind);
    }
    return emit(word.find(':') == std::string_view::npos ? TokenKind::kIdentifier : TokenKind::kMetricIdentifier);
  }

  // Prometheus's scanNumber: decimal, hex, exponent and '_' digit separators; the text need not be
  // a valid number yet (the parser converts it).
  bool scan_number() {
    const std::size_t initial = pos_;
    std::string_view digits = "0123456789";
    if (accept("0") && accept("xX")) {
      accept("_");
      digits = "0123456789abcdefABCDEF";
    }
    accept(".");
    accept(digits);
    bool dot_seen = false;
    bool exponent_seen = false;
    const std::string allowed = std::string(digits) + "._eE";
    while (is(allowed)) {
      if (is(".") && dot_seen) {
        accept(".");
        return false;
      }
      if (is("eE") && exponent_seen) {
        accept("eE");
        return false;
      }
      if (accept(".")) {
        dot_seen = true;
        if (accept("_.")) return false;
        if (digits.size() > 10) return false;  // no fractional hex literals
        continue;
      }
      if (accept("eE")) {
        exponent_seen = true;
        accept("+-");
        if (accept("._eE") || peek() == kEofRune) return false;
        continue;
      }
      if (accept("_")) {
        if (accept("._eE") || peek() == kEofRune) return false;
        continue;
      }
      accept_run(digits);
    }
    if (pos_ == initial) return false;
    return !is_alnum(peek());
  }

  bool accept_remaining_duration() {
    if (!accept("smhdwy")) return false;
    accept("s");  // "ms"; bad units like "hs" are reported when the duration is parsed
    while (accept("0123456789")) {
      while (accept("0123456789")) {
      }
      if (!accept("smhdw")) return false;
      accept("s");
    }
    return !is_alnum(next());
  }

  Token number_or_duration() {
    if (scan_number()) return emit(TokenKind::kNumber);
    if (accept_remaining_duration()) {
      backup();
      return emit(TokenKind::kDuration);
    }
    return error("bad number or duration syntax: " + go_quote(in_.substr(start_, pos_ - start_)));
  }

  // Validates the escapes of a quoted string as Go's scanner does; the opening quote is consumed.
  Token string_token(char quote) {
    while (true) {
      const std::size_t before = pos_;
      const char32_t r = next();
      if (r == kEofRune || r == '\n') return error("unterminated quoted string");
      if (r == kRuneError && decode_rune(in_, before).width == 1 &&
          static_cast<unsigned char>(in_[before]) >= 0x80) {
        return error("invalid UTF-8 rune");
      }
      if (r == static_cast<char32_t>(quote)) break;
      if (r == '\\') {
        if (auto message = escape(quote)) return error(*message);
      }
    }
    return emit(TokenKind::kString);
  }

  std::optional<std::string> escape(char quote) {
    char32_t ch = next();
    int n = 0;
    std::uint32_t base = 0;
    std::uint32_t max = 0;
    switch (ch) {
      case 'a': case 'b': case 'f': case 'n': case 'r': case 't': case 'v': case '\\': return std::nullopt;
      case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
        n = 3, base = 8, max = 255;
        break;
      case 'x':
        ch = next();
        n = 2, base = 16, max = 255;
        break;
      case 'u':
        ch = next();
        n = 4, base = 16, max = 0x10FFFF;
        break;
      case 'U':
        ch = next();
        n = 8, base = 16, max = 0x10FFFF;
        break;
      default:
        if (ch == static_cast<char32_t>(quote)) return std::nullopt;
        if (ch == kEofRune) return "escape sequence not terminated";
        return "unknown escape sequence " + unicode_name(ch);
    }
    std::uint32_t x = 0;
    while (n > 0) {
      std::uint32_t d = 16;
      if (ch >= '0' && ch <= '9') d = ch - '0';
      if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
      if (ch >= 'A' && ch <= 'F') d = ch - 'A' + 10;
      if (d >= base) {
        if (ch == kEofRune) return "escape sequence not terminated";
        return "illegal character " + unicode_name(ch) + " in escape sequence";
      }
      x = x * base + d;
      if (--n > 0) ch = next();
    }
    if (x > max || (x >= 0xD800 && x < 0xE000)) return "escape sequence is an invalid Unicode code point";
    return std::nullopt;
  }

  Token raw_string() {
    while (true) {
      const std::size_t before = pos_;
      const char32_t r = next();
      if (r == kEofRune) return error("unterminated raw string");
      if (r == kRuneError && static_cast<unsigned char>(in_[before]) >= 0x80 && decode_rune(in_, before).width == 1) {
        return error("invalid UTF-8 rune");
      }
      if (r == '`') break;
    }
    return emit(TokenKind::kString);
  }

  std::string_view in_;
  std::size_t pos_ = 0;
  std::size_t start_ = 0;
  std::size_t width_ = 0;
  int paren_depth_ = 0;
  bool brace_open_ = false;
  bool bracket_open_ = false;
  bool got_colon_ = false;
};

}  // namespace

bool is_operator(TokenKind k) { return k >= TokenKind::kAdd && k <= TokenKind::kAtan2; }
bool is_aggregator(TokenKind k) { return k >= TokenKind::kSum && k <= TokenKind::kLimitRatio; }
bool is_keyword(TokenKind k) { return k >= TokenKind::kBool && k <= TokenKind::kFillRight; }

std::vector<Token> lex(std::string_view query) { return Lexer(query).run(); }

std::string describe_token(const Token& token) {
  switch (token.kind) {
    case TokenKind::kEof: return "end of input";
    case TokenKind::kError: return token.error;
    case TokenKind::kIdentifier: return "identifier " + go_quote(token.text);
    case TokenKind::kMetricIdentifier: return "metric identifier " + go_quote(token.text);
    case TokenKind::kComment: return "comment " + go_quote(token.text);
    case TokenKind::kNumber:
    case TokenKind::kDuration:
    case TokenKind::kString: {
      const char* what = token.kind == TokenKind::kNumber ? "number" : token.kind == TokenKind::kDuration ? "duration" : "string";
      // Go's "%.10q...": long values are cut to ten characters.
      std::size_t cut = 0;
      int runes = 0;
      while (cut < token.text.size() && runes < 10) {
        cut += decode_rune(token.text, cut).width;
        ++runes;
      }
      if (cut < token.text.size()) return fmt::format("{} {}...", what, go_quote(token.text.substr(0, cut)));
      return fmt::format("{} {}", what, go_quote(token.text));
    }
    default: break;
  }
  if (is_keyword(token.kind)) return fmt::format("<{}>", token.text);
  if (is_operator(token.kind)) return fmt::format("<op:{}>", token.text);
  if (is_aggregator(token.kind)) return fmt::format("<aggr:{}>", token.text);
  return go_quote(token.text);  // punctuation, start, end
}

std::string unquote_string(std::string_view quoted) {
  if (quoted.size() < 2) return std::string(quoted);
  const char quote = quoted.front();
  const std::string_view body = quoted.substr(1, quoted.size() - 2);
  if (quote == '`') return std::string(body);
  std::string out;
  out.reserve(body.size());
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out += c;
      continue;
    }
    const char e = body[++i];
    auto hex = [&](std::size_t digits) {
      std::uint32_t v = 0;
      for (std::size_t k = 0; k < digits && i + 1 < body.size(); ++k) {
        const char h = body[++i];
        v = v * 16 + static_cast<std::uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
      }
      return v;
    };
    switch (e) {
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': out += static_cast<char>(hex(2)); break;  // a raw byte, as in Go
      case 'u': append_utf8(out, hex(4)); break;
      case 'U': append_utf8(out, hex(8)); break;
      case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
        std::uint32_t v = static_cast<std::uint32_t>(e - '0');
        for (int k = 0; k < 2 && i + 1 < body.size(); ++k) v = v * 8 + static_cast<std::uint32_t>(body[++i] - '0');
        out += static_cast<char>(v);
        break;
      }
      default: out += e; break;  // \\, \" or \'
    }
  }
  return out;
}

std::string go_quote(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const auto d = decode_rune(s, i);
    if (d.rune == kRuneError && d.width == 1) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
    } else {
      append_escaped_rune(out, d.rune, '"');
    }
    i += d.width;
  }
  out += '"';
  return out;
}

}  // namespace gpuscope::promql
