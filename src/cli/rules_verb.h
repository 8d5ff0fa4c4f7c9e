// `gpuscope rules check FILE...` and `gpuscope rules test FILE...`: promtool's `check rules` and
// `test rules` for Prometheus rule files, with the same output and verdict, and no Prometheus needed.
#pragma once

#include <span>
#include <string>

#include "cli/invocation.h"

namespace gpuscope::cli {

int run_rules(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
