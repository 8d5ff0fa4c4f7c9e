#include "store/recent_window.h"

#include <algorithm>
#include <set>

#include "store/series_set.h"

namespace gpuscope::store {
namespace {

// The samples of a deque with mint <= t <= maxt.
std::pair<std::deque<Sample>::const_iterator, std::deque<Sample>::const_iterator> window_range(
    const std::deque<Sample>& samples, std::int64_t mint, std::int64_t maxt) {
  const auto lo = std::lower_bound(samples.begin(), samples.end(), mint,
                                   [](const Sample& s, std::int64_t t) { return s.t_ms < t; });
  const auto hi = std::upper_bound(lo, samples.end(), maxt, [](std::int64_t t, const Sample& s) { return t < s.t_ms; });
  return {lo, hi};
}

}  // namespace

RecentWindow::RecentWindow(std::span<const std::string_view> names, std::int64_t span_ms)
    : names_([&] {
        std::unordered_set<std::string, NameHash, std::equal_to<>> set;
        for (std::string_view n : names) set.emplace(n);
        return set;
      }()),
      span_ms_(span_ms) {}

RecentWindow::Series* RecentWindow::resolve(const Labels& labels) {
  if (!names_.contains(labels.metric_name())) return nullptr;
  auto [it, fresh] = series_.try_emplace(labels);
  if (fresh) {
    it->second = std::make_unique<Series>();
    it->second->labels = &it->first;
  }
  return it->second.get();
}

void RecentWindow::append_locked(Series& s, std::int64_t t_ms, double value) {
  // As the head: a series' times strictly increase (a clock stepped back is refused there too), and a
  // sample already older than the span would only be dropped again.
  if (!s.samples.empty() && s.samples.back().t_ms >= t_ms) return;
  if (newest_ms_ != INT64_MIN && t_ms < newest_ms_ - span_ms_) return;
  s.samples.push_back({t_ms, value});
  newest_ms_ = std::max(newest_ms_, t_ms);
}

void RecentWindow::append_reading(std::int64_t t_ms, std::span<const LabeledValue> values, std::uint64_t layout) {
  std::lock_guard lock(mu_);
  const std::uint64_t reading = ++reading_;
  // The series at each position are looked up again only when the caller says they changed (or cannot
  // say); otherwise a reading costs no label compare or hash at all.
  if (layout == kLayoutUnknown || layout != layout_ || by_position_.size() != values.size()) {
    by_position_.resize(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) by_position_[i] = resolve(values[i].labels);
    layout_ = layout;
  }
  std::vector<Series*> present;
  present.reserve(previous_.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    Series* s = by_position_[i];
    if (s == nullptr || s->last_reading == reading) continue;  // not kept, or twice in a reading: the first wins
    s->last_reading = reading;
    present.push_back(s);
    append_locked(*s, t_ms, values[i].value);
  }
  for (Series* s : previous_) {
    if (s->last_reading != reading) append_locked(*s, t_ms, stale_marker());
  }
  previous_ = std::move(present);
  drop_old();
}

void RecentWindow::seed(std::vector<SeriesSamples> series) {
  std::lock_guard lock(mu_);
  for (auto& in : series) {
    Series* s = resolve(in.labels);
    if (s == nullptr) continue;
    for (const Sample& smp : in.samples) {
      if (s->samples.empty() || s->samples.back().t_ms < smp.t_ms) s->samples.push_back(smp);
    }
    if (!s->samples.empty()) newest_ms_ = std::max(newest_ms_, s->samples.back().t_ms);
  }
  // As the head after a restart: a series still live when the history stopped gets its staleness marker
  // at the first reading it is missing from.
  previous_.clear();
  for (auto& [labels, s] : series_) {
    if (!s->samples.empty() && !is_stale_marker(s->samples.back().value)) previous_.push_back(s.get());
  }
  layout_ = kLayoutUnknown;
  by_position_.clear();
  drop_old();
}

void RecentWindow::drop_old() {
  if (newest_ms_ == INT64_MIN) return;
  const std::int64_t min_t = newest_ms_ - span_ms_;
  std::vector<const Series*> gone;
  for (auto it = series_.begin(); it != series_.end();) {
    auto& samples = it->second->samples;
    while (!samples.empty() && samples.front().t_ms < min_t) samples.pop_front();
    if (!samples.empty()) {
      ++it;
      continue;
    }
    // A series that stopped (its staleness marker included) is forgotten once its last sample is out.
    gone.push_back(it->second.get());
    it = series_.erase(it);
  }
  if (gone.empty()) return;
  auto erased = [&](const Series* s) { return std::find(gone.begin(), gone.end(), s) != gone.end(); };
  std::erase_if(previous_, erased);
  // The positions may point at a forgotten series: looked up afresh at the next reading.
  layout_ = kLayoutUnknown;
  by_position_.clear();
}

std::size_t RecentWindow::series_count() const {
  std::lock_guard lock(mu_);
  return series_.size();
}

std::size_t RecentWindow::sample_count() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [labels, s] : series_) n += s->samples.size();
  return n;
}

bool RecentWindow::matches(const Series& s, std::span<const LabelMatcher> matchers) const {
  if (s.matched_for != matchers_id_) {
    s.matched = matches_all(*s.labels, matchers);
    s.matched_for = matchers_id_;
  }
  return s.matched;
}

std::expected<std::vector<SeriesSamples>, std::string> RecentWindow::select(std::span<const LabelMatcher> matchers,
                                                                            std::int64_t mint_ms,
                                                                            std::int64_t maxt_ms) const {
  std::string key;
  for (const auto& m : matchers) {
    key.append(1, static_cast<char>(m.op())).append(m.name()).append(1, '\0').append(m.value()).append(1, '\0');
  }
  std::vector<SeriesSamples> out;
  std::lock_guard lock(mu_);
  if (key != matchers_key_ || matchers_id_ == 0) {
    matchers_key_ = std::move(key);
    ++matchers_id_;
  }
  out.reserve(series_.size());
  for (const auto& [labels, s] : series_) {
    if (!matches(*s, matchers)) continue;
    const auto [lo, hi] = window_range(s->samples, mint_ms, maxt_ms);
    if (lo == hi) continue;
    out.push_back({labels, std::vector<Sample>(lo, hi)});
  }
  return out;
}

std::expected<std::vector<std::string>, std::string> RecentWindow::label_names(std::span<const LabelMatcher> matchers,
                                                                               std::int64_t mint_ms,
                                                                               std::int64_t maxt_ms) const {
  std::set<std::string> names;
  std::lock_guard lock(mu_);
  for (const auto& [labels, s] : series_) {
    if (!matches_all(labels, matchers)) continue;
    if (const auto [lo, hi] = window_range(s->samples, mint_ms, maxt_ms); lo == hi) continue;
    for (const auto& l : labels) names.insert(l.name);
  }
  return std::vector<std::string>(names.begin(), names.end());
}

std::expected<std::vector<std::string>, std::string> RecentWindow::label_values(const std::string& name,
                                                                                std::span<const LabelMatcher> matchers,
                                                                                std::int64_t mint_ms,
                                                                                std::int64_t maxt_ms) const {
  std::set<std::string> values;
  std::lock_guard lock(mu_);
  for (const auto& [labels, s] : series_) {
    if (!matches_all(labels, matchers)) continue;
    if (const auto [lo, hi] = window_range(s->samples, mint_ms, maxt_ms); lo == hi) continue;
    if (auto v = labels.get(name); !v.empty()) values.insert(std::string(v));
  }
  return std::vector<std::string>(values.begin(), values.end());
}

}  // namespace gpuscope::store
