// `gpuscope backtest`: a simulator scenario run through the agent's own sampler path, store and rules
// on a virtual clock, as fast as the CPU allows, printing when each alert went pending, fired and
// resolved: "would these rules have caught this failure, and when?" in seconds instead of hours.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <vector>

#include "cli/invocation.h"
#include "cli/price_flags.h"
#include "store/labels.h"

namespace gpuscope::cli {

struct BacktestOptions {
  std::string scenario;
  std::chrono::milliseconds duration = std::chrono::hours(6);
  std::chrono::milliseconds interval = std::chrono::seconds(15);             // between GPU readings
  std::chrono::milliseconds evaluation_interval = std::chrono::minutes(1);  // rule groups without their own
  std::vector<std::string> rule_specs;  // empty: the built-in rule pack
  bool json = false;
  PriceSelection prices;
};

// One alert's change of state during the run.
struct AlertEvent {
  std::int64_t t_ms;           // virtual time
  std::int64_t offset_ms;      // since the scenario's start
  std::string state;           // pending, firing, resolved
  store::Labels labels;        // alertname included
  store::Labels annotations;
};

std::expected<BacktestOptions, ParseExit> parse_backtest_args(std::span<const std::string> args,
                                                              const GlobalOptions& global);
int run_backtest(std::span<const std::string> args, const Invocation& inv);

// Where the built-in rule pack is, next to the executable (installed share/gpuscope/rules, or the
// source tree's rules/); empty when neither exists.
std::string default_rule_pack(const std::string& exe_dir);

}  // namespace gpuscope::cli
