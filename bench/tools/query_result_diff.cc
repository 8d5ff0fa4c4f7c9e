#include "tools/query_result_diff.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpuscope::bench {

namespace {

using Points = std::vector<std::pair<double, double>>;  // (time in s, value)

// labels (the "metric" object, keys sorted by nlohmann's map) -> points
std::expected<std::map<std::string, Points>, std::string> parse_matrix(std::string_view body, const char* side) {
  const auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::unexpected(fmt::format("{}: not JSON", side));
  if (doc.value("status", "") != "success") {
    return std::unexpected(fmt::format("{}: status {}: {}", side, doc.value("status", "?"), doc.value("error", "")));
  }
  const auto& data = doc["data"];
  if (!data.is_object() || data.value("resultType", "") != "matrix" || !data["result"].is_array()) {
    return std::unexpected(fmt::format("{}: not a matrix result", side));
  }
  std::map<std::string, Points> out;
  try {
    for (const auto& s : data["result"]) {
      Points pts;
      for (const auto& v : s.at("values")) {
        const std::string text = v.at(1).get<std::string>();
        pts.emplace_back(v.at(0).get<double>(), text == "NaN" ? std::nan("") : std::stod(text));
      }
      out.emplace(s.at("metric").dump(), std::move(pts));
    }
  } catch (const std::exception& e) {  // a malformed point: wrong JSON type, or a value stod rejects
    return std::unexpected(fmt::format("{}: malformed series: {}", side, e.what()));
  }
  return out;
}

}  // namespace

std::expected<QueryResultDiff, std::string> diff_query_results(std::string_view left_json, std::string_view right_json,
                                                               double rel, double abs) {
  auto left = parse_matrix(left_json, "left");
  if (!left) return std::unexpected(left.error());
  auto right = parse_matrix(right_json, "right");
  if (!right) return std::unexpected(right.error());
  QueryResultDiff d;
  d.series_left = left->size();
  d.series_right = right->size();
  const auto note = [&](std::string what) {
    ++d.mismatches;
    if (d.first_mismatch.empty()) d.first_mismatch = std::move(what);
  };
  for (const auto& [labels, lp] : *left) {
    const auto it = right->find(labels);
    if (it == right->end()) {
      note(fmt::format("series only on the left: {}", labels));
      continue;
    }
    const Points& rp = it->second;
    if (lp.size() != rp.size()) {
      note(fmt::format("{}: {} points left, {} right", labels, lp.size(), rp.size()));
      continue;
    }
    for (std::size_t i = 0; i < lp.size(); ++i) {
      const auto [lt, lv] = lp[i];
      const auto [rt, rv] = rp[i];
      ++d.points;
      const double diff = std::fabs(lv - rv);
      const bool same_value = (std::isnan(lv) && std::isnan(rv)) || lv == rv ||
                              diff <= rel * std::max(std::fabs(lv), std::fabs(rv)) || diff <= abs;
      if (lt != rt || !same_value) {
        note(fmt::format("{} point {}: left ({}, {}) right ({}, {})", labels, i, lt, lv, rt, rv));
      }
    }
  }
  for (const auto& [labels, rp] : *right) {
    if (!left->contains(labels)) note(fmt::format("series only on the right: {}", labels));
  }
  return d;
}

}  // namespace gpuscope::bench
