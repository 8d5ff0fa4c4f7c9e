#include "cli/backtest_diagnosis.h"

#include <fmt/format.h>

#include "analysis/network_verdict.h"
#include "analysis/reading_source.h"

namespace gpuscope::cli {

std::expected<void, std::string> BacktestDiagnosis::evaluate_due(std::int64_t t_ms) {
  if (t_ms < next_ms_) return {};
  next_ms_ = t_ms + kBacktestDiagnosisEveryMs;
  const analysis::StoreSource source(head_);
  auto gpus = analysis::read_histories(source, t_ms - kBacktestDiagnosisWindowMs, t_ms);
  if (!gpus) return std::unexpected(gpus.error());
  // The scenario's fabric ports, when it has them (the simulated sysfs tree the fabric collector reads).
  auto ports = analysis::read_port_histories(source, t_ms - analysis::kFabricLookbackMs, t_ms);
  if (!ports) return std::unexpected(ports.error());
  analysis::Diagnosis d = analysis::diagnose(*gpus, *ports, t_ms, kBacktestDiagnosisWindowMs, thresholds_);
  std::vector<analysis::VerdictChange> changes;
  for (const auto& sample : series_.update(d, &changes)) {
    if (auto appended = head_.append(sample.labels, t_ms, sample.value); !appended) {
      return std::unexpected(fmt::format("{}: {}", sample.labels.to_string(), appended.error().message));
    }
  }
  for (auto& c : changes) {
    events_.push_back({t_ms, t_ms - start_ms_, std::move(c.identity), c.from, c.to, std::move(c.detail),
                       std::move(c.summary), std::move(c.findings)});
  }
  return {};
}

}  // namespace gpuscope::cli
