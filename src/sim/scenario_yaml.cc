#include "sim/scenario_yaml.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "sim/units.h"

namespace gpuscope::sim::scenario_yaml {

int line_of(const YAML::Node& n) {
  const YAML::Mark mark = n.Mark();
  return mark.line >= 0 ? mark.line + 1 : 0;
}

void fail(const YAML::Node& at, std::string message) { throw ParseFailure{line_of(at), std::move(message)}; }

std::string join(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

Map::Map(const YAML::Node& node, std::string_view where, std::initializer_list<std::string_view> known) : node_(node) {
  if (!node.IsMap()) fail(node, std::string(where) + " must be a mapping (key: value lines)");
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) fail(it->first, "keys in " + std::string(where) + " must be plain words");
    const std::string key = it->first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      fail(it->first, "unknown key '" + key + "' in " + std::string(where) + " (known: " + join(known) + ")");
    }
    entries_.emplace_back(key, it->second);
  }
}

std::optional<YAML::Node> Map::get(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) {
      if (v.IsNull()) return std::nullopt;
      return v;
    }
  }
  return std::nullopt;
}

YAML::Node Map::require(std::string_view key, std::string_view where) const {
  auto v = get(key);
  if (!v) fail(node_, std::string(where) + " needs '" + std::string(key) + "'");
  return *v;
}

std::string scalar(const YAML::Node& n, std::string_view what) {
  if (!n.IsScalar()) fail(n, std::string(what) + " must be a single value");
  return n.Scalar();
}

std::uint64_t uinteger(const YAML::Node& n, std::string_view what, std::uint64_t min, std::uint64_t max) {
  const std::string s = scalar(n, what);
  std::uint64_t v = 0;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const char* begin = s.data() + (hex ? 2 : 0);
  const auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), v, hex ? 16 : 10);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && ptr == s.data() + s.size() && (v < min || v > max))) {
    fail(n, std::string(what) + " " + s + " out of range (" + std::to_string(min) + "-" + std::to_string(max) + ")");
  }
  if (ec != std::errc{} || ptr != s.data() + s.size() || s.empty()) {
    fail(n, std::string(what) + " must be a whole number, not '" + s + "'");
  }
  return v;
}

double number(const YAML::Node& n, std::string_view what, double min, double max) {
  const std::string s = scalar(n, what);
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size() || s.empty()) {
    fail(n, std::string(what) + " must be a number, not '" + s + "'");
  }
  if (!(v >= min && v <= max)) {
    std::ostringstream range;
    range << min << "-" << max;
    fail(n, std::string(what) + " " + s + " out of range (" + range.str() + ")");
  }
  return v;
}

bool boolean(const YAML::Node& n, std::string_view what) {
  const std::string s = scalar(n, what);
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail(n, std::string(what) + " must be true or false, not '" + s + "'");
}

namespace {

template <class F>
double quantity(const YAML::Node& n, std::string_view what, F parse) {
  const std::string s = scalar(n, what);
  auto v = parse(s);
  if (!v) fail(n, std::string(what) + ": " + v.error());
  return *v;
}

}  // namespace

double duration(const YAML::Node& n, std::string_view what) { return quantity(n, what, parse_duration); }
double size(const YAML::Node& n, std::string_view what) { return quantity(n, what, parse_size); }
double rate(const YAML::Node& n, std::string_view what) { return quantity(n, what, parse_rate); }
double power(const YAML::Node& n, std::string_view what) { return quantity(n, what, parse_power); }

}  // namespace gpuscope::sim::scenario_yaml
