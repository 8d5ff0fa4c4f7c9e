#include "trace/rank_comparison.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace gpuscope::trace {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double busy_ratio(const RankReport& r) {
  std::int64_t busy = 0, window = 0;
  for (const auto& d : r.devices) {
    busy += d.busy_ns;
    window += d.window_ns();
  }
  return window > 0 ? static_cast<double>(busy) / static_cast<double>(window) : 0;
}

}  // namespace

std::int64_t display_rank(const RankReport& report) {
  if (report.rank) return *report.rank;
  const std::string& f = report.file;
  for (std::size_t at = f.rfind("rank"); at != std::string::npos; at = at == 0 ? std::string::npos : f.rfind("rank", at - 1)) {
    std::size_t i = at + 4;
    if (i < f.size() && (f[i] == '-' || f[i] == '_')) ++i;
    std::int64_t v = 0;
    std::size_t digits = 0;
    while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i])) != 0 && digits < 9) {
      v = v * 10 + (f[i] - '0');
      ++i;
      ++digits;
    }
    if (digits > 0) return v;
  }
  return -1;
}

RankComparison compare_ranks(const std::vector<RankReport>& ranks) {
  RankComparison c;
  if (ranks.size() < 2) return c;
  std::vector<const RankReport*> with_steps;
  for (const auto& r : ranks) {
    if (r.steps.count > 0) with_steps.push_back(&r);
  }
  Straggler s;
  if (with_steps.size() >= 2) {
    std::vector<double> means;
    for (const auto* r : with_steps) means.push_back(static_cast<double>(r->steps.mean_ns) / 1e9);
    const auto* slowest = *std::max_element(with_steps.begin(), with_steps.end(), [](const RankReport* a, const RankReport* b) {
      return a->steps.mean_ns < b->steps.mean_ns;
    });
    s.rank = display_rank(*slowest);
    s.file = slowest->file;
    s.basis = "slowest steps";
    s.value = static_cast<double>(slowest->steps.mean_ns) / 1e9;
    s.median = median(means);
    s.excess = s.median > 0 ? s.value / s.median - 1 : 0;
    s.evidence = fmt::format("rank {} has the slowest steps: mean {:.2f} ms against a median of {:.2f} ms over {} ranks (+{:.1f}%)",
                             s.rank, s.value * 1e3, s.median * 1e3, with_steps.size(), 100 * s.excess);
  } else {
    std::vector<double> busy;
    for (const auto& r : ranks) busy.push_back(busy_ratio(r));
    const auto it = std::min_element(busy.begin(), busy.end());
    const auto& least = ranks[static_cast<std::size_t>(it - busy.begin())];
    s.rank = display_rank(least);
    s.file = least.file;
    s.basis = "least busy";
    s.value = *it;
    s.median = median(busy);
    s.excess = s.median - s.value;
    s.evidence = fmt::format("rank {} has the least busy GPU: {:.1f}% busy against a median of {:.1f}% over {} ranks "
                             "(no ProfilerStep annotations to compare step times)",
                             s.rank, 100 * s.value, 100 * s.median, ranks.size());
  }
  c.straggler = s;
  return c;
}

}  // namespace gpuscope::trace
