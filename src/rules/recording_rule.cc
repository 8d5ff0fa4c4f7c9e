#include "rules/recording_rule.h"

#include <unordered_set>

#include <fmt/format.h>

namespace gpuscope::rules {

std::expected<std::vector<RuleSample>, std::string> RecordingRule::evaluate(const EvaluationContext& ctx,
                                                                            std::int64_t t_ms, int limit) const {
  auto result = query_vector(ctx, *definition_.expr, t_ms);
  if (!result) return std::unexpected(std::move(result.error()));
  std::vector<RuleSample> out;
  out.reserve(result->size());
  std::unordered_set<store::Labels, store::LabelsHash> seen;
  for (promql::InstantSample& sample : *result) {
    store::Labels labels = std::move(sample.labels);
    labels.set(store::kMetricNameLabel, definition_.name);
    for (const TemplatedField& l : definition_.labels) labels.set(l.name, l.text);
    if (!seen.insert(labels).second) {
      return std::unexpected("vector contains metrics with the same labelset after applying rule labels");
    }
    out.push_back({std::move(labels), sample.value});
  }
  if (limit > 0 && out.size() > static_cast<std::size_t>(limit)) {
    return std::unexpected(fmt::format("exceeded limit of {} with {} series", limit, out.size()));
  }
  return out;
}

}  // namespace gpuscope::rules
