// `gpuscope diagnose`: why each GPU is slow or wasted (one verdict with its evidence and fix, plus
// findings) over a window of recorded readings, from a running agent or any Prometheus (--url), a data
// directory (--data-dir, an import included) or a simulator scenario run on a virtual clock
// (--simulate=SCENARIO); or, with --timeline, each GPU's verdict changes over a range.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/thresholds.h"
#include "cli/invocation.h"

namespace gpuscope::cli {

struct DiagnoseOptions {
  enum class Source { kUrl, kDataDir, kSimulate };
  Source source = Source::kDataDir;
  std::string url;
  std::string data_dir;
  std::string scenario;  // --simulate=SCENARIO ("" for the simulator's default GPUs)
  std::int64_t window_ms = 30'000;
  // The diagnosis' time (Unix ms); with --simulate, how far into the scenario (ms). Unset: now, or with
  // --simulate the window (or --since for a timeline).
  std::optional<std::int64_t> at_ms;
  bool timeline = false;
  std::int64_t since_ms = 0;  // the timeline's range before --at
  std::int64_t step_ms = 0;   // 0: the timeline's default (a tenth of the window)
  std::vector<std::string> gpus;  // -i
  bool json = false;
  analysis::Thresholds thresholds;
  std::chrono::milliseconds timeout{0};  // each --url request
};

// --window's range: a second holds one reading at the agent's default interval; an hour, as the agent's
// --diagnosis.window, is as far as a "current" verdict reaches: its readings (~35 series per GPU at
// 1 s) are copied for the diagnosis, and longer spans are what --timeline is for.
inline constexpr std::int64_t kMinWindowMs = 1000;
inline constexpr std::int64_t kMaxWindowMs = 3600LL * 1000;
// --since's: a timeline longer than 30 days is thousands of diagnoses per GPU per day of it.
inline constexpr std::int64_t kMaxSinceMs = 30LL * 24 * 3600 * 1000;
// The timeline's range without --since.
inline constexpr std::int64_t kDefaultSinceMs = 3600LL * 1000;
// The simulator's reading interval for --simulate: the agent's default --interval.
inline constexpr std::int64_t kSimulatedIntervalMs = 1000;

// `now_ms` is what "now" and "now-1h" in --at mean.
std::expected<DiagnoseOptions, ParseExit> parse_diagnose_args(std::span<const std::string> args,
                                                              const GlobalOptions& global, std::int64_t now_ms);
int run_diagnose(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
