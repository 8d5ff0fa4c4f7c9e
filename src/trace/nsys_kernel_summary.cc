#include "trace/nsys_kernel_summary.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace gpuscope::trace {
namespace {

// 1234567 -> "1,234,567", as nsys prints its nanoseconds.
std::string grouped(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

// One decimal, the integer part grouped: 1234.56 -> "1,234.6".
std::string grouped_decimal(double value) {
  const double tenths = std::round(value * 10);
  const auto whole = static_cast<std::int64_t>(tenths / 10);
  const auto fraction = static_cast<int>(std::abs(static_cast<std::int64_t>(tenths) % 10));
  return fmt::format("{}.{}", grouped(whole), fraction);
}

KernelSummaryRow summarize(std::string name, std::vector<std::int64_t>& durations) {
  std::sort(durations.begin(), durations.end());
  KernelSummaryRow row;
  row.name = std::move(name);
  const std::size_t n = durations.size();
  row.instances = n;
  row.min_ns = durations.front();
  row.max_ns = durations.back();
  for (const auto d : durations) row.total_ns += d;
  row.average_ns = static_cast<double>(row.total_ns) / static_cast<double>(n);
  row.median_ns = n % 2 == 1 ? static_cast<double>(durations[n / 2])
                             : (static_cast<double>(durations[n / 2 - 1]) + static_cast<double>(durations[n / 2])) / 2;
  if (n > 1) {
    long double squares = 0;
    for (const auto d : durations) {
      const long double diff = static_cast<long double>(d) - row.average_ns;
      squares += diff * diff;
    }
    row.stddev_ns = static_cast<double>(std::sqrt(squares / static_cast<long double>(n - 1)));
  }
  return row;
}

}  // namespace

KernelSummary summarize_kernels(const RankTimeline& timeline) {
  // (name id, duration) of every kernel, sorted so each name's durations are adjacent: 12 bytes a
  // kernel for the time of the call, instead of a vector per name.
  std::vector<std::pair<std::uint32_t, std::int64_t>> kernels;
  for (const GpuActivity& a : timeline.activities) {
    if (a.kind == ActivityKind::kComputeKernel || a.kind == ActivityKind::kCommunicationKernel) {
      kernels.emplace_back(a.name_id, a.duration_ns);
    }
  }
  std::sort(kernels.begin(), kernels.end());
  KernelSummary summary;
  std::int64_t all = 0;
  std::vector<std::int64_t> durations;
  for (std::size_t i = 0; i < kernels.size();) {
    durations.clear();
    const std::uint32_t id = kernels[i].first;
    for (; i < kernels.size() && kernels[i].first == id; ++i) durations.push_back(kernels[i].second);
    summary.rows.push_back(summarize(timeline.names[id], durations));
    all += summary.rows.back().total_ns;
  }
  for (auto& row : summary.rows) row.time_ratio = all > 0 ? static_cast<double>(row.total_ns) / static_cast<double>(all) : 0;
  std::sort(summary.rows.begin(), summary.rows.end(), [](const KernelSummaryRow& a, const KernelSummaryRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return summary;
}

std::string kernel_summary_text(const std::vector<KernelSummary>& summaries) {
  static const std::vector<std::string> kHeaders = {"Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)",
                                                    "Min (ns)", "Max (ns)",        "StdDev (ns)", "Name"};
  std::string out;
  for (const auto& s : summaries) {
    if (!out.empty()) out += '\n';
    out += fmt::format("CUDA GPU kernel summary: {}{}\n\n", s.file, s.rank >= 0 ? fmt::format(" (rank {})", s.rank) : "");
    if (s.rows.empty()) {
      out += "no CUDA kernels\n";
      continue;
    }
    std::vector<std::vector<std::string>> cells;
    for (const auto& r : s.rows) {
      cells.push_back({fmt::format("{:.1f}", 100 * r.time_ratio), grouped(r.total_ns), grouped(static_cast<std::int64_t>(r.instances)),
                       grouped_decimal(r.average_ns), grouped_decimal(r.median_ns), grouped(r.min_ns), grouped(r.max_ns),
                       grouped_decimal(r.stddev_ns), r.name});
    }
    std::vector<std::size_t> widths;
    for (const auto& h : kHeaders) widths.push_back(h.size());
    for (const auto& row : cells) {
      for (std::size_t c = 0; c + 1 < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
    }
    auto line = [&](const std::vector<std::string>& row) {
      std::string text;
      for (std::size_t c = 0; c < row.size(); ++c) {
        text += c + 1 < row.size() ? fmt::format(" {:>{}} ", row[c], widths[c]) : " " + row[c];
      }
      out += text + '\n';
    };
    line(kHeaders);
    std::vector<std::string> rule;
    for (std::size_t c = 0; c < kHeaders.size(); ++c) rule.emplace_back(c + 1 < kHeaders.size() ? widths[c] : kHeaders[c].size(), '-');
    line(rule);
    for (const auto& row : cells) line(row);
  }
  return out;
}

nlohmann::ordered_json kernel_summary_json(const std::vector<KernelSummary>& summaries) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& s : summaries) {
    nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
    for (const auto& r : s.rows) {
      kernels.push_back({{"name", r.name},
                         {"time_ratio", r.time_ratio},
                         {"total_ns", r.total_ns},
                         {"instances", r.instances},
                         {"average_ns", r.average_ns},
                         {"median_ns", r.median_ns},
                         {"min_ns", r.min_ns},
                         {"max_ns", r.max_ns},
                         {"stddev_ns", r.stddev_ns}});
    }
    nlohmann::ordered_json entry = {{"file", s.file}};
    entry["rank"] = s.rank >= 0 ? nlohmann::ordered_json(s.rank) : nlohmann::ordered_json(nullptr);
    entry["kernels"] = std::move(kernels);
    list.push_back(std::move(entry));
  }
  return {{"kernel_summaries", std::move(list)}};
}

}  // namespace gpuscope::trace
