// SeriesSet: a plain in-memory Queryable holding uncompressed samples. PromQL's tests and the
// conformance harness load data into it; the agent uses the compressed store instead.
#pragma once

#include <map>

#include "store/queryable.h"

namespace gpuscope::store {

class SeriesSet : public Queryable {
 public:
  // Adds a sample to the series with these labels (created on first use). Samples of a series must
  // come in time order; false (nothing added) when t_ms is not after the series' last sample.
  bool add(const Labels& labels, std::int64_t t_ms, double value);
  void clear() { series_.clear(); }
  std::size_t series_count() const { return series_.size(); }

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
  std::map<Labels, std::vector<Sample>> series_;
};

// Whether every matcher matches the labels (an absent label reads as "").
bool matches_all(const Labels& labels, std::span<const LabelMatcher> matchers);

}  // namespace gpuscope::store
