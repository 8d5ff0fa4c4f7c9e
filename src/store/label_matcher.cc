#include "store/label_matcher.h"

#include <re2/re2.h>

#include <fmt/format.h>

namespace gpuscope::store {

std::expected<LabelMatcher, std::string> LabelMatcher::make(Op op, std::string name, std::string value) {
  std::shared_ptr<const re2::RE2> re;
  if (op == Op::kRegex || op == Op::kNotRegex) {
    re2::RE2::Options options;
    options.set_log_errors(false);
    options.set_dot_nl(true);  // Prometheus compiles with (?s): '.' matches a newline too
    auto compiled = std::make_shared<re2::RE2>("^(?:" + value + ")$", options);
    if (!compiled->ok()) return std::unexpected(fmt::format("invalid regular expression \"{}\": {}", value, compiled->error()));
    re = std::move(compiled);
  }
  return LabelMatcher(op, std::move(name), std::move(value), std::move(re));
}

bool LabelMatcher::matches(std::string_view label_value) const {
  switch (op_) {
    case Op::kEqual: return label_value == value_;
    case Op::kNotEqual: return label_value != value_;
    case Op::kRegex: return re2::RE2::FullMatch(re2::StringPiece(label_value.data(), label_value.size()), *re_);
    case Op::kNotRegex: return !re2::RE2::FullMatch(re2::StringPiece(label_value.data(), label_value.size()), *re_);
  }
  return false;
}

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
