// Rule unit tests in `promtool test rules` format (rule_files, evaluation_interval, input_series in
// the series notation, alert_rule_test, promql_expr_test): the same verdict and a similar diff.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gpuscope::rules {

// Runs every test file; prints "Unit Testing:  FILE" then "  SUCCESS" or "  FAILED:" with promtool's
// messages. Returns 0 when all pass, 1 otherwise.
int run_rule_unit_tests(const std::vector<std::string>& files, std::ostream& out, std::ostream& err);

}  // namespace gpuscope::rules
