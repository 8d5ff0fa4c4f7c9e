// `gpuscope list`: one line per GPU like `nvidia-smi -L`, JSON, or only the number of GPUs.
#pragma once

#include <expected>
#include <span>
#include <string>

#include "cli/invocation.h"

namespace gpuscope::cli {

struct ListOptions {
  bool json = false;
  bool count_only = false;  // --count: the number of GPUs, for launch scripts (`nvidia-smi -L | wc -l`)
  std::string ids;          // -i, resolved once the GPUs are known
};

std::expected<ListOptions, ParseExit> parse_list_args(std::span<const std::string> args);
int run_list(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
