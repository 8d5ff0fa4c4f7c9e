#include "export/exposition_writer.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace gpuscope::exporter {

ExpositionFormat negotiate_format(std::string_view accept) {
  // A client that lists OpenMetrics with q=0 refuses it; anything else that names it accepts it.
  for (std::size_t pos = 0; pos < accept.size();) {
    std::size_t end = accept.find(',', pos);
    if (end == std::string_view::npos) end = accept.size();
    std::string_view item = accept.substr(pos, end - pos);
    pos = end + 1;
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    if (!item.starts_with("application/openmetrics-text")) continue;
    const auto q = item.find("q=");
    if (q != std::string_view::npos) {
      const std::string qv(item.substr(q + 2));
      if (std::strtod(qv.c_str(), nullptr) <= 0) continue;
    }
    return ExpositionFormat::kOpenMetrics;
  }
  return ExpositionFormat::kPrometheusText;
}

void append_label_value(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\': out.append("\\\\"); break;
      case '"': out.append("\\\""); break;
      case '\n': out.append("\\n"); break;
      default: out.push_back(c);
    }
  }
}

LabelSet& LabelSet::add(std::string_view name, std::string_view value) {
  if (!text_.empty()) text_.push_back(',');
  text_.append(name);
  text_.append("=\"");
  append_label_value(text_, value);
  text_.push_back('"');
  return *this;
}

void append_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out.append("NaN");
  } else if (std::isinf(value)) {
    out.append(value > 0 ? "+Inf" : "-Inf");
  } else if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<long long>(value));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
}

void ExpositionWriter::family(std::string_view name, model::MetricType type, std::string_view help) {
  if (sink_ != nullptr) return;
  std::string_view family_name = name;
  std::string_view type_name = type == model::MetricType::kCounter ? "counter"
                               : type == model::MetricType::kSummary   ? "summary"
                               : type == model::MetricType::kHistogram ? "histogram"
                                                                       : "gauge";
  if (format_ == ExpositionFormat::kOpenMetrics && type == model::MetricType::kCounter) {
    if (name.ends_with("_total")) {
      family_name = name.substr(0, name.size() - 6);
    } else {
      type_name = "unknown";
    }
  }
  out_.append("# HELP ");
  out_.append(family_name);
  out_.push_back(' ');
  for (char c : help) {
    switch (c) {
      case '\\': out_.append("\\\\"); break;
      case '\n': out_.append("\\n"); break;
      case '"':
        if (format_ == ExpositionFormat::kOpenMetrics) {
          out_.append("\\\"");
        } else {
          out_.push_back(c);
        }
        break;
      default: out_.push_back(c);
    }
  }
  out_.append("\n# TYPE ");
  out_.append(family_name);
  out_.push_back(' ');
  out_.append(type_name);
  out_.push_back('\n');
}

void ExpositionWriter::sample(std::string_view name, std::string_view labels, double value, std::string_view extra) {
  if (sink_ != nullptr) {
    sink_->sample(name, labels, extra, value);
    return;
  }
  out_.append(name);
  if (!labels.empty() || !extra.empty()) {
    out_.push_back('{');
    out_.append(labels);
    if (!labels.empty() && !extra.empty()) out_.push_back(',');
    out_.append(extra);
    out_.push_back('}');
  }
  out_.push_back(' ');
  append_value(out_, value);
  if (timestamp_ms_) {
    // The text format counts milliseconds; OpenMetrics counts seconds.
    if (format_ == ExpositionFormat::kOpenMetrics) {
      const std::int64_t t = *timestamp_ms_;
      out_.append(fmt::format(" {}.{:03}", t / 1000, t % 1000));
    } else {
      out_.append(fmt::format(" {}", *timestamp_ms_));
    }
  }
  out_.push_back('\n');
}

void ExpositionWriter::finish() {
  if (sink_ != nullptr) return;
  if (format_ == ExpositionFormat::kOpenMetrics) out_.append("# EOF\n");
}

bool parse_label_text(std::string_view text, std::vector<std::pair<std::string, std::string>>& out) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto eq = text.find("=\"", i);
    if (eq == std::string_view::npos || eq == i) return false;
    std::string name(text.substr(i, eq - i));
    std::string value;
    std::size_t j = eq + 2;
    for (;; ++j) {
      if (j >= text.size()) return false;
      const char c = text[j];
      if (c == '"') break;
      if (c == '\\') {
        if (++j >= text.size()) return false;
        value.push_back(text[j] == 'n' ? '\n' : text[j]);
      } else {
        value.push_back(c);
      }
    }
    out.emplace_back(std::move(name), std::move(value));
    i = j + 1;
    if (i < text.size()) {
      if (text[i] != ',') return false;
      ++i;
    }
  }
  return true;
}

}  // namespace gpuscope::exporter
