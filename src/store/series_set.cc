#include "store/series_set.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "store/xor_chunk.h"

namespace gpuscope::store {

bool is_stale_marker(double value) { return std::bit_cast<std::uint64_t>(value) == kStaleNaNBits; }
double stale_marker() { return std::bit_cast<double>(kStaleNaNBits); }

bool matches_all(const Labels& labels, std::span<const LabelMatcher> matchers) {
  for (const auto& m : matchers) {
    if (!m.matches(labels.get(m.name()))) return false;
  }
  return true;
}

bool SeriesSet::add(const Labels& labels, std::int64_t t_ms, double value) {
  auto& samples = series_[labels];
  if (!samples.empty() && samples.back().t_ms >= t_ms) return false;
  samples.push_back({t_ms, value});
  return true;
}

namespace {
std::span<const Sample> in_range(const std::vector<Sample>& samples, std::int64_t mint, std::int64_t maxt) {
  auto lo = std::lower_bound(samples.begin(), samples.end(), mint,
                             [](const Sample& s, std::int64_t t) { return s.t_ms < t; });
  auto hi = std::upper_bound(lo, samples.end(), maxt, [](std::int64_t t, const Sample& s) { return t < s.t_ms; });
  return {lo, hi};
}
}  // namespace

std::expected<std::vector<SeriesSamples>, std::string> SeriesSet::select(std::span<const LabelMatcher> matchers,
                                                                         std::int64_t mint_ms,
                                                                         std::int64_t maxt_ms) const {
  std::vector<SeriesSamples> out;
  for (const auto& [labels, samples] : series_) {
    if (!matches_all(labels, matchers)) continue;
    auto r = in_range(samples, mint_ms, maxt_ms);
    if (r.empty()) continue;
    out.push_back({labels, std::vector<Sample>(r.begin(), r.end())});
  }
  return out;
}

std::expected<std::vector<std::string>, std::string> SeriesSet::label_names(std::span<const LabelMatcher> matchers,
                                                                            std::int64_t mint_ms,
                                                                            std::int64_t maxt_ms) const {
  std::set<std::string> names;
  for (const auto& [labels, samples] : series_) {
    if (!matches_all(labels, matchers) || in_range(samples, mint_ms, maxt_ms).empty()) continue;
    for (const auto& l : labels) names.insert(l.name);
  }
  return std::vector<std::string>(names.begin(), names.end());
}

std::expected<std::vector<std::string>, std::string> SeriesSet::label_values(const std::string& name,
                                                                             std::span<const LabelMatcher> matchers,
                                                                             std::int64_t mint_ms,
                                                                             std::int64_t maxt_ms) const {
  std::set<std::string> values;
  for (const auto& [labels, samples] : series_) {
    if (!matches_all(labels, matchers) || in_range(samples, mint_ms, maxt_ms).empty()) continue;
    if (auto v = labels.get(name); !v.empty()) values.insert(std::string(v));
  }
  return std::vector<std::string>(values.begin(), values.end());
}

}  // namespace gpuscope::store
