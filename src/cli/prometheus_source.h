// The diagnosis' readings from any Prometheus-compatible query API (a gpuscope agent, or a fleet's
// Prometheus scraping dcgm-exporter): the raw samples of a range selector, asked with an instant query,
// so the diagnosis reads exactly what was recorded, not a resampled range query.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "analysis/reading_source.h"

namespace gpuscope::cli {

class PrometheusSource : public analysis::ReadingSource {
 public:
  // `url` is the server's base URL (http://127.0.0.1:9400); each request gives up after `timeout`.
  PrometheusSource(std::string url, std::chrono::milliseconds timeout);

  // GET /api/v1/query?query={__name__=~"REGEX"}[Nms]&time=TO: the matrix of (from_ms, to_ms]. When the
  // server refuses for its sample limit (--query.max-samples, 50M in Prometheus, 1M in the agent), the
  // range is asked for in halves, and so on, down to kMinSplitMs.
  std::expected<std::vector<store::SeriesSamples>, std::string> select(const std::string& name_regex,
                                                                      std::int64_t from_ms,
                                                                      std::int64_t to_ms) const override;

  // How many requests were sent (tests: the sample limit split a range).
  std::size_t requests() const { return requests_; }

 private:
  std::expected<std::vector<store::SeriesSamples>, std::string> select_once(const std::string& name_regex,
                                                                           std::int64_t from_ms, std::int64_t to_ms,
                                                                           bool& too_many_samples) const;
  std::string url_;
  std::chrono::milliseconds timeout_;
  mutable std::size_t requests_ = 0;
};

// A range shorter than this is not split further: one second of every GPU's series already fits any
// sane sample limit, so a refusal then is the server's to explain.
inline constexpr std::int64_t kMinSplitMs = 1000;

// Parses a Prometheus query API answer whose data is a matrix into series (samples outside
// (from_ms, to_ms] dropped: Prometheus 2 includes a range's left end). A one-line reason otherwise
// ("error JSON: ...", "a vector, not a matrix"); `too_many_samples` tells the sample limit's refusal.
std::expected<std::vector<store::SeriesSamples>, std::string> parse_matrix_answer(const std::string& body,
                                                                                 std::int64_t from_ms,
                                                                                 std::int64_t to_ms,
                                                                                 bool& too_many_samples);

}  // namespace gpuscope::cli
