// `gpuscope check`: the pre-flight health gate a training launch script runs before it starts a job.
// Exit 0 healthy, 1 when a check in --fail-on failed, 2 usage error, 3 no NVML library.
#pragma once

#include <expected>
#include <optional>
#include <span>
#include <string>

#include "analysis/health_checks.h"
#include "cli/invocation.h"

namespace gpuscope::cli {

struct CheckVerbOptions {
  analysis::HealthCheckSet fail_on = analysis::HealthCheckSet::all();
  std::optional<int> cuda_runtime_version;  // --cuda-runtime X.Y, as 1000 * major + 10 * minor
  std::string ids;                          // -i, resolved once the GPUs are known
  bool json = false;
  // --kernel-log FILE (a saved dmesg); empty: /dev/kmsg, or none under --simulate (the host's log
  // says nothing about simulated GPUs).
  std::string kernel_log;
};

std::expected<CheckVerbOptions, ParseExit> parse_health_check_args(std::span<const std::string> args);
int run_health_check(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
