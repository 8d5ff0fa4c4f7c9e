// Queryable: the read side of the store, what PromQL and the HTTP series/labels API read through.
// Implemented by the agent's store (head + persisted history) and by SeriesSet (tests, offline data).
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "store/label_matcher.h"
#include "store/labels.h"

namespace gpuscope::store {

struct Sample {
  std::int64_t t_ms;
  double value;  // may be a staleness marker (is_stale_marker)
};

// A NaN with Prometheus's staleness bits: the series ended here (see xor_chunk.h, kStaleNaNBits).
bool is_stale_marker(double value);
double stale_marker();

struct SeriesSamples {
  Labels labels;
  std::vector<Sample> samples;  // by time, strictly increasing; staleness markers included
};

class Queryable {
 public:
  virtual ~Queryable() = default;
  // Every series that all matchers match, with its samples with mint_ms <= t <= maxt_ms (both ends
  // inclusive; PromQL narrows its windows itself). Series with no sample in the range are left out.
  // Sorted by labels. An error is a storage failure (damaged data the store cannot skip), not "none".
  virtual std::expected<std::vector<SeriesSamples>, std::string> select(std::span<const LabelMatcher> matchers,
                                                                        std::int64_t mint_ms,
                                                                        std::int64_t maxt_ms) const = 0;
  // select() one series at a time, for a reader that bounds its memory and time (PromQL: its sample
  // limit, its deadline, a cancel). `each` gets every matching series in label order and keeps what it
  // needs of it; `progress` (may be empty) is told, after each chunk a store decodes, how many samples
  // of the series being read are decoded so far. Either returning false stops the select (the caller
  // knows why). A store that decodes chunks holds one series' samples at a time this way, not all.
  struct SeriesVisitor {
    std::function<bool(std::size_t decoded)> progress;
    std::function<bool(SeriesSamples&& series)> each;
  };
  // This default, for stores that hold samples uncompressed anyway, selects them all first.
  virtual std::expected<void, std::string> select_each(std::span<const LabelMatcher> matchers, std::int64_t mint_ms,
                                                       std::int64_t maxt_ms, const SeriesVisitor& visitor) const {
    auto all = select(matchers, mint_ms, maxt_ms);
    if (!all) return std::unexpected(std::move(all.error()));
    for (auto& s : *all) {
      if (visitor.progress && !visitor.progress(s.samples.size())) return {};
      if (!visitor.each(std::move(s))) return {};
    }
    return {};
  }
  // Sorted, distinct label names / values of `name` over the series matching `matchers` (all series
  // when empty) that have samples in the range.
  virtual std::expected<std::vector<std::string>, std::string> label_names(std::span<const LabelMatcher> matchers,
                                                                           std::int64_t mint_ms,
                                                                           std::int64_t maxt_ms) const = 0;
  virtual std::expected<std::vector<std::string>, std::string> label_values(const std::string& name,
                                                                            std::span<const LabelMatcher> matchers,
                                                                            std::int64_t mint_ms,
                                                                            std::int64_t maxt_ms) const = 0;
};

}  // namespace gpuscope::store
