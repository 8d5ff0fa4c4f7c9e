// Running one parsed PromQL test script against gpuscope's engine over an in-memory SeriesSet: every
// eval becomes a case that passed, failed or was skipped, each with its reason.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "promql/engine.h"
#include "promql_script.h"

namespace gpuscope::conformance {

enum class CaseStatus { kPassed, kFailed, kSkipped };

struct CaseOutcome {
  int line = 0;  // the eval command's line
  std::string expr;
  CaseStatus status = CaseStatus::kPassed;
  std::string detail;  // why it failed or was skipped; empty for a pass
};

// Something in the script that is no case of its own but costs cases: an unreadable command, a load
// that could not be stored.
struct ScriptNotice {
  int line = 0;
  std::string message;
};

struct ScriptReport {
  std::vector<CaseOutcome> cases;
  std::vector<ScriptNotice> notices;
};

struct ScriptRunOptions {
  // promqltest also runs every instant query as a 3-step range query around its time and, with all
  // selectors pinned by `@`, at other times; both catch engine paths the plain query misses.
  bool range_mode_check = true;
  bool at_modifier_check = true;
  std::optional<int> only_line;  // run only the eval at this line (loads and clears still run)
};

ScriptReport run_script(const std::vector<ScriptCommand>& commands, const promql::Engine& engine,
                        const ScriptRunOptions& options = {});

}  // namespace gpuscope::conformance
