// The cost report as people and scripts read it: a text table with the projection, the top wasters,
// right-sizing and notes; JSON (numbers, units in key names); CSV (one row per group and a total).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/cost_report.h"
#include "analysis/right_sizing.h"

namespace gpuscope::analysis {

// What the report is printed with beyond the report itself.
struct CostPresentation {
  std::vector<std::optional<RightSizing>> right_sizing;  // per report.gpus entry; none: not judged
  std::optional<double> budget_usd_per_month;
  std::vector<std::string> notes;  // the caller's (no catalog for right-sizing, ...)
};

// Whether the projection exceeds the budget (false without either).
bool over_budget(const CostReport& report, const CostPresentation& p);

std::string cost_text(const CostReport& report, const CostPresentation& p);
nlohmann::json cost_json(const CostReport& report, const CostPresentation& p);
std::string cost_csv(const CostReport& report);

}  // namespace gpuscope::analysis
