// `gpuscope eval`: a PromQL query, instant or over a range, against a running agent's query API
// (--url) or a data directory read offline (--data-dir), printed as a table or Prometheus's JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>

#include "cli/invocation.h"
#include "promql/engine.h"

namespace gpuscope::cli {

struct EvalOptions {
  std::string expr;
  std::optional<std::int64_t> time_ms;  // instant query at this time (default: now)
  std::optional<std::int64_t> start_ms, end_ms, step_ms;  // range query when all three are set
  bool json = false;
  std::string url;       // query this agent's HTTP API
  std::string data_dir;  // or read this data directory
  // How long the answer may take: curl's limit with --url, the engine's with --data-dir.
  std::chrono::milliseconds timeout{0};
  // With --data-dir, the samples the query may hold at once (the agent's own limit applies to --url).
  std::size_t max_samples = promql::kDefaultMaxSamples;
};

// --timeout's default: an agent's default --query-timeout (2m), plus a margin for connecting and
// for sending a large answer, so the agent's own timeout error arrives before the client gives up.
inline constexpr std::chrono::milliseconds kEvalQueryTimeout = std::chrono::minutes(2);
inline constexpr std::chrono::milliseconds kEvalTimeoutMargin = std::chrono::seconds(10);

std::expected<EvalOptions, ParseExit> parse_eval_args(std::span<const std::string> args, std::int64_t now_ms);
int run_eval(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
