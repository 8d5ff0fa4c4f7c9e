#include "promql/series_notation.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "promql/lexer.h"

namespace gpuscope::promql {
namespace {

bool is_label_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool is_label_char(char c) { return is_label_start(c) || std::isdigit(static_cast<unsigned char>(c)); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_decimal_digit(char c) { return c >= '0' && c <= '9'; }

// Reads a line left to right; every error names the 1-based column it was found at.
class SeriesLineReader {
 public:
  explicit SeriesLineReader(std::string_view text) : text_(text) {}

  std::expected<store::Labels, std::string> read_labels() {
    skip_spaces();
    std::vector<store::Label> labels;
    std::set<std::string> seen;
    std::size_t start_pos = pos_;
    auto add = [&](std::string name, std::string value, std::size_t at) -> std::expected<void, std::string> {
      if (!seen.insert(name).second) return std::unexpected(error_at(at, fmt::format("label \"{}\" given twice", name)));
      labels.push_back({std::move(name), std::move(value)});
      return {};
    };
    if (!at_end() && is_label_start(peek())) {
      std::size_t start = pos_;
      if (auto added = add(std::string(store::kMetricNameLabel), read_identifier(), start); !added) {
        return std::unexpected(added.error());
      }
    }
    if (!at_end() && peek() == '{') {
      if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '{') {
        return std::unexpected(error_at(pos_, "unsupported: native histogram samples ({{...}})"));
      }
      ++pos_;
      while (true) {
        skip_spaces();
        if (at_end()) return std::unexpected(error_at(pos_, "unterminated label set, expected '}'"));
        if (peek() == '}') {
          ++pos_;
          break;
        }
        std::size_t item_start = pos_;
        std::string name;
        bool quoted_name = false;
        if (is_quote(peek())) {
          auto unquoted = read_quoted();
          if (!unquoted) return std::unexpected(unquoted.error());
          name = std::move(*unquoted);
          quoted_name = true;
        } else if (is_label_start(peek())) {
          name = read_identifier();
        } else {
          return std::unexpected(error_at(pos_, fmt::format("unexpected '{}' in label set, expected a label name", peek())));
        }
        skip_spaces();
        if (!at_end() && peek() == '=') {
          ++pos_;
          skip_spaces();
          if (at_end() || !is_quote(peek())) {
            return std::unexpected(error_at(pos_, fmt::format("expected a quoted value for label \"{}\"", name)));
          }
          auto value = read_quoted();
          if (!value) return std::unexpected(value.error());
          if (auto added = add(std::move(name), std::move(*value), item_start); !added) {
            return std::unexpected(added.error());
          }
        } else if (quoted_name) {
          // Prometheus 3 writes a metric name that is not a valid identifier as a lone quoted string.
          if (auto added = add(std::string(store::kMetricNameLabel), std::move(name), item_start); !added) {
            return std::unexpected(added.error());
          }
        } else {
          return std::unexpected(error_at(pos_, fmt::format("expected '=' after label name \"{}\"", name)));
        }
        skip_spaces();
        if (at_end()) return std::unexpected(error_at(pos_, "unterminated label set, expected '}'"));
        if (peek() == ',') {
          ++pos_;
        } else if (peek() != '}') {
          return std::unexpected(error_at(pos_, fmt::format("unexpected '{}' in label set, expected ',' or '}}'", peek())));
        }
      }
    }
    if (pos_ == start_pos) return std::unexpected(error_at(pos_, "expected a metric name or a label set"));
    return store::Labels(std::move(labels));
  }

  std::expected<std::vector<SeriesPoint>, std::string> read_points() {
    std::vector<SeriesPoint> points;
    if (!at_end() && !is_space(peek())) {
      return std::unexpected(error_at(pos_, fmt::format("unexpected '{}' after the labels, expected a space", peek())));
    }
    while (true) {
      skip_spaces();
      if (at_end()) break;
      auto item = read_item(points);
      if (!item) return std::unexpected(item.error());
      if (!at_end() && !is_space(peek())) {
        return std::unexpected(error_at(pos_, fmt::format("unexpected '{}' in series values", peek())));
      }
    }
    return points;
  }

  bool at_end() const { return pos_ >= text_.size(); }

  std::expected<std::string, std::string> read_string_literal() {
    skip_spaces();
    if (at_end() || !is_quote(peek())) return std::unexpected(error_at(pos_, "expected a quoted string"));
    auto value = read_quoted();
    if (!value) return value;
    skip_spaces();
    if (!at_end()) return std::unexpected(error_at(pos_, "unexpected text after the quoted string"));
    return value;
  }

 private:
  char peek() const { return text_[pos_]; }
  void skip_spaces() {
    while (!at_end() && is_space(peek())) ++pos_;
  }
  static bool is_quote(char c) { return c == '"' || c == '\'' || c == '`'; }

  std::string error_at(std::size_t at, std::string_view what) const {
    return fmt::format("column {}: {}", at + 1, what);
  }

  std::string read_identifier() {
    std::size_t start = pos_;
    while (!at_end() && is_label_char(peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // A quoted string as PromQL writes it (Go's rules: backquoted raw, or single/double quoted with
  // escapes). Only its end is found here; PromQL's own lexer checks the escapes and unquotes it.
  std::expected<std::string, std::string> read_quoted() {
    const std::size_t start = pos_;
    const char quote = peek();
    ++pos_;
    while (true) {
      if (at_end() || (peek() == '\n' && quote != '`')) return std::unexpected(error_at(start, "unterminated quoted string"));
      const char c = peek();
      ++pos_;
      if (c == quote) break;
      if (c == '\\' && quote != '`' && !at_end()) ++pos_;
    }
    const std::string_view literal = text_.substr(start, pos_ - start);
    const auto tokens = lex(literal);
    if (tokens.empty() || tokens[0].kind != TokenKind::kString || tokens[0].text != literal) {
      const std::string why = !tokens.empty() && tokens[0].kind == TokenKind::kError ? tokens[0].error : "invalid quoted string";
      return std::unexpected(error_at(start, why));
    }
    return unquote_string(literal);
  }

  // An unsigned number: digits with optional fraction and exponent, or Inf / NaN (any case).
  std::optional<double> read_unsigned_number() {
    std::size_t start = pos_;
    if (!at_end() && std::isalpha(static_cast<unsigned char>(peek()))) {
      std::size_t end = pos_;
      while (end < text_.size() && is_label_char(text_[end])) ++end;
      std::string word(text_.substr(pos_, end - pos_));
      for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (word == "inf") {
        pos_ = end;
        return std::numeric_limits<double>::infinity();
      }
      if (word == "nan") {
        pos_ = end;
        return std::numeric_limits<double>::quiet_NaN();
      }
      return std::nullopt;
    }
    while (!at_end() && is_decimal_digit(peek())) ++pos_;
    if (!at_end() && peek() == '.') {
      ++pos_;
      while (!at_end() && is_decimal_digit(peek())) ++pos_;
    }
    if (pos_ == start || (pos_ == start + 1 && text_[start] == '.')) {
      pos_ = start;
      return std::nullopt;
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      std::size_t exponent_at = pos_;
      ++pos_;
      if (!at_end() && (peek() == '+' || peek() == '-')) ++pos_;
      if (at_end() || !is_decimal_digit(peek())) {
        pos_ = exponent_at;  // "1e" is not a number; leave the 'e' to be reported
      } else {
        while (!at_end() && is_decimal_digit(peek())) ++pos_;
      }
    }
    double value = 0;
    auto [ptr, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, value);
    if (ec == std::errc::result_out_of_range) {
      // Go's ParseFloat gives ±Inf or 0 for out-of-range literals; from_chars leaves value untouched.
      value = std::strtod(std::string(text_.substr(start, pos_ - start)).c_str(), nullptr);
    } else if (ec != std::errc() || ptr != text_.data() + pos_) {
      pos_ = start;
      return std::nullopt;
    }
    return value;
  }

  std::optional<double> read_signed_number() {
    std::size_t start = pos_;
    double sign = 1;
    if (!at_end() && (peek() == '+' || peek() == '-')) {
      sign = peek() == '-' ? -1 : 1;
      ++pos_;
    }
    auto v = read_unsigned_number();
    if (!v) {
      pos_ = start;
      return std::nullopt;
    }
    return sign * *v;
  }

  std::expected<std::uint64_t, std::string> read_repeat_count() {
    std::size_t start = pos_;
    ++pos_;  // the 'x'
    std::size_t digits_at = pos_;
    while (!at_end() && is_decimal_digit(peek())) ++pos_;
    std::uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(text_.data() + digits_at, text_.data() + pos_, n);
    if (pos_ == digits_at || ec != std::errc() || ptr != text_.data() + pos_) {
      return std::unexpected(error_at(start, "expected a repeat count after 'x'"));
    }
    // Every position becomes a sample; a typo like x1000000000 should fail, not exhaust memory.
    if (n > 10'000'000) return std::unexpected(error_at(start, "repeat count too large"));
    return n;
  }

  std::expected<void, std::string> read_item(std::vector<SeriesPoint>& points) {
    std::size_t start = pos_;
    char c = peek();
    if (c == '{') {
      if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '{') {
        return std::unexpected(error_at(start, "unsupported: native histogram samples ({{...}})"));
      }
      return std::unexpected(error_at(start, "unexpected '{' in series values"));
    }
    if (c == '_') {
      ++pos_;
      std::uint64_t n = 1;
      if (!at_end() && peek() == 'x') {
        auto count = read_repeat_count();
        if (!count) return std::unexpected(count.error());
        n = *count;
      }
      points.insert(points.end(), n, SeriesPoint{SeriesPoint::Kind::kMissing, 0});
      return {};
    }
    if (std::isalpha(static_cast<unsigned char>(c))) {
      std::size_t end = pos_;
      while (end < text_.size() && is_label_char(text_[end])) ++end;
      std::string_view word = text_.substr(pos_, end - pos_);
      if (word == "stale") {
        pos_ = end;
        points.push_back({SeriesPoint::Kind::kStale, 0});
        return {};
      }
    }
    auto first = read_signed_number();
    if (!first) {
      std::size_t end = pos_;
      while (end < text_.size() && !is_space(text_[end])) ++end;
      return std::unexpected(error_at(start, fmt::format("invalid series value \"{}\"", text_.substr(pos_, end - pos_))));
    }
    if (at_end() || is_space(peek())) {
      points.push_back({SeriesPoint::Kind::kValue, *first});
      return {};
    }
    double increment = 0;
    if (peek() == '+' || peek() == '-') {
      std::size_t increment_at = pos_;
      auto step = read_signed_number();
      if (!step) return std::unexpected(error_at(increment_at, "expected a number after '+' or '-'"));
      increment = *step;
      if (at_end() || peek() != 'x') {
        return std::unexpected(error_at(pos_, "expected 'x<count>' after the increment"));
      }
    }
    if (peek() != 'x') return std::unexpected(error_at(pos_, fmt::format("unexpected '{}' in series value", peek())));
    auto count = read_repeat_count();
    if (!count) return std::unexpected(count.error());
    // N+1 values: the first plus N repetitions. Summing step by step, as Prometheus does, keeps
    // rounding identical to the values it expects.
    double value = *first;
    for (std::uint64_t i = 0; i <= *count; ++i) {
      points.push_back({SeriesPoint::Kind::kValue, value});
      value += increment;
    }
    return {};
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

std::expected<SeriesDescription, std::string> parse_series_description(std::string_view line) {
  SeriesLineReader reader(line);
  auto labels = reader.read_labels();
  if (!labels) return std::unexpected(labels.error());
  auto points = reader.read_points();
  if (!points) return std::unexpected(points.error());
  return SeriesDescription{std::move(*labels), std::move(*points)};
}

std::expected<store::Labels, std::string> parse_series_labels(std::string_view text) {
  SeriesLineReader reader(text);
  auto labels = reader.read_labels();
  if (!labels) return std::unexpected(labels.error());
  auto rest = reader.read_points();
  if (!rest) return std::unexpected(rest.error());
  if (!rest->empty()) return std::unexpected(std::string("unexpected values after the labels"));
  return labels;
}

std::expected<std::string, std::string> unquote_string_literal(std::string_view quoted) {
  return SeriesLineReader(quoted).read_string_literal();
}

std::vector<store::Sample> expand_samples(const std::vector<SeriesPoint>& points, std::int64_t start_ms,
                                          std::int64_t step_ms) {
  std::vector<store::Sample> samples;
  samples.reserve(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::int64_t t = start_ms + static_cast<std::int64_t>(i) * step_ms;
    switch (points[i].kind) {
      case SeriesPoint::Kind::kValue: samples.push_back({t, points[i].value}); break;
      case SeriesPoint::Kind::kStale: samples.push_back({t, store::stale_marker()}); break;
      case SeriesPoint::Kind::kMissing: break;
    }
  }
  return samples;
}

}  // namespace gpuscope::promql
