#include "analysis/diagnosis_series.h"

#include <set>

namespace gpuscope::analysis {

std::vector<DiagnosisSample> DiagnosisSeries::update(Diagnosis& diagnosis, std::vector<VerdictChange>* changes) {
  auto confirmed = tracker_.update(diagnosis);
  if (changes != nullptr) *changes = std::move(confirmed);
  std::vector<DiagnosisSample> out;
  std::map<std::string, std::vector<DiagnosisSample>> next;
  for (const auto& g : diagnosis.gpus) {
    const auto& state = tracker_.states().at(g.identity.key);
    store::Labels info = g.identity.labels;
    info.set(store::kMetricNameLabel, kDiagnosisInfoName);
    info.set("verdict", verdict_id(state.verdict));
    store::Labels changes = g.identity.labels;
    changes.set(store::kMetricNameLabel, kDiagnosisChangesName);
    auto& mine = next[g.identity.key];
    mine.push_back({std::move(info), 1});
    mine.push_back({std::move(changes), static_cast<double>(state.changes)});
  }
  // What was written before and not now ends here.
  std::set<store::Labels> now;
  for (const auto& [key, samples] : next) {
    for (const auto& s : samples) now.insert(s.labels);
  }
  for (const auto& [key, samples] : current_) {
    for (const auto& s : samples) {
      if (!now.contains(s.labels)) out.push_back({s.labels, store::stale_marker()});
    }
  }
  for (const auto& [key, samples] : next) out.insert(out.end(), samples.begin(), samples.end());
  current_ = std::move(next);
  return out;
}

std::vector<DiagnosisSample> DiagnosisSeries::current() const {
  std::vector<DiagnosisSample> out;
  for (const auto& [key, samples] : current_) out.insert(out.end(), samples.begin(), samples.end());
  return out;
}

}  // namespace gpuscope::analysis
