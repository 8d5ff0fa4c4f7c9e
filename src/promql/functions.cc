#include "promql/functions.h"

#include <algorithm>

namespace gpuscope::promql {

namespace {

constexpr ValueType kS = ValueType::kScalar;
constexpr ValueType kV = ValueType::kVector;
constexpr ValueType kM = ValueType::kMatrix;
constexpr ValueType kStr = ValueType::kString;

// Kept sorted by name so lookups can binary-search; the order is checked once at first use.
const std::vector<Function>& function_table() {
  static const std::vector<Function> table = [] {
    std::vector<Function> t = {
        {"abs", {kV}, 0, kV, false},
        {"absent", {kV}, 0, kV, false},
        {"absent_over_time", {kM}, 0, kV, false},
        {"acos", {kV}, 0, kV, false},
        {"acosh", {kV}, 0, kV, false},
        {"asin", {kV}, 0, kV, false},
        {"asinh", {kV}, 0, kV, false},
        {"atan", {kV}, 0, kV, false},
        {"atanh", {kV}, 0, kV, false},
        {"avg_over_time", {kM}, 0, kV, false},
        {"ceil", {kV}, 0, kV, false},
        {"changes", {kM}, 0, kV, false},
        {"clamp", {kV, kS, kS}, 0, kV, false},
        {"clamp_max", {kV, kS}, 0, kV, false},
        {"clamp_min", {kV, kS}, 0, kV, false},
        {"cos", {kV}, 0, kV, false},
        {"cosh", {kV}, 0, kV, false},
        {"count_over_time", {kM}, 0, kV, false},
        {"day_of_month", {kV}, 1, kV, false},
        {"day_of_week", {kV}, 1, kV, false},
        {"day_of_year", {kV}, 1, kV, false},
        {"days_in_month", {kV}, 1, kV, false},
        {"deg", {kV}, 0, kV, false},
        {"delta", {kM}, 0, kV, false},
        {"deriv", {kM}, 0, kV, false},
        {"double_exponential_smoothing", {kM, kS, kS}, 0, kV, true},
        {"end", {}, 0, kS, true},
        {"exp", {kV}, 0, kV, false},
        {"first_over_time", {kM}, 0, kV, true},
        {"floor", {kV}, 0, kV, false},
        {"histogram_avg", {kV}, 0, kV, false},
        {"histogram_count", {kV}, 0, kV, false},
        {"histogram_fraction", {kS, kS, kV}, 0, kV, false},
        {"histogram_quantile", {kS, kV}, 0, kV, false},
        {"histogram_quantiles", {kV, kStr, kS, kS}, 9, kV, true},
        {"histogram_stddev", {kV}, 0, kV, false},
        {"histogram_stdvar", {kV}, 0, kV, false},
        {"histogram_sum", {kV}, 0, kV, false},
        {"hour", {kV}, 1, kV, false},
        {"idelta", {kM}, 0, kV, false},
        {"increase", {kM}, 0, kV, false},
        {"info", {kV, kV}, 1, kV, true},
        {"integral", {kM, kS}, 1, kV, true},
        {"irate", {kM}, 0, kV, false},
        {"label_join", {kV, kStr, kStr, kStr}, kUnboundedVariadic, kV, false},
        {"label_replace", {kV, kStr, kStr, kStr, kStr}, 0, kV, false},
        {"last_over_time", {kM}, 0, kV, false},
        {"ln", {kV}, 0, kV, false},
        {"log10", {kV}, 0, kV, false},
        {"log2", {kV}, 0, kV, false},
        {"mad_over_time", {kM}, 0, kV, true},
        {"max_over_time", {kM}, 0, kV, false},
        {"min_over_time", {kM}, 0, kV, false},
        {"max_of", {kS, kS}, 0, kS, true},  // newer than functions.go; used by the conformance scripts
        {"min_of", {kS, kS}, 0, kS, true},
        {"minute", {kV}, 1, kV, false},
        {"month", {kV}, 1, kV, false},
        {"pi", {}, 0, kS, false},
        {"predict_linear", {kM, kS}, 0, kV, false},
        {"present_over_time", {kM}, 0, kV, false},
        {"quantile_over_time", {kS, kM}, 0, kV, false},
        {"rad", {kV}, 0, kV, false},
        {"range", {}, 0, kS, true},
        {"rate", {kM}, 0, kV, false},
        {"resets", {kM}, 0, kV, false},
        {"round", {kV, kS}, 1, kV, false},
        {"scalar", {kV}, 0, kS, false},
        {"sgn", {kV}, 0, kV, false},
        {"sin", {kV}, 0, kV, false},
        {"sinh", {kV}, 0, kV, false},
        {"sort", {kV}, 0, kV, false},
        {"sort_by_label", {kV, kStr}, kUnboundedVariadic, kV, true},
        {"sort_by_label_desc", {kV, kStr}, kUnboundedVariadic, kV, true},
        {"sort_desc", {kV}, 0, kV, false},
        {"sqrt", {kV}, 0, kV, false},
        {"start", {}, 0, kS, true},
        {"start_timestamp", {kV}, 0, kV, true},  // newer than functions.go; used by the conformance scripts
        {"stddev_over_time", {kM}, 0, kV, false},
        {"stdvar_over_time", {kM}, 0, kV, false},
        {"step", {}, 0, kS, true},
        {"sum_over_time", {kM}, 0, kV, false},
        {"tan", {kV}, 0, kV, false},
        {"tanh", {kV}, 0, kV, false},
        {"time", {}, 0, kS, false},
        {"timestamp", {kV}, 0, kV, false},
        {"ts_of_first_over_time", {kM}, 0, kV, true},
        {"ts_of_last_over_time", {kM}, 0, kV, true},
        {"ts_of_max_over_time", {kM}, 0, kV, true},
        {"ts_of_min_over_time", {kM}, 0, kV, true},
        {"vector", {kS}, 0, kV, false},
        {"year", {kV}, 1, kV, false},
    };
    std::sort(t.begin(), t.end(), [](const Function& a, const Function& b) { return a.name < b.name; });
    return t;
  }();
  return table;
}

}  // namespace

const Function* find_function(std::string_view name) {
  const auto& table = function_table();
  auto it = std::lower_bound(table.begin(), table.end(), name,
                             [](const Function& f, std::string_view n) { return f.name < n; });
  if (it == table.end() || it->name != name) return nullptr;
  return &*it;
}

}  // namespace gpuscope::promql
