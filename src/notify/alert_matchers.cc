#include "notify/alert_matchers.h"

#include <fmt/format.h>

namespace gpuscope::notify {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_name_char(char c, bool first) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  return letter || (!first && c >= '0' && c <= '9');
}

std::expected<std::string, std::string> unquote(std::string_view quoted) {
  std::string out;
  for (std::size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c == '"') return std::unexpected("unescaped '\"' inside a quoted value");
    if (c == '\\') {
      if (i + 2 >= quoted.size()) return std::unexpected("a quoted value ends with a lone backslash");
      c = quoted[++i];
      if (c == 'n') {
        c = '\n';
      } else if (c == 't') {
        c = '\t';
      } else if (c != '"' && c != '\\') {
        return std::unexpected(fmt::format("unknown escape \\{} in a quoted value", c));
      }
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::expected<store::LabelMatcher, std::string> parse_alert_matcher(std::string_view text) {
  std::string_view s = trim(text);
  std::size_t n = 0;
  while (n < s.size() && is_name_char(s[n], n == 0)) ++n;
  if (n == 0) return std::unexpected(fmt::format("bad matcher \"{}\": expected a label name first", text));
  const std::string name(s.substr(0, n));
  s = trim(s.substr(n));
  store::LabelMatcher::Op op;
  if (s.starts_with("=~")) {
    op = store::LabelMatcher::Op::kRegex;
    s.remove_prefix(2);
  } else if (s.starts_with("!~")) {
    op = store::LabelMatcher::Op::kNotRegex;
    s.remove_prefix(2);
  } else if (s.starts_with("!=")) {
    op = store::LabelMatcher::Op::kNotEqual;
    s.remove_prefix(2);
  } else if (s.starts_with("=")) {
    op = store::LabelMatcher::Op::kEqual;
    s.remove_prefix(1);
  } else {
    return std::unexpected(fmt::format("bad matcher \"{}\": expected =, !=, =~ or !~ after \"{}\"", text, name));
  }
  s = trim(s);
  std::string value(s);
  if (s.starts_with('"')) {
    if (s.size() < 2 || !s.ends_with('"')) return std::unexpected(fmt::format("bad matcher \"{}\": unterminated quoted value", text));
    auto unquoted = unquote(s);
    if (!unquoted) return std::unexpected(fmt::format("bad matcher \"{}\": {}", text, unquoted.error()));
    value = std::move(*unquoted);
  }
  auto matcher = store::LabelMatcher::make(op, name, value);
  if (!matcher) return std::unexpected(fmt::format("bad matcher \"{}\": {}", text, matcher.error()));
  return matcher;
}

bool matches_all(const std::vector<store::LabelMatcher>& matchers, const store::Labels& labels) {
  for (const auto& m : matchers) {
    if (!m.matches(labels.get(m.name()))) return false;
  }
  return true;
}

std::string matchers_text(const std::vector<store::LabelMatcher>& matchers) {
  std::string out = "{";
  for (std::size_t i = 0; i < matchers.size(); ++i) {
    if (i > 0) out += ',';
    out += matchers[i].to_string();
  }
  out += '}';
  return out;
}

}  // namespace gpuscope::notify
