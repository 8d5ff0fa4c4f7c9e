// RecentWindow: the last few seconds of a chosen set of series, uncompressed in memory, fed with each
// reading as it is recorded. The agent's diagnosis reads its window here at every evaluation instead of
// decoding the history's chunks (which cost 30 times the diagnosis itself) and taking the head's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "store/head.h"
#include "store/queryable.h"

namespace gpuscope::store {

class RecentWindow : public Queryable {
 public:
  // Keeps the series whose metric name is one of `names`, with their samples no older than the newest
  // reading's time minus `span_ms`.
  RecentWindow(std::span<const std::string_view> names, std::int64_t span_ms);
  RecentWindow(const RecentWindow&) = delete;
  RecentWindow& operator=(const RecentWindow&) = delete;

  // A caller that cannot say whether a reading lists the same series as the one before.
  static constexpr std::uint64_t kLayoutUnknown = 0;
  // One reading at t_ms, as Head::append_reading takes it (the series named are kept, the others
  // ignored; a kept series of the previous reading absent from this one gets a staleness marker).
  // `layout` is a number the caller changes whenever any position of the reading holds another series
  // than in the previous one: while it stays the same, the series at each position is known from the
  // last reading and no label is read, so feeding the window costs a few stores per series.
  void append_reading(std::int64_t t_ms, std::span<const LabeledValue> values,
                      std::uint64_t layout = kLayoutUnknown);
  // Startup, before the first reading: the samples already recorded (the history's last span), so an
  // agent that restarts diagnoses a full window at once. Series not named, and samples that are not
  // strictly after a series' last one, are skipped.
  void seed(std::vector<SeriesSamples> series);

  std::int64_t span_ms() const { return span_ms_; }
  std::size_t series_count() const;
  std::size_t sample_count() const;

  std::expected<std::vector<SeriesSamples>, std::string> select(std::span<const LabelMatcher> matchers,
                                                                std::int64_t mint_ms,
                                                                std::int64_t maxt_ms) const override;
  std::expected<std::vector<std::string>, std::string> label_names(std::span<const LabelMatcher> matchers,
                                                                   std::int64_t mint_ms,
                                                                   std::int64_t maxt_ms) const override;
  std::expected<std::vector<std::string>, std::string> label_values(const std::string& name,
                                                                    std::span<const LabelMatcher> matchers,
                                                                    std::int64_t mint_ms,
                                                                    std::int64_t maxt_ms) const override;

 private:
  struct Series {
    const Labels* labels = nullptr;  // the key of its entry in series_
    // Whether the matchers of select() number `matched_for` match it: the diagnosis asks with the same
    // ~35-name regex at every evaluation, and matching it per series cost a third of the select.
    mutable std::uint64_t matched_for = 0;
    mutable bool matched = false;
    std::deque<Sample> samples;      // by time
    std::uint64_t last_reading = 0;  // number of the last reading it was in
  };
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  // The kept series with these labels (created), or null when its name is not kept. Lock held.
  Series* resolve(const Labels& labels);
  // Appends unless t_ms is not after the series' last sample. Lock held.
  void append_locked(Series& s, std::int64_t t_ms, double value);
  // Whether `matchers` match the series, remembered while select() is asked with the same ones. Lock held.
  bool matches(const Series& s, std::span<const LabelMatcher> matchers) const;
  // Drops samples older than the span, then series left with none. Lock held.
  void drop_old();

  const std::unordered_set<std::string, NameHash, std::equal_to<>> names_;
  const std::int64_t span_ms_;

  mutable std::mutex mu_;
  std::map<Labels, std::unique_ptr<Series>> series_;  // sorted as select() answers
  mutable std::string matchers_key_;                  // select()'s last matchers, and their number
  mutable std::uint64_t matchers_id_ = 0;
  std::int64_t newest_ms_ = INT64_MIN;                // the newest sample's time
  std::uint64_t reading_ = 0;                         // number of the last reading
  // The layout of the last reading and, per position, its kept series (null: not kept).
  std::uint64_t layout_ = kLayoutUnknown;
  std::vector<Series*> by_position_;
  // The kept series of the last reading: those missing from the next get their staleness marker.
  std::vector<Series*> previous_;
};

}  // namespace gpuscope::store
