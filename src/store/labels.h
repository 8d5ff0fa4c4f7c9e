// Labels: a series' identity, name/value pairs sorted by name, with the metric name as "__name__".
// Store, PromQL and the HTTP API share this one representation.
#pragma once

#include <compare>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscope::store {

inline constexpr std::string_view kMetricNameLabel = "__name__";

struct Label {
  std::string name;
  std::string value;
  auto operator<=>(const Label&) const = default;
};

class Labels {
 public:
  Labels() = default;
  // Sorts by name; a later duplicate name replaces an earlier one; empty values are dropped (an empty
  // label is the same as no label in Prometheus).
  explicit Labels(std::vector<Label> labels);
  Labels(std::initializer_list<Label> labels) : Labels(std::vector<Label>(labels)) {}

  const std::vector<Label>& items() const { return items_; }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

  // The value of `name`, or "" when absent.
  std::string_view get(std::string_view name) const;
  bool has(std::string_view name) const;
  std::string_view metric_name() const { return get(kMetricNameLabel); }

  // Sets (or, with an empty value, removes) one label, keeping the order.
  void set(std::string_view name, std::string_view value);
  void remove(std::string_view name);

  // Only the named labels / all but the named labels (names need not be sorted).
  Labels keep_only(const std::vector<std::string>& names) const;
  Labels without(const std::vector<std::string>& names) const;

  std::size_t hash() const;
  // Prometheus's rendering: {__name__="x", a="b"} becomes x{a="b"}.
  std::string to_string() const;

  auto operator<=>(const Labels&) const = default;
  bool operator==(const Labels&) const = default;

 private:
  std::vector<Label> items_;
};

// Prometheus 3 accepts any non-empty valid UTF-8 as a label name.
bool is_valid_label_name(std::string_view name);

struct LabelsHash {
  std::size_t operator()(const Labels& l) const { return l.hash(); }
};

}  // namespace gpuscope::store
