#include "cli/backtest_diagnosis.h"

#include <map>

#include <fmt/format.h>

#include "analysis/reading_source.h"

namespace gpuscope::cli {

std::expected<void, std::string> BacktestDiagnosis::evaluate_due(std::int64_t t_ms) {
  if (t_ms < next_ms_) return {};
  next_ms_ = t_ms + kBacktestDiagnosisEveryMs;
  const analysis::StoreSource source(head_);
  auto gpus = analysis::read_histories(source, t_ms - kBacktestDiagnosisWindowMs, t_ms, {});
  if (!gpus) return std::unexpected(gpus.error());
  analysis::Diagnosis d = analysis::diagnose(*gpus, t_ms, kBacktestDiagnosisWindowMs, thresholds_);
  // The verdicts before this diagnosis, to tell which changed (the series' tracker confirms at once).
  std::map<std::string, analysis::Verdict> before;
  for (const auto& [key, state] : series_.tracker().states()) before.emplace(key, state.verdict);
  for (const auto& sample : series_.update(d)) {
    if (auto appended = head_.append(sample.labels, t_ms, sample.value); !appended) {
      return std::unexpected(fmt::format("{}: {}", sample.labels.to_string(), appended.error().message));
    }
  }
  for (const auto& g : d.gpus) {
    const auto& now = series_.tracker().states().at(g.identity.key).verdict;
    const auto was = before.find(g.identity.key);
    if (was != before.end() && was->second == now) continue;
    VerdictEvent e{t_ms, t_ms - start_ms_, g.identity, std::nullopt, now, g.detail, g.summary, {}};
    if (was != before.end()) e.from = was->second;
    for (const auto& f : g.findings) e.findings.push_back(f.id);
    events_.push_back(std::move(e));
  }
  return {};
}

}  // namespace gpuscope::cli
