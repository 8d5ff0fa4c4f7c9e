#include "cli/prometheus_source.h"

#include <cmath>
#include <cstdlib>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/http_get.h"
#include "notify/notification.h"
#include "promql/engine.h"

namespace gpuscope::cli {
namespace {

using nlohmann::json;

std::string seconds_text(std::int64_t ms) { return fmt::format("{:.3f}", static_cast<double>(ms) / 1000.0); }

// Appends `more` (later in time than what `into` holds of each series) to `into`, by labels.
void merge_series(std::map<store::Labels, std::vector<store::Sample>>& into, std::vector<store::SeriesSamples> more) {
  for (auto& s : more) {
    auto& samples = into[s.labels];
    samples.insert(samples.end(), s.samples.begin(), s.samples.end());
  }
}

}  // namespace

PrometheusSource::PrometheusSource(std::string url, std::chrono::milliseconds timeout)
    : url_(std::move(url)), timeout_(timeout) {
  while (url_.ends_with('/')) url_.pop_back();
}

std::expected<std::vector<store::SeriesSamples>, std::string> parse_matrix_answer(const std::string& body,
                                                                                 std::int64_t from_ms,
                                                                                 std::int64_t to_ms,
                                                                                 bool& too_many_samples) {
  too_many_samples = false;
  const auto answer = json::parse(body, nullptr, false);
  if (answer.is_discarded() || !answer.is_object() || !answer.contains("status")) {
    return std::unexpected("not Prometheus API JSON: " + body_excerpt(body));
  }
  try {
    if (answer.at("status") != "success") {
      const std::string error = answer.value("error", "");
      too_many_samples = error.find(promql::kTooManySamplesMessage) != std::string::npos;
      return std::unexpected(fmt::format("{}: {}", answer.value("errorType", "error"), error));
    }
    const auto& data = answer.at("data");
    const std::string type = data.at("resultType");
    if (type != "matrix") return std::unexpected(fmt::format("the answer is a {}, not a matrix of raw samples", type));
    std::vector<store::SeriesSamples> out;
    for (const auto& series : data.at("result")) {
      std::vector<store::Label> labels;
      for (const auto& [name, value] : series.at("metric").items()) labels.push_back({name, value.get<std::string>()});
      store::SeriesSamples s{store::Labels(std::move(labels)), {}};
      for (const auto& point : series.at("values")) {
        const auto t_ms = static_cast<std::int64_t>(std::llround(point.at(0).get<double>() * 1000.0));
        if (t_ms <= from_ms || t_ms > to_ms) continue;
        // Prometheus writes values as strings, NaN and ±Inf included; strtod reads all of them.
        const std::string text = point.at(1).get<std::string>();
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return std::unexpected(fmt::format("a sample value '{}' is not a number", text));
        s.samples.push_back({t_ms, value});
      }
      if (!s.samples.empty()) out.push_back(std::move(s));
    }
    return out;
  } catch (const json::exception& e) {
    return std::unexpected(fmt::format("unexpected API JSON: {}", e.what()));
  }
}

std::expected<std::vector<store::SeriesSamples>, std::string> PrometheusSource::select_once(
    const std::string& name_regex, std::int64_t from_ms, std::int64_t to_ms, bool& too_many_samples) const {
  const std::string selector = fmt::format("{{__name__=~\"{}\"}}[{}ms]", name_regex, to_ms - from_ms);
  const std::string url =
      fmt::format("{}/api/v1/query?query={}&time={}", url_, notify::query_escape(selector), seconds_text(to_ms));
  ++requests_;
  auto got = http_get(url, timeout_);
  if (!got) return std::unexpected(got.error());
  auto parsed = parse_matrix_answer(got->body, from_ms, to_ms, too_many_samples);
  if (!parsed) {
    // The base URL, not the whole query: the line stays readable and still says where.
    return std::unexpected(fmt::format("--url {}: HTTP {}{}, {}", url_, got->status,
                                       got->content_type.empty() ? "" : " " + got->content_type, parsed.error()));
  }
  if (got->status != 200) {
    return std::unexpected(fmt::format("--url {}: HTTP {}: {}", url_, got->status, body_excerpt(got->body)));
  }
  return parsed;
}

std::expected<std::vector<store::SeriesSamples>, std::string> PrometheusSource::select(const std::string& name_regex,
                                                                                      std::int64_t from_ms,
                                                                                      std::int64_t to_ms) const {
  bool too_many = false;
  auto whole = select_once(name_regex, from_ms, to_ms, too_many);
  if (whole || !too_many || to_ms - from_ms < 2 * kMinSplitMs) return whole;
  const std::int64_t middle = from_ms + (to_ms - from_ms) / 2;
  std::map<store::Labels, std::vector<store::Sample>> merged;
  for (const auto& [from, to] : {std::pair{from_ms, middle}, std::pair{middle, to_ms}}) {
    auto half = select(name_regex, from, to);
    if (!half) return half;
    merge_series(merged, std::move(*half));
  }
  std::vector<store::SeriesSamples> out;
  out.reserve(merged.size());
  for (auto& [labels, samples] : merged) out.push_back({labels, std::move(samples)});
  return out;
}

}  // namespace gpuscope::cli
