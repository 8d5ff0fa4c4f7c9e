// Reading a recording: the file (gzip or not), the format, and Prometheus's query_range JSON.
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "recording/recording.h"

namespace gpuscope::recording {
namespace {

// gzread's buffer: large enough that a 100 MB recording takes a few thousand calls.
constexpr unsigned kReadChunkBytes = 1 << 16;

// Prometheus's sample value text: a float, or NaN / +Inf / -Inf as Go's strconv spells them.
std::expected<double, std::string> parse_value(std::string_view text) {
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "+Inf" || text == "Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  double v = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc{} || ptr != end) return std::unexpected(fmt::format("value '{}' is not a number", text));
  return v;
}

// A [time, "value"] pair: Unix seconds (with a fraction) to milliseconds.
std::expected<store::Sample, std::string> parse_point(const nlohmann::json& point) {
  if (!point.is_array() || point.size() != 2) return std::unexpected("not a [time, \"value\"] pair");
  if (!point[0].is_number()) return std::unexpected("time is not a number");
  if (!point[1].is_string()) return std::unexpected("value is not a string");
  const double t = point[0].get<double>();
  // Beyond ±2^53 ms a double no longer holds whole milliseconds, and no recording is that far off.
  constexpr double kMaxAbsSeconds = 9007199254740.0;
  if (!std::isfinite(t) || std::fabs(t) > kMaxAbsSeconds) return std::unexpected("time out of range");
  auto v = parse_value(point[1].get<std::string>());
  if (!v) return std::unexpected(v.error());
  return store::Sample{static_cast<std::int64_t>(std::llround(t * 1000)), *v};
}

}  // namespace

std::expected<std::string, std::string> read_maybe_gzipped(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) return std::unexpected("is a directory");
  // gzread passes a file that is not gzip through unchanged, so one path reads both.
  gzFile gz = gzopen(file.c_str(), "rb");
  if (gz == nullptr) return std::unexpected(fmt::format("cannot open: {}", std::strerror(errno)));
  std::string text;
  std::string buffer(kReadChunkBytes, '\0');
  while (true) {
    const int n = gzread(gz, buffer.data(), kReadChunkBytes);
    if (n < 0) {
      int code = 0;
      std::string what = gzerror(gz, &code);
      gzclose(gz);
      return std::unexpected(fmt::format("cannot read: {}", what));
    }
    if (n == 0) break;
    text.append(buffer.data(), static_cast<std::size_t>(n));
  }
  gzclose(gz);
  return text;
}

std::expected<Recording, std::string> parse_recording(std::string_view text, const ReadOptions& options) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return std::unexpected("empty: neither a Prometheus query_range answer nor an nvidia-smi CSV log");
  if (text[first] == '{') return parse_query_range_json(text, options);
  return parse_smi_csv(text, options);
}

std::expected<Recording, std::string> parse_query_range_json(std::string_view text, const ReadOptions& options) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return std::unexpected(fmt::format("not JSON ({})", e.what()));
  }
  const auto not_answer = [](std::string_view why) {
    return std::unexpected(fmt::format("not a Prometheus query_range answer: {}", why));
  };
  if (!doc.is_object()) return not_answer("not an object");
  if (doc.contains("status") && doc["status"] != "success") {
    return not_answer(fmt::format("status is {}", doc["status"].dump()));
  }
  if (!doc.contains("data") || !doc["data"].is_object()) return not_answer("no \"data\" object");
  const auto& data = doc["data"];
  const std::string type = data.contains("resultType") && data["resultType"].is_string() ? data["resultType"].get<std::string>() : "";
  // A range query answers a matrix; an instant query's vector is one point a series, as good a recording.
  if (type != "matrix" && type != "vector") return not_answer(fmt::format("resultType is '{}', not matrix", type));
  if (!data.contains("result") || !data["result"].is_array()) return not_answer("no \"result\" array");

  Recording rec;
  rec.format = "Prometheus query_range JSON";
  const auto& result = data["result"];
  for (std::size_t i = 0; i < result.size(); ++i) {
    const auto& s = result[i];
    const std::string where = fmt::format("result[{}]", i);
    if (!s.is_object() || !s.contains("metric") || !s["metric"].is_object()) {
      rec.skipped.push_back({where, "no \"metric\" object"});
      continue;
    }
    std::vector<store::Label> labels;
    bool bad = false;
    for (const auto& [name, value] : s["metric"].items()) {
      if (!value.is_string() || !store::is_valid_label_name(name)) {
        rec.skipped.push_back({where, fmt::format("label '{}' is not a name with a string value", name)});
        bad = true;
        break;
      }
      labels.push_back({name, value.get<std::string>()});
    }
    if (bad) continue;
    RecordedSeries series{store::Labels(std::move(labels)), {}};
    if (!options.hostname.empty()) series.labels.set("Hostname", options.hostname);
    if (series.labels.metric_name().empty()) {
      rec.skipped.push_back({where, "no __name__ label"});
      continue;
    }
    const bool matrix = type == "matrix";
    const char* key = matrix ? "values" : "value";
    if (!s.contains(key)) {
      rec.skipped.push_back({where, fmt::format("no \"{}\"", key)});
      continue;
    }
    const auto add = [&](const nlohmann::json& point, const std::string& at) {
      auto sample = parse_point(point);
      if (sample) {
        series.samples.push_back(*sample);
      } else {
        rec.skipped.push_back({at, sample.error()});
      }
    };
    if (matrix) {
      if (!s[key].is_array()) {
        rec.skipped.push_back({where, "\"values\" is not an array"});
        continue;
      }
      for (std::size_t j = 0; j < s[key].size(); ++j) add(s[key][j], fmt::format("{}.values[{}]", where, j));
    } else {
      add(s[key], where + ".value");
    }
    rec.series.push_back(std::move(series));
  }
  return rec;
}

}  // namespace gpuscope::recording
