#include "remote_write/remote_write_metrics.h"

#include <algorithm>
#include <vector>

namespace gpuscope::remote_write {

void write_remote_write_metrics(exporter::ExpositionWriter& writer, std::span<const RemoteWriteStats> receivers,
                                std::int64_t now_ms) {
  if (receivers.empty()) return;
  std::vector<exporter::LabelSet> labels(receivers.size());
  for (std::size_t i = 0; i < receivers.size(); ++i) labels[i].add("url", receivers[i].url);
  auto each = [&](std::string_view name, model::MetricType type, std::string_view help, auto value) {
    writer.family(name, type, help);
    for (std::size_t i = 0; i < receivers.size(); ++i) writer.sample(name, labels[i].text(), value(receivers[i]));
  };
  each("gpuscope_remote_write_samples_sent_total", model::MetricType::kCounter,
       "Samples of the history the remote-write receiver acknowledged.",
       [](const RemoteWriteStats& r) { return static_cast<double>(r.samples_sent); });
  each("gpuscope_remote_write_samples_failed_total", model::MetricType::kCounter,
       "Samples the remote-write receiver refused (a 4xx other than 408/429); they are not sent again.",
       [](const RemoteWriteStats& r) { return static_cast<double>(r.samples_failed); });
  each("gpuscope_remote_write_samples_pending", model::MetricType::kGauge,
       "Samples read from the history and not yet acknowledged by the remote-write receiver.",
       [](const RemoteWriteStats& r) { return static_cast<double>(r.samples_pending); });
  each("gpuscope_remote_write_lag_seconds", model::MetricType::kGauge,
       "Now minus the time up to which the remote-write receiver has every sample (the settle delay and a "
       "reading interval when caught up).",
       [now_ms](const RemoteWriteStats& r) { return static_cast<double>(std::max<std::int64_t>(0, now_ms - r.cursor_ms)) / 1000.0; });
  const std::string_view requests = "gpuscope_remote_write_requests_total";
  writer.family(requests, model::MetricType::kCounter,
                "Remote-write requests by the receiver's HTTP status (code=\"error\": no response).");
  for (const RemoteWriteStats& r : receivers) {
    for (const auto& [code, n] : r.requests) {
      exporter::LabelSet l;
      l.add("code", code).add("url", r.url);
      writer.sample(requests, l.text(), static_cast<double>(n));
    }
  }
}

}  // namespace gpuscope::remote_write
