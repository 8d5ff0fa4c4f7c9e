// `gpuscope list`: one line per GPU like `nvidia-smi -L`, or JSON.
#pragma once

#include <expected>
#include <span>
#include <string>

#include "cli/invocation.h"

namespace gpuscope::cli {

struct ListOptions {
  bool json = false;
};

std::expected<ListOptions, ParseExit> parse_list_args(std::span<const std::string> args);
int run_list(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
