#include "store/label_matcher.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <re2/re2.h>

#include <fmt/format.h>

namespace gpuscope::store {

struct LabelMatcher::Regex {
  std::unique_ptr<const re2::RE2> re2;  // null when `literals` holds the regex
  std::vector<std::string> literals;    // sorted alternatives

  bool full_match(std::string_view s) const {
    if (re2) return re2::RE2::FullMatch(re2::StringPiece(s.data(), s.size()), *re2);
    return std::binary_search(literals.begin(), literals.end(), s);
  }
};

namespace {

// The alternatives of a regex made only of ASCII literals and `|`, or nothing when any byte could mean
// more than itself (a metacharacter, an escape, or a non-ASCII byte RE2 would check as UTF-8).
// Anchored and with (?s), such a regex matches exactly the strings it lists, the empty one included
// when an alternative is empty.
std::optional<std::vector<std::string>> literal_alternatives(std::string_view value) {
  static constexpr std::string_view kMeta = "\\.+*?()[]{}^$";
  std::vector<std::string> out(1);
  for (char c : value) {
    if (static_cast<unsigned char>(c) >= 0x80 || kMeta.find(c) != std::string_view::npos) return std::nullopt;
    if (c == '|') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::expected<LabelMatcher, std::string> LabelMatcher::make(Op op, std::string name, std::string value) {
  std::shared_ptr<Regex> re;
  if (op == Op::kRegex || op == Op::kNotRegex) {
    re = std::make_shared<Regex>();
    if (auto literals = literal_alternatives(value)) {
      re->literals = std::move(*literals);
    } else {
      re2::RE2::Options options;
      options.set_log_errors(false);
      options.set_dot_nl(true);  // Prometheus compiles with (?s): '.' matches a newline too
      auto compiled = std::make_unique<re2::RE2>("^(?:" + value + ")$", options);
      if (!compiled->ok()) {
        return std::unexpected(fmt::format("invalid regular expression \"{}\": {}", value, compiled->error()));
      }
      re->re2 = std::move(compiled);
    }
  }
  return LabelMatcher(op, std::move(name), std::move(value), std::move(re));
}

bool LabelMatcher::matches(std::string_view label_value) const {
  switch (op_) {
    case Op::kEqual: return label_value == value_;
    case Op::kNotEqual: return label_value != value_;
    case Op::kRegex: return re_->full_match(label_value);
    case Op::kNotRegex: return !re_->full_match(label_value);
  }
  return false;
}

bool LabelMatcher::literal_set() const { return re_ && !re_->re2; }

std::string LabelMatcher::to_string() const {
  static constexpr const char* kOps[] = {"=", "!=", "=~", "!~"};
  std::string escaped;
  for (char c : value_) {
    if (c == '\\' || c == '"') escaped += '\\';
    if (c == '\n') {
      escaped += "\\n";
      continue;
    }
    escaped += c;
  }
  return fmt::format("{}{}\"{}\"", name_, kOps[static_cast<int>(op_)], escaped);
}

}  // namespace gpuscope::store
