// LabelMatcher: one `name op "value"` term of a series selector (=, !=, =~, !~). Regexes are RE2, the
// syntax Prometheus uses (Go's regexp), and match the whole value, as Prometheus anchors them.
#pragma once

#include <expected>
#include <memory>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace gpuscope::store {

class LabelMatcher {
 public:
  enum class Op { kEqual, kNotEqual, kRegex, kNotRegex };

  // Fails with RE2's message when a regex does not compile.
  static std::expected<LabelMatcher, std::string> make(Op op, std::string name, std::string value);

  Op op() const { return op_; }
  const std::string& name() const { return name_; }
  const std::string& value() const { return value_; }
  // Whether a label value (the empty string for an absent label) is matched.
  bool matches(std::string_view label_value) const;
  // Whether the empty string matches (such a matcher also selects series without the label).
  bool matches_empty() const { return matches(""); }
  // `name="value"` as Prometheus prints a matcher.
  std::string to_string() const;

 private:
  LabelMatcher(Op op, std::string name, std::string value, std::shared_ptr<const re2::RE2> re)
      : op_(op), name_(std::move(name)), value_(std::move(value)), re_(std::move(re)) {}
  Op op_;
  std::string name_;
  std::string value_;
  std::shared_ptr<const re2::RE2> re_;  // shared: matchers are copied into plans freely
};

}  // namespace gpuscope::store
