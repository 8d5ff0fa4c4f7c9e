// Checked reading of a simulator scenario's YAML: a mapping that allows only the keys the schema names
// at that place, typed scalars (whole numbers, numbers in a range, booleans, durations, sizes, rates,
// powers), and failures that carry the line they point at. yaml-cpp reports problems by throwing, so
// these throw ParseFailure too; parse_scenario() is the one place that turns one into a value.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscope::sim::scenario_yaml {

struct ParseFailure {
  int line;  // 1-based; 0 when unknown
  std::string message;
};

// The 1-based line of a node, 0 when yaml-cpp does not know it.
int line_of(const YAML::Node& n);
[[noreturn]] void fail(const YAML::Node& at, std::string message);

// "a, b, c"
std::string join(std::span<const std::string_view> names);
inline std::string join(std::initializer_list<std::string_view> names) {
  return join(std::span<const std::string_view>(names.begin(), names.size()));
}

// A YAML mapping whose keys were checked against what the schema allows at that place.
class Map {
 public:
  Map(const YAML::Node& node, std::string_view where, std::initializer_list<std::string_view> known);

  // The value under `key`; absent when the key is missing or its value is null (`key:` alone).
  std::optional<YAML::Node> get(std::string_view key) const;
  bool has(std::string_view key) const { return get(key).has_value(); }
  YAML::Node require(std::string_view key, std::string_view where) const;
  const YAML::Node& node() const { return node_; }

 private:
  YAML::Node node_;
  std::vector<std::pair<std::string, YAML::Node>> entries_;
};

// Each names the value as `what` in its failure.
std::string scalar(const YAML::Node& n, std::string_view what);
std::uint64_t uinteger(const YAML::Node& n, std::string_view what, std::uint64_t min, std::uint64_t max);  // 0x.. too
double number(const YAML::Node& n, std::string_view what, double min, double max);
bool boolean(const YAML::Node& n, std::string_view what);  // true/yes/on, false/no/off
double duration(const YAML::Node& n, std::string_view what);  // seconds
double size(const YAML::Node& n, std::string_view what);      // bytes
double rate(const YAML::Node& n, std::string_view what);      // bytes a second
double power(const YAML::Node& n, std::string_view what);     // watts

}  // namespace gpuscope::sim::scenario_yaml
