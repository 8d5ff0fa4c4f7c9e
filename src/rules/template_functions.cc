#include "rules/template_functions.h"

#include <arpa/inet.h>
#include <locale.h>
#include <wctype.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <re2/re2.h>

namespace gpuscope::rules::template_internal {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

// ---------------------------------------------------------------------------------------------------------------
// UTF-8, as Go's unicode/utf8 sees it: an invalid byte decodes to U+FFFD with width 1.

constexpr char32_t kRuneError = 0xFFFD;
constexpr char32_t kMaxRune = 0x10FFFF;

struct Rune {
  char32_t r;
  int width;
};

Rune decode_rune(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1};
  auto cont = [&](std::size_t k) {
    return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
  };
  auto at = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F); };
  if (b0 >= 0xC2 && b0 <= 0xDF && cont(1)) return {(static_cast<char32_t>(b0 & 0x1F) << 6) | at(1), 2};
  if (b0 >= 0xE0 && b0 <= 0xEF && cont(1) && cont(2)) {
    const char32_t r = (static_cast<char32_t>(b0 & 0x0F) << 12) | (at(1) << 6) | at(2);
    if (r >= 0x800 && (r < 0xD800 || r > 0xDFFF)) return {r, 3};
  }
  if (b0 >= 0xF0 && b0 <= 0xF4 && cont(1) && cont(2) && cont(3)) {
    const char32_t r = (static_cast<char32_t>(b0 & 0x07) << 18) | (at(1) << 12) | (at(2) << 6) | at(3);
    if (r >= 0x10000 && r <= kMaxRune) return {r, 4};
  }
  return {kRuneError, 1};
}

void append_utf8(std::string& out, char32_t r) {
  if (r > kMaxRune || (r >= 0xD800 && r <= 0xDFFF)) r = kRuneError;
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

std::size_t rune_count(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); i += static_cast<std::size_t>(decode_rune(s, i).width)) ++n;
  return n;
}

// unicode.IsPrint, closely enough for label values: letters, marks, numbers, punctuation, symbols and the
// ASCII space; not controls, format characters, other spaces, private use or unassigned surrogates.
bool is_print(char32_t r) {
  if (r < 0x80) return r >= 0x20 && r < 0x7F;
  if (r <= 0xA0 || r == 0xAD) return false;
  if ((r >= 0x2000 && r <= 0x200F) || (r >= 0x2028 && r <= 0x202F) || (r >= 0x205F && r <= 0x206F)) return false;
  if (r == 0x1680 || r == 0x3000 || r == 0xFEFF || (r >= 0xFFF9 && r <= 0xFFFB)) return false;
  if ((r >= 0xE000 && r <= 0xF8FF) || r >= 0xF0000 || r == 0xFFFE || r == 0xFFFF) return false;
  return r <= kMaxRune;
}

// Unicode case mapping through the C library's UTF-8 locale (simple mappings, as Go's unicode.ToUpper);
// ASCII-only when no UTF-8 locale is installed.
locale_t utf8_locale() {
  static const locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    if (l == static_cast<locale_t>(nullptr)) l = newlocale(LC_CTYPE_MASK, "en_US.UTF-8", static_cast<locale_t>(nullptr));
    return l;
  }();
  return loc;
}

char32_t to_upper_rune(char32_t r) {
  if (r < 0x80) return (r >= 'a' && r <= 'z') ? r - 32 : r;
  const locale_t loc = utf8_locale();
  return loc == static_cast<locale_t>(nullptr) ? r : static_cast<char32_t>(towupper_l(static_cast<wint_t>(r), loc));
}

char32_t to_lower_rune(char32_t r) {
  if (r < 0x80) return (r >= 'A' && r <= 'Z') ? r + 32 : r;
  const locale_t loc = utf8_locale();
  return loc == static_cast<locale_t>(nullptr) ? r : static_cast<char32_t>(towlower_l(static_cast<wint_t>(r), loc));
}

bool is_cased(char32_t r) { return to_upper_rune(r) != r || to_lower_rune(r) != r; }

bool is_letter_or_digit(char32_t r) {
  if (r < 0x80) return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9');
  const locale_t loc = utf8_locale();
  return loc == static_cast<locale_t>(nullptr) ? true : iswalnum_l(static_cast<wint_t>(r), loc) != 0;
}

template <class F>
std::string map_runes(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const Rune r = decode_rune(s, i);
    if (r.r == kRuneError && r.width == 1) {
      out += s[i];  // keep invalid bytes as they are
    } else {
      append_utf8(out, f(r.r));
    }
    i += static_cast<std::size_t>(r.width);
  }
  return out;
}

// golang.org/x/text/cases Title with NoLower, as Prometheus's `title`: the first cased letter after a word
// break is upper-cased, the rest is left alone. Letters, digits and '_' continue a word; a single
// apostrophe, period or colon between them does too (Unicode's MidLetter/MidNumLet), so "it's" -> "It's".
std::string title_case(std::string_view s) {
  std::string out;
  bool mid_word = false;
  bool prev_mid = false;
  for (std::size_t i = 0; i < s.size();) {
    const Rune r = decode_rune(s, i);
    const bool mid = r.r == '\'' || r.r == '.' || r.r == ':' || r.r == 0x2019 || r.r == 0xB7;
    if (prev_mid && mid) mid_word = false;
    if (r.r != kRuneError && is_cased(r.r)) {
      append_utf8(out, mid_word ? r.r : to_upper_rune(r.r));
      mid_word = true;
    } else {
      out.append(s.substr(i, static_cast<std::size_t>(r.width)));
      const bool word_char = r.r == '_' || (r.r != kRuneError && is_letter_or_digit(r.r));
      if (!word_char && !mid) mid_word = false;
    }
    prev_mid = mid;
    i += static_cast<std::size_t>(r.width);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// strconv.

void append_quoted_rune(std::string& out, char32_t r, int width, unsigned char raw_byte, char quote, bool ascii_only) {
  static constexpr char kHex[] = "0123456789abcdef";
  if (width == 1 && r == kRuneError) {
    out += "\\x";
    out += kHex[raw_byte >> 4];
    out += kHex[raw_byte & 0xF];
    return;
  }
  if (r == static_cast<char32_t>(quote) || r == '\\') {
    out += '\\';
    out += static_cast<char>(r);
    return;
  }
  if (ascii_only ? (r < 0x80 && is_print(r)) : is_print(r)) {
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
  if (r < ' ' || r == 0x7F) {
    out += "\\x";
    out += kHex[(r >> 4) & 0xF];
    out += kHex[r & 0xF];
  } else if (r < 0x10000) {
    out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(r));
  } else {
    out += fmt::format("\\U{:08x}", static_cast<std::uint32_t>(r));
  }
}

std::string quote_with(std::string_view s, char quote, bool ascii_only) {
  std::string out(1, quote);
  for (std::size_t i = 0; i < s.size();) {
    const Rune r = decode_rune(s, i);
    append_quoted_rune(out, r.r, r.width, static_cast<unsigned char>(s[i]), quote, ascii_only);
    i += static_cast<std::size_t>(r.width);
  }
  out += quote;
  return out;
}

bool can_backquote(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const Rune r = decode_rune(s, i);
    if (r.width == 1 && r.r == kRuneError) return false;
    if (r.r == '`' || r.r == 0xFEFF || (r.r < ' ' && r.r != '\t') || r.r == 0x7F) return false;
    i += static_cast<std::size_t>(r.width);
  }
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// strconv.UnquoteChar: one (possibly escaped) character at s[i], inside a literal quoted with `quote`.
struct UnquotedChar {
  char32_t value;
  bool multibyte;  // value is a rune to encode as UTF-8, not a raw byte
  std::size_t next;
};

std::optional<UnquotedChar> unquote_char(std::string_view s, std::size_t i, char quote) {
  if (i >= s.size()) return std::nullopt;
  const char c = s[i];
  if (c == quote && (quote == '\'' || quote == '"')) return std::nullopt;
  if (static_cast<unsigned char>(c) >= 0x80) {
    const Rune r = decode_rune(s, i);
    return UnquotedChar{r.r, true, i + static_cast<std::size_t>(r.width)};
  }
  if (c != '\\') return UnquotedChar{static_cast<unsigned char>(c), true, i + 1};
  if (i + 1 >= s.size()) return std::nullopt;
  const char e = s[i + 1];
  std::size_t j = i + 2;
  switch (e) {
    case 'a': return UnquotedChar{'\a', true, j};
    case 'b': return UnquotedChar{'\b', true, j};
    case 'f': return UnquotedChar{'\f', true, j};
    case 'n': return UnquotedChar{'\n', true, j};
    case 'r': return UnquotedChar{'\r', true, j};
    case 't': return UnquotedChar{'\t', true, j};
    case 'v': return UnquotedChar{'\v', true, j};
    case '\\': return UnquotedChar{'\\', true, j};
    case '\'':
    case '"':
      if (e != quote) return std::nullopt;
      return UnquotedChar{static_cast<char32_t>(e), true, j};
    case 'x':
    case 'u':
    case 'U': {
      const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      if (j + n > s.size()) return std::nullopt;
      char32_t v = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const int h = hex_value(s[j + k]);
        if (h < 0) return std::nullopt;
        v = v * 16 + static_cast<char32_t>(h);
      }
      if (e == 'x') return UnquotedChar{v, false, j + n};
      if (v > kMaxRune || (v >= 0xD800 && v <= 0xDFFF)) return std::nullopt;
      return UnquotedChar{v, true, j + n};
    }
    default:
      if (e >= '0' && e <= '7') {
        if (i + 4 > s.size()) return std::nullopt;
        char32_t v = 0;
        for (std::size_t k = 1; k <= 3; ++k) {
          const char d = s[i + k];
          if (d < '0' || d > '7') return std::nullopt;
          v = v * 8 + static_cast<char32_t>(d - '0');
        }
        if (v > 255) return std::nullopt;
        return UnquotedChar{v, false, i + 4};
      }
      return std::nullopt;
  }
}

bool underscore_ok(std::string_view s) {
  char saw = '^';
  std::size_t i = 0;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  bool hex = false;
  auto lower = [](char c) { return static_cast<char>(c | 0x20); };
  if (s.size() >= 2 && s[0] == '0' && (lower(s[1]) == 'b' || lower(s[1]) == 'o' || lower(s[1]) == 'x')) {
    i = 2;
    saw = '0';
    hex = lower(s[1]) == 'x';
  }
  for (; i < s.size(); ++i) {
    if ((s[i] >= '0' && s[i] <= '9') || (hex && lower(s[i]) >= 'a' && lower(s[i]) <= 'f')) {
      saw = '0';
      continue;
    }
    if (s[i] == '_') {
      if (saw != '0') return false;
      saw = '_';
      continue;
    }
    if (saw == '_') return false;
    saw = '!';
  }
  return saw != '_';
}

bool iequals_prefix(std::string_view s, std::string_view word) {
  if (s.size() != word.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((s[i] | 0x20) != word[i]) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Go's fmt over template values.

constexpr std::string_view kStructType =
    "struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; Value interface {} }";

class Printer {
 public:
  std::string buf;

  void clear_flags() { f_ = Flags{}; }

  void print_arg(const Value& v, char32_t verb) {
    if (std::holds_alternative<Nil>(v)) {
      if (verb == 'T' || verb == 'v') {
        pad_string("<nil>");
      } else {
        bad_verb(verb, v);
      }
      return;
    }
    if (verb == 'T') {
      fmt_s(go_type_name(v));
      return;
    }
    if (verb == 'p') {
      fmt_pointer(v, verb);
      return;
    }
    print_value(v, verb, 0);
  }

  // fmt.Sprint's operand loop; `template_args` applies text/template's evalArgs conversion first (a nil
  // prints as the string "<no value>" and pointers are dereferenced).
  void do_print(std::span<const Value> args, bool template_args) {
    bool prev_string = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const Value& a = args[i];
      const bool nil_as_text = template_args && std::holds_alternative<Nil>(a);
      const bool is_string = nil_as_text || std::holds_alternative<std::string>(a) || std::holds_alternative<Html>(a);
      if (i > 0 && !is_string && !prev_string) buf += ' ';
      if (nil_as_text) {
        buf += "<no value>";
      } else if (const auto* s = std::get_if<SamplePtr>(&a); template_args && s != nullptr && *s != nullptr) {
        print_sample_struct(**s, 'v', 1);
      } else {
        print_arg(a, 'v');
      }
      prev_string = is_string;
    }
  }

  void do_println(std::span<const Value> args) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (i > 0) buf += ' ';
      print_arg(args[i], 'v');
    }
    buf += '\n';
  }

  void do_printf(std::string_view format, std::span<const Value> args);

  void print_sample_struct(const Sample& s, char32_t verb, int depth) {
    buf += '{';
    if (f_.plus_v) buf += "Labels:";
    print_labels(s.labels, verb);
    buf += ' ';
    if (f_.plus_v) buf += "Value:";
    print_value(Value(s.value), verb, depth + 1);
    buf += '}';
  }

 private:
  struct Flags {
    bool plus = false, minus = false, sharp = false, space = false, zero = false;
    bool plus_v = false, sharp_v = false;
    bool wid_present = false, prec_present = false;
    int wid = 0, prec = 0;
  };
  Flags f_;
  bool good_arg_num_ = true;
  bool reordered_ = false;

  void write_padding(int n) {
    if (n <= 0) return;
    buf.append(static_cast<std::size_t>(n), f_.zero && !f_.minus ? '0' : ' ');
  }

  void pad(std::string_view s) {
    if (!f_.wid_present || f_.wid == 0) {
      buf += s;
      return;
    }
    const int width = f_.wid - static_cast<int>(rune_count(s));
    if (!f_.minus) {
      write_padding(width);
      buf += s;
    } else {
      buf += s;
      write_padding(width);
    }
  }
  void pad_string(std::string_view s) { pad(s); }

  std::string truncate(std::string_view s) const {
    if (!f_.prec_present) return std::string(s);
    int n = f_.prec;
    for (std::size_t i = 0; i < s.size();) {
      if (n-- <= 0) return std::string(s.substr(0, i));
      i += static_cast<std::size_t>(decode_rune(s, i).width);
    }
    return std::string(s);
  }

  void fmt_s(std::string_view s) { pad_string(truncate(s)); }

  void fmt_sx(std::string_view s, bool upper) {
    const char* digits = upper ? "0123456789ABCDEFX" : "0123456789abcdefx";
    int length = static_cast<int>(s.size());
    if (f_.prec_present && f_.prec < length) length = f_.prec;
    int width = 2 * length;
    if (width > 0) {
      if (f_.space) {
        if (f_.sharp) width *= 2;
        width += length - 1;
      } else if (f_.sharp) {
        width += 2;
      }
    } else {
      if (f_.wid_present) write_padding(f_.wid);
      return;
    }
    if (f_.wid_present && f_.wid > width && !f_.minus) write_padding(f_.wid - width);
    if (f_.sharp) {
      buf += '0';
      buf += digits[16];
    }
    for (int i = 0; i < length; ++i) {
      if (f_.space && i > 0) {
        buf += ' ';
        if (f_.sharp) {
          buf += '0';
          buf += digits[16];
        }
      }
      const auto c = static_cast<unsigned char>(s[static_cast<std::size_t>(i)]);
      buf += digits[c >> 4];
      buf += digits[c & 0xF];
    }
    if (f_.wid_present && f_.wid > width && f_.minus) write_padding(f_.wid - width);
  }

  void fmt_q(std::string_view s) {
    const std::string t = truncate(s);
    if (f_.sharp && can_backquote(t)) {
      pad_string("`" + t + "`");
      return;
    }
    pad(quote_with(t, '"', f_.plus));
  }

  void fmt_string(std::string_view s, char32_t verb, const Value& v) {
    switch (verb) {
      case 'v':
        if (f_.sharp_v) {
          fmt_q(s);
        } else {
          fmt_s(s);
        }
        return;
      case 's': fmt_s(s); return;
      case 'x': fmt_sx(s, false); return;
      case 'X': fmt_sx(s, true); return;
      case 'q': fmt_q(s); return;
      default: bad_verb(verb, v);
    }
  }

  void fmt_integer(std::uint64_t u, int base, bool is_signed, char32_t verb, bool upper) {
    const char* digits = upper ? "0123456789ABCDEFX" : "0123456789abcdefx";
    const bool negative = is_signed && static_cast<std::int64_t>(u) < 0;
    if (negative) u = ~u + 1;
    int prec = 0;
    if (f_.prec_present) {
      prec = f_.prec;
      if (prec == 0 && u == 0) {
        const bool old_zero = f_.zero;
        f_.zero = false;
        write_padding(f_.wid);
        f_.zero = old_zero;
        return;
      }
    } else if (f_.zero && !f_.minus && f_.wid_present) {
      prec = f_.wid;
      if (negative || f_.plus || f_.space) --prec;
    }
    std::string rev;
    do {
      rev += digits[u % static_cast<std::uint64_t>(base)];
      u /= static_cast<std::uint64_t>(base);
    } while (u != 0);
    while (static_cast<int>(rev.size()) < prec) rev += '0';
    if (f_.sharp) {
      if (base == 2) {
        rev += 'b';
        rev += '0';
      } else if (base == 8 && rev.back() != '0') {
        rev += '0';
      } else if (base == 16) {
        rev += digits[16];
        rev += '0';
      }
    }
    if (verb == 'O') {
      rev += 'o';
      rev += '0';
    }
    if (negative) {
      rev += '-';
    } else if (f_.plus) {
      rev += '+';
    } else if (f_.space) {
      rev += ' ';
    }
    std::reverse(rev.begin(), rev.end());
    const bool old_zero = f_.zero;
    f_.zero = false;
    pad(rev);
    f_.zero = old_zero;
  }

  void fmt_unicode(std::uint64_t u) {
    std::string s = fmt::format("U+{:0{}X}", u, std::max(4, f_.prec_present ? f_.prec : 4));
    if (f_.sharp && u <= kMaxRune && is_print(static_cast<char32_t>(u))) {
      s += " '";
      append_utf8(s, static_cast<char32_t>(u));
      s += '\'';
    }
    const bool old_zero = f_.zero;
    f_.zero = false;
    pad(s);
    f_.zero = old_zero;
  }

  void fmt_int_verb(std::int64_t i, char32_t verb, const Value& v) {
    const auto u = static_cast<std::uint64_t>(i);
    switch (verb) {
      case 'v':
      case 'd': fmt_integer(u, 10, true, verb, false); return;
      case 'b': fmt_integer(u, 2, true, verb, false); return;
      case 'o':
      case 'O': fmt_integer(u, 8, true, verb, false); return;
      case 'x': fmt_integer(u, 16, true, verb, false); return;
      case 'X': fmt_integer(u, 16, true, verb, true); return;
      case 'c': {
        std::string s;
        append_utf8(s, i < 0 || i > static_cast<std::int64_t>(kMaxRune) ? kRuneError : static_cast<char32_t>(i));
        pad(s);
        return;
      }
      case 'q': {
        std::string s;
        append_utf8(s, i < 0 || i > static_cast<std::int64_t>(kMaxRune) ? kRuneError : static_cast<char32_t>(i));
        if (f_.sharp && s != "`" && can_backquote(s)) {
          pad("'" + s + "'");
        } else {
          pad(quote_with(s, '\'', f_.plus));
        }
        return;
      }
      case 'U': fmt_unicode(u); return;
      default: bad_verb(verb, v);
    }
  }

  // fmt's fmtFloat: strconv's digits plus sign, padding, '#' and the +Inf/NaN rules.
  void fmt_float(double v, char32_t verb, int prec) {
    if (f_.prec_present) prec = f_.prec;
    std::string num;
    if (verb == 'x' || verb == 'X') {
      num = hex_float(v, prec, verb == 'X');
    } else if (verb == 'b') {
      num = binary_float(v);
    } else {
      num = go_format_float(v, static_cast<char>(verb), prec);
    }
    if (num[0] != '-' && num[0] != '+') num.insert(num.begin(), '+');
    if (f_.space && num[0] == '+' && !f_.plus) num[0] = ' ';
    if (num[1] == 'I' || num[1] == 'N') {
      const bool old_zero = f_.zero;
      f_.zero = false;
      if (num[1] == 'N' && !f_.space && !f_.plus) num.erase(0, 1);
      pad(num);
      f_.zero = old_zero;
      return;
    }
    if (f_.sharp && verb != 'b') {
      int digits = 0;
      if (verb == 'v' || verb == 'g' || verb == 'G' || verb == 'x') digits = prec == -1 ? 6 : prec;
      std::string tail;
      bool has_point = false, saw_nonzero = false;
      for (std::size_t i = 1; i < num.size(); ++i) {
        const char c = num[i];
        if (c == '.') {
          has_point = true;
        } else if (c == 'p' || c == 'P' || ((c == 'e' || c == 'E') && verb != 'x' && verb != 'X')) {
          tail = num.substr(i);
          num.resize(i);
          break;
        } else {
          if (c != '0') saw_nonzero = true;
          if (saw_nonzero) --digits;
        }
      }
      if (!has_point) {
        if (num.size() == 2 && num[1] == '0') --digits;
        num += '.';
      }
      while (digits-- > 0) num += '0';
      num += tail;
    }
    if (f_.plus || num[0] != '+') {
      if (f_.zero && !f_.minus && f_.wid_present && f_.wid > static_cast<int>(num.size())) {
        buf += num[0];
        write_padding(f_.wid - static_cast<int>(num.size()));
        buf.append(num, 1);
        return;
      }
      pad(num);
      return;
    }
    pad(std::string_view(num).substr(1));
  }

  static std::string hex_float(double v, int prec, bool upper) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    std::string s(static_cast<std::size_t>(40 + std::max(prec, 0)), '\0');
    const int n = prec < 0 ? std::snprintf(s.data(), s.size(), upper ? "%A" : "%a", v)
                           : std::snprintf(s.data(), s.size(), upper ? "%.*A" : "%.*a", prec, v);
    s.resize(static_cast<std::size_t>(std::max(n, 0)));
    // C writes at least one exponent digit, Go at least two.
    const std::size_t p = s.find_first_of("pP");
    if (p != std::string::npos && p + 3 == s.size()) s.insert(p + 2, "0");
    return s;
  }

  static std::string binary_float(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    int e = 0;
    const double m = std::frexp(std::fabs(v), &e);
    const auto mant = static_cast<std::int64_t>(std::ldexp(m, 53));
    return fmt::format("{}{}p{}{}", std::signbit(v) ? "-" : "", mant, e - 53 >= 0 ? "+" : "", e - 53);
  }

  void fmt_float_verb(double d, char32_t verb, const Value& v) {
    switch (verb) {
      case 'v': fmt_float(d, 'g', -1); return;
      case 'b':
      case 'g':
      case 'G':
      case 'x':
      case 'X': fmt_float(d, verb, -1); return;
      case 'f':
      case 'e':
      case 'E': fmt_float(d, verb, 6); return;
      case 'F': fmt_float(d, 'f', 6); return;
      default: bad_verb(verb, v);
    }
  }

  void fmt_pointer(const Value& v, char32_t verb) {
    const void* p = nullptr;
    if (const auto* s = std::get_if<SamplePtr>(&v)) {
      p = s->get();
    } else {
      bad_verb(verb, v);
      return;
    }
    const auto u = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
    if (verb == 'v') {
      if (p == nullptr) {
        pad_string("<nil>");
      } else {
        pad_string(fmt::format("0x{:x}", u));
      }
    } else if (verb == 'p') {
      pad_string(fmt::format("0x{:x}", u));
    } else {
      bad_verb(verb, v);
    }
  }

  void print_labels(const store::Labels& labels, char32_t verb) {
    buf += "map[";
    bool first = true;
    for (const auto& l : labels) {
      if (!first) buf += ' ';
      first = false;
      print_value(Value(l.name), verb, 2);
      buf += ':';
      print_value(Value(l.value), verb, 2);
    }
    buf += ']';
  }

  void print_value(const Value& v, char32_t verb, int depth) {
    std::visit(Overloaded{
                   [&](const Nil&) { buf += "<nil>"; },
                   [&](bool b) {
                     if (verb == 't' || verb == 'v') {
                       pad_string(b ? "true" : "false");
                     } else {
                       bad_verb(verb, v);
                     }
                   },
                   [&](std::int64_t i) { fmt_int_verb(i, verb, v); },
                   [&](double d) { fmt_float_verb(d, verb, v); },
                   [&](const std::string& s) { fmt_string(s, verb, v); },
                   [&](const Html& h) { fmt_string(h.text, verb, v); },
                   [&](const LabelMap& m) {
                     if (m.labels) {
                       print_labels(*m.labels, verb);
                     } else {
                       buf += "map[]";
                     }
                   },
                   [&](const ArgMapPtr& m) {
                     buf += "map[";
                     if (m) {
                       for (std::size_t i = 0; i < m->entries.size(); ++i) {
                         if (i > 0) buf += ' ';
                         print_value(Value(m->entries[i].first), verb, depth + 1);
                         buf += ':';
                         print_value(m->entries[i].second, verb, depth + 1);
                       }
                     }
                     buf += ']';
                   },
                   [&](const SamplePtr& s) {
                     if (depth == 0 && s) {
                       buf += '&';
                       print_sample_struct(*s, verb, depth + 1);
                     } else {
                       fmt_pointer(v, verb == 'v' ? 'v' : verb);
                     }
                   },
                   [&](const SampleListPtr& l) {
                     buf += '[';
                     if (l) {
                       for (std::size_t i = 0; i < l->size(); ++i) {
                         if (i > 0) buf += ' ';
                         print_value(Value((*l)[i]), verb, depth + 1);
                       }
                     }
                     buf += ']';
                   },
                   [&](const DataRef& d) {
                     buf += '{';
                     if (f_.plus_v) buf += "Labels:";
                     print_labels(d.data->labels, verb);
                     buf += ' ';
                     if (f_.plus_v) buf += "ExternalLabels:";
                     print_labels(d.data->external_labels, verb);
                     buf += ' ';
                     if (f_.plus_v) buf += "ExternalURL:";
                     print_value(Value(d.data->external_url), verb, depth + 1);
                     buf += ' ';
                     if (f_.plus_v) buf += "Value:";
                     print_value(Value(d.data->value), verb, depth + 1);
                     buf += '}';
                   },
               },
               v);
  }

  void bad_verb(char32_t verb, const Value& v) {
    buf += "%!";
    append_utf8(buf, verb);
    buf += '(';
    if (std::holds_alternative<Nil>(v)) {
      buf += "<nil>";
    } else {
      buf += go_type_name(v);
      buf += '=';
      print_arg(v, 'v');
    }
    buf += ')';
  }

  static bool parse_num(std::string_view s, std::size_t& i, std::size_t end, int& num) {
    num = 0;
    bool is_num = false;
    for (; i < end && s[i] >= '0' && s[i] <= '9'; ++i) {
      if (num > 1000000) {
        i = end;
        num = 0;
        return false;
      }
      num = num * 10 + (s[i] - '0');
      is_num = true;
    }
    return is_num;
  }

  // fmt's [n] argument index.
  bool arg_number(std::size_t& arg_num, std::string_view format, std::size_t& i, std::size_t num_args) {
    if (i >= format.size() || format[i] != '[') return false;
    reordered_ = true;
    if (format.size() - i < 3) {
      ++i;
      good_arg_num_ = false;
      return false;
    }
    for (std::size_t j = i + 1; j < format.size(); ++j) {
      if (format[j] == ']') {
        std::size_t k = i + 1;
        int n = 0;
        const bool ok = parse_num(format, k, j, n) && k == j;
        i = j + 1;
        if (ok && n >= 1 && static_cast<std::size_t>(n - 1) < num_args) {
          arg_num = static_cast<std::size_t>(n - 1);
          return true;
        }
        good_arg_num_ = false;
        return ok;
      }
    }
    ++i;
    good_arg_num_ = false;
    return false;
  }

  static std::optional<int> int_from_arg(std::span<const Value> args, std::size_t& arg_num) {
    if (arg_num >= args.size()) return std::nullopt;
    const auto* i = std::get_if<std::int64_t>(&args[arg_num]);
    ++arg_num;
    if (i == nullptr || *i > 1000000 || *i < -1000000) return std::nullopt;
    return static_cast<int>(*i);
  }
};

void Printer::do_printf(std::string_view format, std::span<const Value> args) {
  const std::size_t end = format.size();
  std::size_t arg_num = 0;
  bool after_index = false;
  reordered_ = false;
  for (std::size_t i = 0; i < end;) {
    good_arg_num_ = true;
    const std::size_t last = i;
    while (i < end && format[i] != '%') ++i;
    if (i > last) buf.append(format.substr(last, i - last));
    if (i >= end) break;
    ++i;  // the '%'
    clear_flags();
    bool simple_done = false;
    for (; i < end; ++i) {
      const char c = format[i];
      if (c == '#') {
        f_.sharp = true;
      } else if (c == '0') {
        f_.zero = !f_.minus;
      } else if (c == '+') {
        f_.plus = true;
      } else if (c == '-') {
        f_.minus = true;
        f_.zero = false;
      } else if (c == ' ') {
        f_.space = true;
      } else {
        if (c >= 'a' && c <= 'z' && arg_num < args.size()) {
          if (c == 'v') {
            f_.sharp_v = f_.sharp;
            f_.sharp = false;
            f_.plus_v = f_.plus;
            f_.plus = false;
          }
          print_arg(args[arg_num], static_cast<char32_t>(c));
          ++arg_num;
          ++i;
          simple_done = true;
        }
        break;
      }
    }
    if (simple_done) continue;

    after_index = arg_number(arg_num, format, i, args.size());
    if (i < end && format[i] == '*') {
      ++i;
      const auto w = int_from_arg(args, arg_num);
      f_.wid_present = w.has_value();
      f_.wid = w.value_or(0);
      if (!f_.wid_present) buf += "%!(BADWIDTH)";
      if (f_.wid < 0) {
        f_.wid = -f_.wid;
        f_.minus = true;
        f_.zero = false;
      }
      after_index = false;
    } else {
      f_.wid_present = parse_num(format, i, end, f_.wid);
      if (after_index && f_.wid_present) good_arg_num_ = false;
    }
    if (i + 1 < end && format[i] == '.') {
      ++i;
      if (after_index) good_arg_num_ = false;
      after_index = arg_number(arg_num, format, i, args.size());
      if (i < end && format[i] == '*') {
        ++i;
        const auto p = int_from_arg(args, arg_num);
        f_.prec_present = p.has_value();
        f_.prec = p.value_or(0);
        if (f_.prec < 0) {
          f_.prec = 0;
          f_.prec_present = false;
        }
        if (!f_.prec_present) buf += "%!(BADPREC)";
        after_index = false;
      } else {
        f_.prec_present = parse_num(format, i, end, f_.prec);
        if (!f_.prec_present) {
          f_.prec = 0;
          f_.prec_present = true;
        }
      }
    }
    if (!after_index) after_index = arg_number(arg_num, format, i, args.size());
    if (i >= end) {
      buf += "%!(NOVERB)";
      break;
    }
    const Rune verb = decode_rune(format, i);
    i += static_cast<std::size_t>(verb.width);
    if (verb.r == '%') {
      buf += '%';
    } else if (!good_arg_num_) {
      buf += "%!";
      append_utf8(buf, verb.r);
      buf += "(BADINDEX)";
    } else if (arg_num >= args.size()) {
      buf += "%!";
      append_utf8(buf, verb.r);
      buf += "(MISSING)";
    } else {
      if (verb.r == 'v') {
        f_.sharp_v = f_.sharp;
        f_.sharp = false;
        f_.plus_v = f_.plus;
        f_.plus = false;
      }
      print_arg(args[arg_num], verb.r);
      ++arg_num;
    }
  }
  if (!reordered_ && arg_num < args.size()) {
    clear_flags();
    buf += "%!(EXTRA ";
    for (std::size_t k = arg_num; k < args.size(); ++k) {
      if (k > arg_num) buf += ", ";
      if (std::holds_alternative<Nil>(args[k])) {
        buf += "<nil>";
      } else {
        buf += go_type_name(args[k]);
        buf += '=';
        print_arg(args[k], 'v');
      }
    }
    buf += ')';
  }
}

// text/template's evalArgs: a lone string as it is, anything else as fmt.Sprint prints it.
std::string eval_args(std::span<const Value> args) {
  if (args.size() == 1) {
    if (const auto* s = std::get_if<std::string>(&args[0])) return *s;
  }
  Printer p;
  p.do_print(args, true);
  return p.buf;
}

// ---------------------------------------------------------------------------------------------------------------
// Escapers.

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '\0': out += "\xEF\xBF\xBD"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string js_escape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '\\': out += "\\\\"; break;
        case '\'': out += "\\'"; break;
        case '"': out += "\\\""; break;
        case '<': out += "\\u003C"; break;
        case '>': out += "\\u003E"; break;
        case '&': out += "\\u0026"; break;
        case '=': out += "\\u003D"; break;
        default:
          if (c < ' ') {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    const Rune r = decode_rune(s, i);
    if (is_print(r.r)) {
      out.append(s.substr(i, static_cast<std::size_t>(r.width)));
    } else {
      out += fmt::format("\\u{:04X}", static_cast<std::uint32_t>(r.r));
    }
    i += static_cast<std::size_t>(r.width);
  }
  return out;
}

// url.QueryEscape: unreserved characters stay, a space becomes '+', every other byte %XX.
std::string query_escape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out += ch;
    } else if (c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// net.SplitHostPort / JoinHostPort / ParseIP.

struct HostPort {
  std::string host, port;
};

std::optional<HostPort> split_host_port(std::string_view hp) {
  const std::size_t i = hp.rfind(':');
  if (i == std::string_view::npos) return std::nullopt;
  std::size_t j = 0, k = 0;
  std::string_view host;
  if (!hp.empty() && hp[0] == '[') {
    const std::size_t end = hp.find(']');
    if (end == std::string_view::npos) return std::nullopt;
    if (end + 1 == hp.size() || end + 1 != i) return std::nullopt;
    host = hp.substr(1, end - 1);
    j = 1;
    k = end + 1;
  } else {
    host = hp.substr(0, i);
    if (host.find(':') != std::string_view::npos) return std::nullopt;
  }
  if (hp.substr(j).find('[') != std::string_view::npos) return std::nullopt;
  if (hp.substr(k).find(']') != std::string_view::npos) return std::nullopt;
  return HostPort{std::string(host), std::string(hp.substr(i + 1))};
}

bool is_ip(const std::string& host) {
  unsigned char addr[16];
  return inet_pton(AF_INET, host.c_str(), addr) == 1 || inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

std::string join_host_port(std::string_view host, std::string_view port) {
  if (host.find(':') != std::string_view::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

// ---------------------------------------------------------------------------------------------------------------
// Regular expressions: RE2 is the syntax Go's regexp implements; errors read like Go's.

std::string go_regexp_error(const re2::RE2& re) {
  std::string_view what = "regexp/syntax: internal error";
  switch (re.error_code()) {
    case re2::RE2::ErrorBadEscape: what = "invalid escape sequence"; break;
    case re2::RE2::ErrorBadCharClass: what = "invalid character class"; break;
    case re2::RE2::ErrorBadCharRange: what = "invalid character class range"; break;
    case re2::RE2::ErrorMissingBracket: what = "missing closing ]"; break;
    case re2::RE2::ErrorMissingParen: what = "missing closing )"; break;
    case re2::RE2::ErrorUnexpectedParen: what = "unexpected )"; break;
    case re2::RE2::ErrorTrailingBackslash: what = "trailing backslash at end of expression"; break;
    case re2::RE2::ErrorRepeatArgument: what = "missing argument to repetition operator"; break;
    case re2::RE2::ErrorRepeatSize: what = "invalid repeat count"; break;
    case re2::RE2::ErrorRepeatOp: what = "invalid nested repetition operator"; break;
    case re2::RE2::ErrorBadPerlOp: what = "invalid or unsupported Perl syntax"; break;
    case re2::RE2::ErrorBadUTF8: what = "invalid UTF-8"; break;
    case re2::RE2::ErrorBadNamedCapture: what = "invalid named capture"; break;
    case re2::RE2::ErrorPatternTooLarge: what = "expression too large"; break;
    default: break;
  }
  return fmt::format("error parsing regexp: {}: `{}`", what, re.error_arg());
}

std::unique_ptr<re2::RE2> compile_regexp(std::string_view pattern) {
  re2::RE2::Options options;
  options.set_log_errors(false);
  return std::make_unique<re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
}

// regexp.Regexp.Expand's template: $1, ${1}, $name, ${name}, $$; a malformed reference is literal text.
void expand_replacement(std::string& out, std::string_view repl, const re2::RE2& re,
                        const std::vector<re2::StringPiece>& groups) {
  auto is_name_char = [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           static_cast<unsigned char>(c) >= 0x80;
  };
  while (!repl.empty()) {
    const std::size_t dollar = repl.find('$');
    if (dollar == std::string_view::npos) break;
    out.append(repl.substr(0, dollar));
    repl.remove_prefix(dollar + 1);
    if (!repl.empty() && repl[0] == '$') {
      out += '$';
      repl.remove_prefix(1);
      continue;
    }
    const bool brace = !repl.empty() && repl[0] == '{';
    std::size_t k = brace ? 1 : 0;
    const std::size_t start = k;
    while (k < repl.size() && is_name_char(repl[k])) ++k;
    const std::string_view name = repl.substr(start, k - start);
    if (name.empty() || (brace && (k >= repl.size() || repl[k] != '}'))) {
      out += '$';
      continue;
    }
    repl.remove_prefix(brace ? k + 1 : k);
    int group = -1;
    if (std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      if (name.size() <= 8) group = std::stoi(std::string(name));
    } else {
      const auto& named = re.NamedCapturingGroups();
      if (auto it = named.find(std::string(name)); it != named.end()) group = it->second;
    }
    if (group >= 0 && static_cast<std::size_t>(group) < groups.size() && groups[static_cast<std::size_t>(group)].data()) {
      const auto& g = groups[static_cast<std::size_t>(group)];
      out.append(g.data(), g.size());
    }
  }
  out.append(repl);
}

// regexp.Regexp.ReplaceAllString: non-overlapping matches left to right; an empty match right after a
// previous match is not replaced.
std::string replace_all(const re2::RE2& re, std::string_view src, std::string_view repl) {
  const int n = re.NumberOfCapturingGroups() + 1;
  std::vector<re2::StringPiece> groups(static_cast<std::size_t>(n));
  const re2::StringPiece text(src.data(), src.size());
  std::string out;
  std::size_t last_end = 0, search = 0;
  while (search <= src.size()) {
    if (!re.Match(text, search, src.size(), re2::RE2::UNANCHORED, groups.data(), n)) break;
    const auto a0 = static_cast<std::size_t>(groups[0].data() - src.data());
    const std::size_t a1 = a0 + groups[0].size();
    out.append(src.substr(last_end, a0 - last_end));
    if (a1 > last_end || a0 == 0) expand_replacement(out, repl, re, groups);
    last_end = a1;
    const std::size_t width = search < src.size() ? static_cast<std::size_t>(decode_rune(src, search).width) : 0;
    if (search + width > a1) {
      search += width;
    } else if (search + 1 > a1) {
      ++search;
    } else {
      search = a1;
    }
  }
  out.append(src.substr(last_end));
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Prometheus's helpers.

std::string go_quote_for_error(std::string_view s) { return go_quote(s); }

// convertToFloat: float64, numeric strings and ints; anything else is an error.
std::expected<double, std::string> to_float(const Value& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* s = std::get_if<std::string>(&v)) return go_parse_float(*s);
  return std::unexpected(fmt::format("can't convert {} to float", go_type_name(v)));
}

std::string g4(double v) { return go_format_float(v, 'g', 4); }

std::string humanize(double v) {
  if (v == 0 || std::isnan(v) || std::isinf(v)) return g4(v);
  static constexpr std::array<const char*, 8> kBig = {"k", "M", "G", "T", "P", "E", "Z", "Y"};
  static constexpr std::array<const char*, 8> kSmall = {"m", "u", "n", "p", "f", "a", "z", "y"};
  std::string prefix;
  if (std::fabs(v) >= 1) {
    for (const char* p : kBig) {
      if (std::fabs(v) < 1000) break;
      prefix = p;
      v /= 1000;
    }
    return g4(v) + prefix;
  }
  for (const char* p : kSmall) {
    if (std::fabs(v) >= 1) break;
    prefix = p;
    v *= 1000;
  }
  return g4(v) + prefix;
}

std::string humanize1024(double v) {
  if (std::fabs(v) <= 1 || std::isnan(v) || std::isinf(v)) return g4(v);
  static constexpr std::array<const char*, 8> kPrefixes = {"ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"};
  std::string prefix;
  for (const char* p : kPrefixes) {
    if (std::fabs(v) < 1024) break;
    prefix = p;
    v /= 1024;
  }
  return g4(v) + prefix;
}

std::string humanize_duration(double v) {
  if (std::isnan(v) || std::isinf(v)) return g4(v);
  if (v == 0) return g4(v) + "s";
  if (std::fabs(v) >= 1) {
    std::string sign;
    if (v < 0) {
      sign = "-";
      v = -v;
    }
    // Go's int64(v) of a float too large for int64 is implementation-defined; saturate instead.
    const auto duration = v >= 9.2e18 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(v);
    const std::int64_t seconds = duration % 60;
    const std::int64_t minutes = (duration / 60) % 60;
    const std::int64_t hours = (duration / 60 / 60) % 24;
    const std::int64_t days = duration / 60 / 60 / 24;
    if (days != 0) return fmt::format("{}{}d {}h {}m {}s", sign, days, hours, minutes, seconds);
    if (hours != 0) return fmt::format("{}{}h {}m {}s", sign, hours, minutes, seconds);
    if (minutes != 0) return fmt::format("{}{}m {}s", sign, minutes, seconds);
    return sign + g4(v) + "s";
  }
  static constexpr std::array<const char*, 8> kSmall = {"m", "u", "n", "p", "f", "a", "z", "y"};
  std::string prefix;
  for (const char* p : kSmall) {
    if (std::fabs(v) >= 1) break;
    prefix = p;
    v *= 1000;
  }
  return g4(v) + prefix + "s";
}

// fmt.Sprint of a time.Time in UTC at Prometheus's millisecond resolution:
// "2015-06-23 13:19:44.128 +0000 UTC".
std::expected<std::string, std::string> humanize_timestamp(double v) {
  if (std::isnan(v) || std::isinf(v)) return g4(v);
  const double ns = v * 1e9;
  if (ns >= 9223372036854775807.0 || ns < -9223372036854775807.0 - 1) {
    return std::unexpected(fmt::format("{} cannot be represented as a nanoseconds timestamp since it overflows int64",
                                       go_format_float(v, 'g', -1)));
  }
  const std::int64_t ms = static_cast<std::int64_t>(ns) / 1000000;
  std::int64_t sec = ms / 1000;
  std::int64_t frac_ms = ms % 1000;
  if (frac_ms < 0) {
    frac_ms += 1000;
    --sec;
  }
  using namespace std::chrono;
  const sys_seconds tp{seconds{sec}};
  const auto day = floor<days>(tp);
  const year_month_day ymd{day};
  const hh_mm_ss<seconds> hms{tp - day};
  std::string out = fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", static_cast<int>(ymd.year()),
                                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), hms.hours().count(),
                                hms.minutes().count(), hms.seconds().count());
  if (frac_ms != 0) {
    std::string f = fmt::format("{:03}", frac_ms);
    while (f.back() == '0') f.pop_back();
    out += '.' + f;
  }
  return out + " +0000 UTC";
}

// model.ParseDuration (prometheus/common): units y w d h m s ms, biggest first, integers only.
std::expected<double, std::string> parse_duration(std::string_view s) {
  if (s == "0") return 0.0;
  if (s.empty()) return std::unexpected(std::string("empty duration string"));
  struct Unit {
    std::string_view name;
    int pos;
    std::uint64_t ns;
  };
  static constexpr std::uint64_t kMs = 1000000, kS = 1000 * kMs, kM = 60 * kS, kH = 60 * kM, kD = 24 * kH;
  static constexpr std::array<Unit, 7> kUnits = {Unit{"y", 1, 365 * kD}, Unit{"w", 2, 7 * kD}, Unit{"d", 3, kD},
                                                 Unit{"h", 4, kH},       Unit{"m", 5, kM},     Unit{"s", 6, kS},
                                                 Unit{"ms", 7, kMs}};
  const auto invalid = [&] { return std::unexpected(fmt::format("not a valid duration string: {}", go_quote(s))); };
  const std::string_view orig = s;
  std::uint64_t total = 0;
  int last_pos = 0;
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  while (!s.empty()) {
    if (!is_digit(s[0])) return invalid();
    std::size_t i = 0;
    while (i < s.size() && is_digit(s[i])) ++i;
    std::uint64_t n = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + i, n);
    if (ec != std::errc() || ptr != s.data() + i) return invalid();
    s.remove_prefix(i);
    i = 0;
    while (i < s.size() && !is_digit(s[i])) ++i;
    if (i == 0) return invalid();
    const std::string_view unit_name = s.substr(0, i);
    s.remove_prefix(i);
    const auto unit = std::find_if(kUnits.begin(), kUnits.end(), [&](const Unit& u) { return u.name == unit_name; });
    if (unit == kUnits.end()) {
      return std::unexpected(fmt::format("unknown unit {} in duration {}", go_quote(unit_name), go_quote(orig)));
    }
    if (unit->pos <= last_pos) return invalid();
    last_pos = unit->pos;
    constexpr std::uint64_t kLimit = std::uint64_t{1} << 63;
    if (n > kLimit / unit->ns) return std::unexpected(std::string("duration out of range"));
    total += n * unit->ns;
    if (total > kLimit - 1) return std::unexpected(std::string("duration out of range"));
  }
  return static_cast<double>(total) / 1e9;
}

// The path of a URL, percent-decoded, as Go's url.URL.Path.
std::string url_path(std::string_view url) {
  std::size_t start = 0;
  if (const std::size_t scheme = url.find("://"); scheme != std::string_view::npos) {
    start = url.find('/', scheme + 3);
    if (start == std::string_view::npos) return "";
  }
  std::string_view path = url.substr(start);
  path = path.substr(0, path.find_first_of("?#"));
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size() && hex_value(path[i + 1]) >= 0 && hex_value(path[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(path[i + 1]) * 16 + hex_value(path[i + 2]));
      i += 2;
    } else {
      out += path[i];
    }
  }
  return out;
}

const std::string& str(const Value& v) { return std::get<std::string>(v); }

constexpr std::string_view kNilDereference = "runtime error: invalid memory address or nil pointer dereference";

// ---------------------------------------------------------------------------------------------------------------
// Go's builtins.

enum class BasicKind { kInvalid, kBool, kInt, kFloat, kString };

BasicKind basic_kind(const Value& v) {
  if (std::holds_alternative<bool>(v)) return BasicKind::kBool;
  if (std::holds_alternative<std::int64_t>(v)) return BasicKind::kInt;
  if (std::holds_alternative<double>(v)) return BasicKind::kFloat;
  if (std::holds_alternative<std::string>(v) || std::holds_alternative<Html>(v)) return BasicKind::kString;
  return BasicKind::kInvalid;
}

std::string_view string_of(const Value& v) {
  if (const auto* h = std::get_if<Html>(&v)) return h->text;
  return std::get<std::string>(v);
}

bool is_nil(const Value& v) {
  if (std::holds_alternative<Nil>(v)) return true;
  if (const auto* s = std::get_if<SamplePtr>(&v)) return *s == nullptr;
  if (const auto* l = std::get_if<SampleListPtr>(&v)) return *l == nullptr;
  if (const auto* m = std::get_if<ArgMapPtr>(&v)) return *m == nullptr;
  return false;
}

std::string sprint_v(const Value& v) {
  Printer p;
  p.print_arg(v, 'v');
  return p.buf;
}

std::expected<bool, std::string> equal(const Value& a, const Value& b) {
  const BasicKind k1 = basic_kind(a), k2 = basic_kind(b);
  if (k1 != k2) {
    if (!std::holds_alternative<Nil>(a) && !std::holds_alternative<Nil>(b)) {
      return std::unexpected(
          fmt::format("incompatible types for comparison: {} and {}", go_type_name(a), go_type_name(b)));
    }
    return false;
  }
  switch (k1) {
    case BasicKind::kBool: return std::get<bool>(a) == std::get<bool>(b);
    case BasicKind::kInt: return std::get<std::int64_t>(a) == std::get<std::int64_t>(b);
    case BasicKind::kFloat: return std::get<double>(a) == std::get<double>(b);
    case BasicKind::kString: return string_of(a) == string_of(b);
    case BasicKind::kInvalid: break;
  }
  // Neither is a basic kind: Go compares nils, pointers, and rejects maps, slices and structs.
  const bool same_kind = a.index() == b.index() || std::holds_alternative<Nil>(a) || std::holds_alternative<Nil>(b);
  if (!same_kind) {
    return std::unexpected(fmt::format("non-comparable types {}: {}, {}: {}", sprint_v(a), go_type_name(a),
                                       go_type_name(b), sprint_v(b)));
  }
  if (is_nil(a) || is_nil(b)) return is_nil(a) == is_nil(b);
  if (const auto* s = std::get_if<SamplePtr>(&a)) return s->get() == std::get<SamplePtr>(b).get();
  return std::unexpected(fmt::format("non-comparable type {}: {}", sprint_v(b), go_type_name(b)));
}

std::expected<bool, std::string> less(const Value& a, const Value& b) {
  const BasicKind k1 = basic_kind(a), k2 = basic_kind(b);
  if (k1 == BasicKind::kInvalid || k2 == BasicKind::kInvalid) {
    return std::unexpected(std::string("invalid type for comparison"));
  }
  if (k1 != k2) {
    return std::unexpected(
        fmt::format("incompatible types for comparison: {} and {}", go_type_name(a), go_type_name(b)));
  }
  switch (k1) {
    case BasicKind::kInt: return std::get<std::int64_t>(a) < std::get<std::int64_t>(b);
    case BasicKind::kFloat: return std::get<double>(a) < std::get<double>(b);
    case BasicKind::kString: return string_of(a) < string_of(b);
    default: return std::unexpected(std::string("invalid type for comparison"));
  }
}

using Result = std::expected<Value, std::string>;

Result fn_not(const CallEnv&, std::vector<Value>& a) { return Value(!go_truth(a[0])); }

Result fn_eq(const CallEnv&, std::vector<Value>& a) {
  if (a.size() < 2) return std::unexpected(std::string("missing argument for comparison"));
  for (std::size_t i = 1; i < a.size(); ++i) {
    auto r = equal(a[0], a[i]);
    if (!r) return std::unexpected(r.error());
    if (*r) return Value(true);
  }
  return Value(false);
}

Result fn_ne(const CallEnv&, std::vector<Value>& a) {
  auto r = equal(a[0], a[1]);
  if (!r) return std::unexpected(r.error());
  return Value(!*r);
}

Result fn_lt(const CallEnv&, std::vector<Value>& a) {
  auto r = less(a[0], a[1]);
  if (!r) return std::unexpected(r.error());
  return Value(*r);
}

Result fn_le(const CallEnv&, std::vector<Value>& a) {
  auto r = less(a[0], a[1]);
  if (!r) return std::unexpected(r.error());
  if (*r) return Value(true);
  auto e = equal(a[0], a[1]);
  if (!e) return std::unexpected(e.error());
  return Value(*e);
}

Result fn_gt(const CallEnv& env, std::vector<Value>& a) {
  auto r = fn_le(env, a);
  if (!r) return r;
  return Value(!std::get<bool>(*r));
}

Result fn_ge(const CallEnv&, std::vector<Value>& a) {
  auto r = less(a[0], a[1]);
  if (!r) return std::unexpected(r.error());
  return Value(!*r);
}

Result fn_len(const CallEnv&, std::vector<Value>& a) {
  const Value& v = a[0];
  if (std::holds_alternative<Nil>(v)) return std::unexpected(std::string("reflect: call of reflect.Value.Type on zero Value"));
  if (const auto* s = std::get_if<SamplePtr>(&v)) {
    if (!*s) return std::unexpected(std::string("len of nil pointer"));
    return std::unexpected(std::string("len of type template.sample"));
  }
  if (std::holds_alternative<std::string>(v) || std::holds_alternative<Html>(v)) {
    return Value(static_cast<std::int64_t>(string_of(v).size()));
  }
  if (const auto* m = std::get_if<LabelMap>(&v)) return Value(static_cast<std::int64_t>(m->labels ? m->labels->size() : 0));
  if (const auto* m = std::get_if<ArgMapPtr>(&v)) return Value(static_cast<std::int64_t>(*m ? (*m)->entries.size() : 0));
  if (const auto* l = std::get_if<SampleListPtr>(&v)) return Value(static_cast<std::int64_t>(*l ? (*l)->size() : 0));
  return std::unexpected(fmt::format("len of type {}", go_type_name(v)));
}

std::expected<std::int64_t, std::string> index_arg(const Value& index, std::size_t cap) {
  if (std::holds_alternative<Nil>(index)) return std::unexpected(std::string("cannot index slice/array with nil"));
  const auto* i = std::get_if<std::int64_t>(&index);
  if (i == nullptr) return std::unexpected(fmt::format("cannot index slice/array with type {}", go_type_name(index)));
  if (*i < 0 || static_cast<std::uint64_t>(*i) > cap) return std::unexpected(fmt::format("index out of range: {}", *i));
  return *i;
}

std::expected<std::string, std::string> map_key(const Value& index) {
  if (std::holds_alternative<Nil>(index)) return std::string();
  if (const auto* s = std::get_if<std::string>(&index)) return *s;
  return std::unexpected(fmt::format("value has type {}; should be string", go_type_name(index)));
}

Result fn_index(const CallEnv&, std::vector<Value>& a) {
  Value item = a[0];
  if (std::holds_alternative<Nil>(item)) return std::unexpected(std::string("index of untyped nil"));
  for (std::size_t k = 1; k < a.size(); ++k) {
    const Value& index = a[k];
    if (const auto* s = std::get_if<SamplePtr>(&item)) {
      if (!*s) return std::unexpected(std::string("index of nil pointer"));
      return std::unexpected(std::string("can't index item of type template.sample"));
    }
    if (std::holds_alternative<std::string>(item) || std::holds_alternative<Html>(item)) {
      const std::string_view s = string_of(item);
      auto x = index_arg(index, s.size());
      if (!x) return std::unexpected(x.error());
      if (static_cast<std::size_t>(*x) == s.size()) return std::unexpected(std::string("reflect: string index out of range"));
      item = Value(static_cast<std::int64_t>(static_cast<unsigned char>(s[static_cast<std::size_t>(*x)])));
    } else if (const auto* l = std::get_if<SampleListPtr>(&item)) {
      const std::size_t n = *l ? (*l)->size() : 0;
      auto x = index_arg(index, n);
      if (!x) return std::unexpected(x.error());
      if (static_cast<std::size_t>(*x) == n) return std::unexpected(std::string("reflect: slice index out of range"));
      item = Value((**l)[static_cast<std::size_t>(*x)]);
    } else if (const auto* m = std::get_if<LabelMap>(&item)) {
      auto key = map_key(index);
      if (!key) return std::unexpected(key.error());
      item = Value(std::string(m->labels ? m->labels->get(*key) : std::string_view()));
    } else if (const auto* am = std::get_if<ArgMapPtr>(&item)) {
      auto key = map_key(index);
      if (!key) return std::unexpected(key.error());
      Value found = Nil{};
      if (*am) {
        for (const auto& [name, value] : (*am)->entries) {
          if (name == *key) found = value;
        }
      }
      item = found;
    } else {
      return std::unexpected(fmt::format("can't index item of type {}", go_type_name(item)));
    }
  }
  return item;
}

Result fn_slice(const CallEnv&, std::vector<Value>& a) {
  const Value& item = a[0];
  if (std::holds_alternative<Nil>(item)) return std::unexpected(std::string("slice of untyped nil"));
  const std::size_t nidx = a.size() - 1;
  if (nidx > 3) return std::unexpected(fmt::format("too many slice indexes: {}", nidx));
  std::size_t len = 0;
  const bool is_string = std::holds_alternative<std::string>(item);
  if (is_string) {
    if (nidx == 3) return std::unexpected(std::string("cannot 3-index slice a string"));
    len = str(item).size();
  } else if (const auto* l = std::get_if<SampleListPtr>(&item)) {
    len = *l ? (*l)->size() : 0;
  } else {
    return std::unexpected(fmt::format("can't slice item of type {}", go_type_name(item)));
  }
  std::array<std::size_t, 3> idx = {0, len, 0};
  for (std::size_t k = 0; k < nidx; ++k) {
    auto x = index_arg(a[k + 1], len);
    if (!x) return std::unexpected(x.error());
    idx[k] = static_cast<std::size_t>(*x);
  }
  if (idx[0] > idx[1]) return std::unexpected(fmt::format("invalid slice index: {} > {}", idx[0], idx[1]));
  if (nidx == 3 && idx[1] > idx[2]) return std::unexpected(fmt::format("invalid slice index: {} > {}", idx[1], idx[2]));
  if (is_string) return Value(str(item).substr(idx[0], idx[1] - idx[0]));
  const auto& list = std::get<SampleListPtr>(item);
  auto out = std::make_shared<SampleList>();
  if (list) out->assign(list->begin() + static_cast<std::ptrdiff_t>(idx[0]), list->begin() + static_cast<std::ptrdiff_t>(idx[1]));
  return Value(out);
}

Result fn_print(const CallEnv&, std::vector<Value>& a) { return Value(go_sprint(a)); }
Result fn_println(const CallEnv&, std::vector<Value>& a) { return Value(go_sprintln(a)); }
Result fn_printf(const CallEnv&, std::vector<Value>& a) {
  return Value(go_sprintf(str(a[0]), std::span<const Value>(a).subspan(1)));
}
Result fn_html(const CallEnv&, std::vector<Value>& a) { return Value(html_escape(eval_args(a))); }
Result fn_js(const CallEnv&, std::vector<Value>& a) { return Value(js_escape(eval_args(a))); }
Result fn_urlquery(const CallEnv&, std::vector<Value>& a) { return Value(query_escape(eval_args(a))); }

// ---------------------------------------------------------------------------------------------------------------
// Prometheus's functions.

Result fn_query(const CallEnv& env, std::vector<Value>& a) {
  if (env.query == nullptr || !*env.query) {
    return std::unexpected(std::string("no PromQL engine is available to this template"));
  }
  auto samples = (*env.query)(str(a[0]));
  if (!samples) return std::unexpected(samples.error());
  auto list = std::make_shared<SampleList>();
  list->reserve(samples->size());
  for (auto& s : *samples) list->push_back(std::make_shared<const Sample>(Sample{std::move(s.labels), s.value}));
  return Value(list);
}

Result fn_first(const CallEnv&, std::vector<Value>& a) {
  const auto& list = std::get<SampleListPtr>(a[0]);
  if (!list || list->empty()) return std::unexpected(std::string("first() called on vector with no elements"));
  return Value(list->front());
}

Result fn_label(const CallEnv&, std::vector<Value>& a) {
  const auto& s = std::get<SamplePtr>(a[1]);
  if (!s) return std::unexpected(std::string(kNilDereference));
  return Value(std::string(s->labels.get(str(a[0]))));
}

Result fn_value(const CallEnv&, std::vector<Value>& a) {
  const auto& s = std::get<SamplePtr>(a[0]);
  if (!s) return std::unexpected(std::string(kNilDereference));
  return Value(s->value);
}

Result fn_strvalue(const CallEnv&, std::vector<Value>& a) {
  const auto& s = std::get<SamplePtr>(a[0]);
  if (!s) return std::unexpected(std::string(kNilDereference));
  return Value(std::string(s->labels.get("__value__")));
}

Result fn_args(const CallEnv&, std::vector<Value>& a) {
  auto m = std::make_shared<ArgMap>();
  for (std::size_t i = 0; i < a.size(); ++i) m->entries.emplace_back(fmt::format("arg{}", i), a[i]);
  std::sort(m->entries.begin(), m->entries.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  return Value(ArgMapPtr(std::move(m)));
}

Result fn_re_replace_all(const CallEnv&, std::vector<Value>& a) {
  const auto re = compile_regexp(str(a[0]));
  if (!re->ok()) {
    const std::string& p = str(a[0]);
    return std::unexpected(
        fmt::format("regexp: Compile({}): {}", can_backquote(p) ? "`" + p + "`" : go_quote(p), go_regexp_error(*re)));
  }
  return Value(replace_all(*re, str(a[2]), str(a[1])));
}

Result fn_safe_html(const CallEnv&, std::vector<Value>& a) { return Value(Html{str(a[0])}); }

Result fn_match(const CallEnv&, std::vector<Value>& a) {
  const auto re = compile_regexp(str(a[0]));
  if (!re->ok()) return std::unexpected(go_regexp_error(*re));
  const std::string& s = str(a[1]);
  return Value(re2::RE2::PartialMatch(re2::StringPiece(s.data(), s.size()), *re));
}

Result fn_title(const CallEnv&, std::vector<Value>& a) { return Value(title_case(str(a[0]))); }
Result fn_to_upper(const CallEnv&, std::vector<Value>& a) { return Value(map_runes(str(a[0]), to_upper_rune)); }
Result fn_to_lower(const CallEnv&, std::vector<Value>& a) { return Value(map_runes(str(a[0]), to_lower_rune)); }

Result fn_graph_link(const CallEnv&, std::vector<Value>& a) {
  return Value(fmt::format("/graph?g0.expr={}&g0.tab=0", query_escape(str(a[0]))));
}
Result fn_table_link(const CallEnv&, std::vector<Value>& a) {
  return Value(fmt::format("/graph?g0.expr={}&g0.tab=1", query_escape(str(a[0]))));
}

Result fn_sort_by_label(const CallEnv&, std::vector<Value>& a) {
  const std::string& label = str(a[0]);
  const auto& list = std::get<SampleListPtr>(a[1]);
  if (list) {
    for (const auto& s : *list) {
      if (!s) return std::unexpected(std::string(kNilDereference));
    }
    std::stable_sort(list->begin(), list->end(),
                     [&](const SamplePtr& x, const SamplePtr& y) { return x->labels.get(label) < y->labels.get(label); });
  }
  return Value(list);
}

Result fn_strip_port(const CallEnv&, std::vector<Value>& a) {
  const auto hp = split_host_port(str(a[0]));
  return Value(hp ? hp->host : str(a[0]));
}

Result fn_strip_domain(const CallEnv&, std::vector<Value>& a) {
  const std::string& in = str(a[0]);
  const auto hp = split_host_port(in);
  std::string host = hp ? hp->host : in;
  const std::string port = hp ? hp->port : std::string();
  if (is_ip(host)) return Value(in);
  host = host.substr(0, host.find('.'));
  if (!port.empty()) return Value(join_host_port(host, port));
  return Value(host);
}

template <std::string (*F)(double)>
Result numeric(const CallEnv&, std::vector<Value>& a) {
  auto v = to_float(a[0]);
  if (!v) return std::unexpected(v.error());
  return Value(F(*v));
}

std::string humanize_percentage(double v) { return g4(v * 100) + "%"; }

Result fn_humanize_timestamp(const CallEnv&, std::vector<Value>& a) {
  auto v = to_float(a[0]);
  if (!v) return std::unexpected(v.error());
  auto s = humanize_timestamp(*v);
  if (!s) return std::unexpected(s.error());
  return Value(*s);
}

Result fn_path_prefix(const CallEnv& env, std::vector<Value>&) { return Value(url_path(env.data->external_url)); }
Result fn_external_url(const CallEnv& env, std::vector<Value>&) { return Value(env.data->external_url); }

Result fn_parse_duration(const CallEnv&, std::vector<Value>& a) {
  auto d = parse_duration(str(a[0]));
  if (!d) return std::unexpected(d.error());
  return Value(*d);
}

const std::vector<Function>& function_table() {
  using P = Param;
  static const std::vector<Function> table = {
      // Go's builtins (text/template/funcs.go).
      {"and", {P::kAny, P::kAny}, true, nullptr, Special::kAnd},
      {"or", {P::kAny, P::kAny}, true, nullptr, Special::kOr},
      {"not", {P::kAny}, false, fn_not},
      {"call", {P::kAny, P::kAny}, true, nullptr, Special::kCall},
      {"len", {P::kAny}, false, fn_len},
      {"index", {P::kAny, P::kAny}, true, fn_index},
      {"slice", {P::kAny, P::kAny}, true, fn_slice},
      {"print", {P::kAny}, true, fn_print},
      {"printf", {P::kString, P::kAny}, true, fn_printf},
      {"println", {P::kAny}, true, fn_println},
      {"html", {P::kAny}, true, fn_html},
      {"js", {P::kAny}, true, fn_js},
      {"urlquery", {P::kAny}, true, fn_urlquery},
      {"eq", {P::kAny, P::kAny}, true, fn_eq},
      {"ne", {P::kAny, P::kAny}, false, fn_ne},
      {"lt", {P::kAny, P::kAny}, false, fn_lt},
      {"le", {P::kAny, P::kAny}, false, fn_le},
      {"gt", {P::kAny, P::kAny}, false, fn_gt},
      {"ge", {P::kAny, P::kAny}, false, fn_ge},
      // Prometheus's (template/template.go).
      {"query", {P::kString}, false, fn_query},
      {"first", {P::kSampleList}, false, fn_first},
      {"label", {P::kString, P::kSample}, false, fn_label},
      {"value", {P::kSample}, false, fn_value},
      {"strvalue", {P::kSample}, false, fn_strvalue},
      {"args", {P::kAny}, true, fn_args},
      {"reReplaceAll", {P::kString, P::kString, P::kString}, false, fn_re_replace_all},
      {"safeHtml", {P::kString}, false, fn_safe_html},
      {"match", {P::kString, P::kString}, false, fn_match},
      {"title", {P::kString}, false, fn_title},
      {"toUpper", {P::kString}, false, fn_to_upper},
      {"toLower", {P::kString}, false, fn_to_lower},
      {"graphLink", {P::kString}, false, fn_graph_link},
      {"tableLink", {P::kString}, false, fn_table_link},
      {"sortByLabel", {P::kString, P::kSampleList}, false, fn_sort_by_label},
      {"stripPort", {P::kString}, false, fn_strip_port},
      {"stripDomain", {P::kString}, false, fn_strip_domain},
      {"humanize", {P::kAny}, false, numeric<humanize>},
      {"humanize1024", {P::kAny}, false, numeric<humanize1024>},
      {"humanizeDuration", {P::kAny}, false, numeric<humanize_duration>},
      {"humanizePercentage", {P::kAny}, false, numeric<humanize_percentage>},
      {"humanizeTimestamp", {P::kAny}, false, fn_humanize_timestamp},
      {"pathPrefix", {}, false, fn_path_prefix},
      {"externalURL", {}, false, fn_external_url},
      {"parseDuration", {P::kString}, false, fn_parse_duration},
  };
  return table;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------

std::string go_type_name(const Value& v) {
  return std::visit(Overloaded{
                        [](const Nil&) -> std::string { return "<nil>"; },
                        [](bool) -> std::string { return "bool"; },
                        [](std::int64_t) -> std::string { return "int"; },
                        [](double) -> std::string { return "float64"; },
                        [](const std::string&) -> std::string { return "string"; },
                        [](const Html&) -> std::string { return "template.HTML"; },
                        [](const LabelMap&) -> std::string { return "map[string]string"; },
                        [](const ArgMapPtr&) -> std::string { return "map[string]interface {}"; },
                        [](const SamplePtr&) -> std::string { return "*template.sample"; },
                        [](const SampleListPtr&) -> std::string { return "template.queryResult"; },
                        [](const DataRef&) -> std::string { return std::string(kStructType); },
                    },
                    v);
}

bool go_truth(const Value& v) {
  return std::visit(Overloaded{
                        [](const Nil&) { return false; },
                        [](bool b) { return b; },
                        [](std::int64_t i) { return i != 0; },
                        [](double d) { return d != 0; },
                        [](const std::string& s) { return !s.empty(); },
                        [](const Html& h) { return !h.text.empty(); },
                        [](const LabelMap& m) { return m.labels && !m.labels->empty(); },
                        [](const ArgMapPtr& m) { return m && !m->entries.empty(); },
                        [](const SamplePtr& s) { return s != nullptr; },
                        [](const SampleListPtr& l) { return l && !l->empty(); },
                        [](const DataRef&) { return true; },
                    },
                    v);
}

std::string go_template_print(const Value& v) {
  if (std::holds_alternative<Nil>(v)) return "<no value>";
  Printer p;
  if (const auto* s = std::get_if<SamplePtr>(&v); s != nullptr && *s != nullptr) {
    p.print_sample_struct(**s, 'v', 1);
  } else {
    p.print_arg(v, 'v');
  }
  return p.buf;
}

std::string go_sprint(std::span<const Value> args) {
  Printer p;
  p.do_print(args, false);
  return p.buf;
}

std::string go_sprintln(std::span<const Value> args) {
  Printer p;
  p.do_println(args);
  return p.buf;
}

std::string go_sprintf(std::string_view format, std::span<const Value> args) {
  Printer p;
  p.do_printf(format, args);
  return p.buf;
}

std::string go_format_float(double v, char verb, int prec) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Room for 309 integer digits, the precision's digits, sign, point and exponent.
  std::string buf(static_cast<std::size_t>(340 + std::max(prec, 0)), '\0');
  char* const first = buf.data();
  char* const last = first + buf.size();
  const bool upper = verb == 'E' || verb == 'G';
  const char lower_verb = static_cast<char>(verb | 0x20);
  std::to_chars_result r{};
  if (lower_verb == 'e') {
    r = prec < 0 ? std::to_chars(first, last, v, std::chars_format::scientific)
                 : std::to_chars(first, last, v, std::chars_format::scientific, prec);
  } else if (lower_verb == 'f') {
    r = prec < 0 ? std::to_chars(first, last, v, std::chars_format::fixed)
                 : std::to_chars(first, last, v, std::chars_format::fixed, prec);
  } else if (prec >= 0) {
    // With a precision Go's %g and C's %g agree: same rounding, same exponent threshold, no trailing zeros.
    r = std::to_chars(first, last, v, std::chars_format::general, prec == 0 ? 1 : prec);
  } else {
    // Shortest %g: Go switches to an exponent below 1e-4 and from 1e+06 on (C++'s shortest general does not).
    r = std::to_chars(first, last, v, std::chars_format::scientific);
    const std::string_view sci(first, static_cast<std::size_t>(r.ptr - first));
    const int exp = std::stoi(std::string(sci.substr(sci.find('e') + 1)));
    if (exp >= -4 && exp < 6) r = std::to_chars(first, last, v, std::chars_format::fixed);
  }
  buf.resize(static_cast<std::size_t>(r.ptr - first));
  if (upper) std::replace(buf.begin(), buf.end(), 'e', 'E');
  return buf;
}

std::string go_quote(std::string_view s) { return quote_with(s, '"', false); }

std::expected<std::string, std::string> go_unquote(std::string_view lit) {
  const std::unexpected<std::string> invalid(std::string("invalid syntax"));
  if (lit.size() < 2 || lit.front() != lit.back()) return invalid;
  const char q = lit.front();
  const std::string_view body = lit.substr(1, lit.size() - 2);
  if (q == '`') {
    if (body.find('`') != std::string_view::npos) return invalid;
    std::string out;
    for (char c : body) {
      if (c != '\r') out += c;
    }
    return out;
  }
  if (q != '"' || body.find('\n') != std::string_view::npos) return invalid;
  std::string out;
  for (std::size_t i = 0; i < body.size();) {
    const auto c = unquote_char(body, i, q);
    if (!c) return invalid;
    if (c->multibyte) {
      append_utf8(out, c->value);
    } else {
      out += static_cast<char>(c->value);
    }
    i = c->next;
  }
  return out;
}

std::expected<char32_t, std::string> go_unquote_char(std::string_view lit) {
  if (lit.size() < 2 || lit.front() != '\'') return std::unexpected(std::string("invalid syntax"));
  const auto c = unquote_char(lit, 1, '\'');
  if (!c) return std::unexpected(std::string("invalid syntax"));
  if (lit.substr(c->next) != "'") return std::unexpected(fmt::format("malformed character constant: {}", lit));
  return c->value;
}

std::expected<double, std::string> go_parse_float(std::string_view s) {
  const auto syntax = [&] {
    return std::unexpected(fmt::format("strconv.ParseFloat: parsing {}: invalid syntax", go_quote_for_error(s)));
  };
  if (s.empty()) return syntax();
  // Infinity and NaN, case-insensitively; only infinity takes a sign.
  {
    std::string_view t = s;
    double sign = 1;
    const bool has_sign = t[0] == '+' || t[0] == '-';
    if (has_sign) {
      if (t[0] == '-') sign = -1;
      t.remove_prefix(1);
    }
    if (iequals_prefix(t, "inf") || iequals_prefix(t, "infinity")) return sign * std::numeric_limits<double>::infinity();
    if (!has_sign && iequals_prefix(t, "nan")) return std::numeric_limits<double>::quiet_NaN();
  }
  std::string_view t = s;
  bool negative = false;
  if (t[0] == '+' || t[0] == '-') {
    negative = t[0] == '-';
    t.remove_prefix(1);
  }
  const bool hex = t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
  if (hex) t.remove_prefix(2);
  // Check Go's float syntax and drop the digit-separating underscores.
  std::string clean;
  bool mantissa_digits = false, point = false, exponent = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '_') continue;
    const bool digit = hex ? hex_value(c) >= 0 : (c >= '0' && c <= '9');
    if (!exponent && digit) {
      mantissa_digits = true;
    } else if (!exponent && c == '.' && !point) {
      point = true;
    } else if (!exponent && (hex ? (c == 'p' || c == 'P') : (c == 'e' || c == 'E'))) {
      exponent = true;
      clean += c;
      if (i + 1 < t.size() && (t[i + 1] == '+' || t[i + 1] == '-')) clean += t[++i];
      if (i + 1 >= t.size()) return syntax();
      continue;
    } else if (!(exponent && c >= '0' && c <= '9')) {
      return syntax();
    }
    clean += c;
  }
  if (!mantissa_digits || (hex && !exponent)) return syntax();
  if (s.find('_') != std::string_view::npos && !underscore_ok(s)) return syntax();
  double value = 0;
  const auto format = hex ? std::chars_format::hex : std::chars_format::general;
  const auto [ptr, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), value, format);
  if (ptr != clean.data() + clean.size()) return syntax();
  if (ec == std::errc::result_out_of_range) {
    // Overflow is an error (Go returns ±Inf with it); underflow is a quiet zero.
    const std::size_t e = clean.find_first_of(hex ? "pP" : "eE");
    const std::string_view mantissa = std::string_view(clean).substr(0, e);
    const std::size_t first_nonzero = mantissa.find_first_not_of("0.");
    const std::size_t point_pos = std::min(mantissa.find('.'), mantissa.size());
    long exp10 = e == std::string::npos ? 0 : std::strtol(clean.c_str() + e + 1, nullptr, 10);
    if (first_nonzero != std::string_view::npos) {
      exp10 += first_nonzero < point_pos ? static_cast<long>(point_pos - first_nonzero)
                                         : -static_cast<long>(first_nonzero - point_pos) + 1;
    }
    if (first_nonzero != std::string_view::npos && exp10 > 0) {
      return std::unexpected(fmt::format("strconv.ParseFloat: parsing {}: value out of range", go_quote_for_error(s)));
    }
    value = 0;
  } else if (ec != std::errc()) {
    return syntax();
  }
  return negative ? -value : value;
}

std::expected<std::uint64_t, std::string> go_parse_uint(std::string_view s) {
  const std::unexpected<std::string> syntax(std::string("invalid syntax"));
  if (s.empty()) return syntax;
  std::string_view t = s;
  int base = 10;
  if (t[0] == '0') {
    if (t.size() >= 3 && (t[1] == 'x' || t[1] == 'X')) {
      base = 16;
      t.remove_prefix(2);
    } else if (t.size() >= 3 && (t[1] == 'o' || t[1] == 'O')) {
      base = 8;
      t.remove_prefix(2);
    } else if (t.size() >= 3 && (t[1] == 'b' || t[1] == 'B')) {
      base = 2;
      t.remove_prefix(2);
    } else {
      base = 8;
      t.remove_prefix(1);
      if (t.empty()) return 0;
    }
  }
  std::uint64_t n = 0;
  bool underscores = false;
  for (char c : t) {
    if (c == '_') {
      underscores = true;
      continue;
    }
    const int d = hex_value(c);
    if (d < 0 || d >= base) return syntax;
    if (n > (std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(d)) / static_cast<std::uint64_t>(base)) {
      return std::unexpected(std::string("value out of range"));
    }
    n = n * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
  }
  if (underscores && !underscore_ok(s)) return syntax;
  return n;
}

std::expected<std::int64_t, std::string> go_parse_int(std::string_view s) {
  if (s.empty()) return std::unexpected(std::string("invalid syntax"));
  bool negative = false;
  std::string_view t = s;
  if (t[0] == '+' || t[0] == '-') {
    negative = t[0] == '-';
    t.remove_prefix(1);
  }
  auto u = go_parse_uint(t);
  if (!u) return std::unexpected(u.error());
  constexpr std::uint64_t kCutoff = std::uint64_t{1} << 63;
  if (!negative && *u >= kCutoff) return std::unexpected(std::string("value out of range"));
  if (negative && *u > kCutoff) return std::unexpected(std::string("value out of range"));
  return negative ? static_cast<std::int64_t>(~*u + 1) : static_cast<std::int64_t>(*u);
}

std::pair<char32_t, int> go_decode_rune(std::string_view s, std::size_t i) {
  const Rune r = decode_rune(s, i);
  return {r.r, r.width};
}

std::string go_unicode(char32_t r) {
  std::string out = fmt::format("U+{:04X}", static_cast<std::uint32_t>(r));
  if (is_print(r)) {
    out += " '";
    append_utf8(out, r);
    out += '\'';
  }
  return out;
}

bool go_is_alphanumeric(char32_t r) { return r == '_' || (r != kRuneError && is_letter_or_digit(r)); }

std::string_view param_type_name(Param p) {
  switch (p) {
    case Param::kAny: return "interface {}";
    case Param::kString: return "string";
    case Param::kSample: return "*template.sample";
    case Param::kSampleList: return "template.queryResult";
  }
  return "?";
}

const Function* find_function(std::string_view name) {
  for (const auto& f : function_table()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace gpuscope::rules::template_internal
