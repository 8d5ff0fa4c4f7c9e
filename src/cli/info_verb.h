// `gpuscope info`: the driver, the NVML library actually loaded, and each GPU's identity and limits.
#pragma once

#include <expected>
#include <span>
#include <string>

#include "cli/invocation.h"

namespace gpuscope::cli {

struct InfoOptions {
  bool json = false;
  std::string ids;  // -i, resolved once the GPUs are known
};

std::expected<InfoOptions, ParseExit> parse_info_args(std::span<const std::string> args);
int run_info(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
