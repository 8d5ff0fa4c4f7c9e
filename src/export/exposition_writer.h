// ExpositionWriter: writes metric families in Prometheus's text format 0.0.4 or in OpenMetrics 1.0,
// escaping help texts and label values and spelling NaN and infinities as each format wants.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/field_catalog.h"

namespace gpuscope::exporter {

enum class ExpositionFormat { kPrometheusText, kOpenMetrics };

inline constexpr std::string_view kPrometheusTextContentType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr std::string_view kOpenMetricsContentType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

// The format a scrape's Accept header asks for: OpenMetrics when it names application/openmetrics-text
// (Prometheus does, with a q-value preference), else the text format.
ExpositionFormat negotiate_format(std::string_view accept_header);

// Label pairs rendered once and reused for many samples: `name="escaped value"` joined by commas.
class LabelSet {
 public:
  LabelSet& add(std::string_view name, std::string_view value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Takes the samples a writer would print, as values: how the agent's history records exactly the
// series /metrics shows. `labels` and `extra` are LabelSet texts (see parse_label_text).
class SampleSink {
 public:
  virtual ~SampleSink() = default;
  virtual void sample(std::string_view name, std::string_view labels, std::string_view extra, double value) = 0;
};

class ExpositionWriter {
 public:
  ExpositionWriter(ExpositionFormat format, std::string& out) : format_(format), out_(out) {}
  // Hands every sample to `sink` instead of writing text.
  explicit ExpositionWriter(SampleSink& sink) : format_(ExpositionFormat::kPrometheusText), out_(unused_), sink_(&sink) {}

  // Starts a family whose samples are named `name`. In OpenMetrics a counter's family drops the
  // `_total` its samples carry; a counter whose name lacks `_total` (DCGM's, kept for drop-in
  // compatibility) is declared `unknown` there, so its series keep their names.
  void family(std::string_view name, model::MetricType type, std::string_view help);
  // One sample; `labels` and `extra` are LabelSet texts (either may be empty).
  void sample(std::string_view name, std::string_view labels, double value, std::string_view extra = {});
  // A time (Unix ms) written after each following sample's value; nullopt: none (the scraper's time).
  void set_timestamp(std::optional<std::int64_t> t_ms) { timestamp_ms_ = t_ms; }
  // Ends the exposition ("# EOF" in OpenMetrics).
  void finish();

 private:
  ExpositionFormat format_;
  std::string unused_;
  std::string& out_;
  SampleSink* sink_ = nullptr;
  std::optional<std::int64_t> timestamp_ms_;
};

// A LabelSet text back into (name, value) pairs, unescaped; appended to `out`. False when the text
// is not one LabelSet wrote.
bool parse_label_text(std::string_view text, std::vector<std::pair<std::string, std::string>>& out);

// A sample value: integers without a fraction, others in shortest round-trip form; NaN, +Inf, -Inf.
void append_value(std::string& out, double value);
// Escapes \ " and newline as both formats require in label values.
void append_label_value(std::string& out, std::string_view value);

}  // namespace gpuscope::exporter
