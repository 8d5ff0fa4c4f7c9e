// to_string(const Expr&): Prometheus's canonical rendering (promql/parser/printer.go), so that
// printed queries read as promtool and the HTTP API print them and parse back to the same tree.
#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "promql/ast.h"
#include "promql/functions.h"
#include "promql/lexer.h"
#include "promql/parser.h"

namespace gpuscope::promql {

namespace {

bool is_legacy_label_name(std::string_view s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Go's strconv.FormatFloat(v, 'f', -1, 64): the shortest digits that read back exactly.
std::string format_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[400];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  if (ec != std::errc()) return fmt::format("{}", v);
  return std::string(buf, end);
}

std::string label_name(std::string_view name) { return is_legacy_label_name(name) ? std::string(name) : go_quote(name); }

std::string label_list(const std::vector<std::string>& labels) {
  std::string out;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ", ";
    out += label_name(labels[i]);
  }
  return out;
}

std::string matcher_text(const store::LabelMatcher& m) {
  static constexpr const char* kOps[] = {"=", "!=", "=~", "!~"};
  return label_name(m.name()) + kOps[static_cast<int>(m.op())] + go_quote(m.value());
}

std::string at_text(const AtModifier& at) {
  switch (at.kind) {
    case AtModifier::Kind::kTime: return fmt::format(" @ {:.3f}", static_cast<double>(at.t_ms) / 1000.0);
    case AtModifier::Kind::kStart: return " @ start()";
    case AtModifier::Kind::kEnd: return " @ end()";
    case AtModifier::Kind::kNone: break;
  }
  return "";
}

std::string offset_text(std::int64_t offset_ms) {
  if (offset_ms == 0) return "";
  return " offset " + format_duration(offset_ms);
}

// The selector without its @ and offset (a matrix selector prints those after the range).
std::string selector_body(const VectorSelector& s) {
  std::vector<std::string> parts;
  for (const auto& m : s.matchers) {
    // The name written before the braces is printed there, not as a matcher.
    if (m.name() == "__name__" && m.op() == store::LabelMatcher::Op::kEqual && m.value() == s.name && !s.name.empty()) continue;
    parts.push_back(matcher_text(m));
  }
  std::sort(parts.begin(), parts.end());
  std::string out = s.name;
  if (!parts.empty()) {
    out += '{';
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) out += ',';
      out += parts[i];
    }
    out += '}';
  }
  return out;
}

struct Printer {
  std::string operator()(const NumberLiteral& n) const { return format_number(n.value); }
  std::string operator()(const StringLiteral& s) const { return go_quote(s.value); }
  std::string operator()(const VectorSelector& s) const { return selector_body(s) + at_text(s.at) + offset_text(s.offset_ms); }
  std::string operator()(const MatrixSelector& m) const {
    const auto& s = *m.vector_selector->as<VectorSelector>();
    std::string out = selector_body(s) + "[" + format_duration(m.range_ms) + "]";
    if (m.anchored) out += " anchored";
    if (m.smoothed) out += " smoothed";
    return out + at_text(s.at) + offset_text(s.offset_ms);
  }
  std::string operator()(const SubqueryExpr& q) const {
    return to_string(*q.expr) + "[" + format_duration(q.range_ms) + ":" + (q.step_ms != 0 ? format_duration(q.step_ms) : "") +
           "]" + at_text(q.at) + offset_text(q.offset_ms);
  }
  // fmt::format rather than `"(" + s`: g++ 12 misreports the latter under -Wrestrict.
  std::string operator()(const ParenExpr& p) const { return fmt::format("({})", to_string(*p.expr)); }
  std::string operator()(const UnaryExpr& u) const {
    return fmt::format("{}{}", u.op == UnaryOp::kMinus ? '-' : '+', to_string(*u.expr));
  }
  std::string operator()(const BinaryExpr& b) const {
    std::string out = to_string(*b.lhs) + " " + binary_op_text(b.op);
    if (b.return_bool) out += " bool";
    if (b.matching) {
      const VectorMatching& m = *b.matching;
      const bool grouped = m.card == Cardinality::kManyToOne || m.card == Cardinality::kOneToMany;
      if (!m.matching_labels.empty() || m.on || grouped) {
        out += fmt::format(" {} ({})", m.on ? "on" : "ignoring", label_list(m.matching_labels));
      }
      if (grouped) {
        out += fmt::format(" {} ({})", m.card == Cardinality::kManyToOne ? "group_left" : "group_right", label_list(m.include));
      }
    }
    return out + " " + to_string(*b.rhs);
  }
  std::string operator()(const AggregateExpr& a) const {
    std::string out = aggregate_op_text(a.op);
    if (a.without) {
      out += " without (" + label_list(a.grouping) + ") ";
    } else if (!a.grouping.empty()) {
      out += " by (" + label_list(a.grouping) + ") ";
    }
    out += "(";
    if (a.param) out += to_string(*a.param) + ", ";
    return out + (a.expr ? to_string(*a.expr) : "") + ")";
  }
  std::string operator()(const Call& c) const {
    std::string out = c.func != nullptr ? std::string(c.func->name) : std::string("<unknown>");
    out += "(";
    for (std::size_t i = 0; i < c.args.size(); ++i) {
      if (i > 0) out += ", ";
      out += to_string(*c.args[i]);
    }
    return out + ")";
  }
};

}  // namespace

// Years and weeks only when they divide the duration exactly, as model.Duration prints them.
std::string format_duration(std::int64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  struct Unit {
    const char* name;
    std::int64_t ms;
    bool exact;
  };
  static constexpr Unit kUnits[] = {{"y", 365LL * 24 * 3600 * 1000, true}, {"w", 7LL * 24 * 3600 * 1000, true},
                                    {"d", 24LL * 3600 * 1000, false},      {"h", 3600LL * 1000, false},
                                    {"m", 60LL * 1000, false},             {"s", 1000, false},
                                    {"ms", 1, false}};
  for (const auto& u : kUnits) {
    if (u.exact && ms % u.ms != 0) continue;
    if (const std::int64_t v = ms / u.ms; v > 0) {
      out += fmt::format("{}{}", v, u.name);
      ms -= v * u.ms;
    }
  }
  return out;
}


std::string to_string(const Expr& e) { return std::visit(Printer{}, e.node); }

}  // namespace gpuscope::promql
