// LabelMatcher: one `name op "value"` term of a series selector (=, !=, =~, !~). Regexes are RE2, the
// syntax Prometheus uses (Go's regexp), and match the whole value, as Prometheus anchors them. A regex
// that is only literals joined by `|` (`a|b|c`, as the diagnosis asks for its series) is matched as a
// set of strings without compiling RE2, as Prometheus's FastRegexMatcher does: the same answers, without
// RE2's parser, compiler and DFA cache in a process that needs no other regex.
#pragma once

#include <expected>
#include <memory>
#include <string>
#include <string_view>

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
  // Whether a regex is matched as a set of literal strings, with no RE2 compiled (false for = and !=).
  bool literal_set() const;
  // `name="value"` as Prometheus prints a matcher.
  std::string to_string() const;

 private:
  struct Regex;  // a compiled RE2, or the literal alternatives
  LabelMatcher(Op op, std::string name, std::string value, std::shared_ptr<const Regex> re)
      : op_(op), name_(std::move(name)), value_(std::move(value)), re_(std::move(re)) {}
  Op op_;
  std::string name_;
  std::string value_;
  std::shared_ptr<const Regex> re_;  // shared: matchers are copied into plans freely
};

}  // namespace gpuscope::store
