// `gpuscope serve`: the node agent's flags turned into an AgentConfig, the Agent run with it, and the
// process's signals (SIGTERM/SIGINT stop it, SIGHUP reloads its files).
#pragma once

#include <chrono>
#include <cstddef>
#include <expected>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "agent/agent_config.h"
#include "cli/invocation.h"
#include "cli/price_flags.h"
#include "log/logger.h"

namespace gpuscope::cli {

// The agent's configuration as the flags give it, plus what only the CLI uses.
struct ServeOptions : agent::AgentConfig {
  log::Level log_level = log::Level::kInfo;
};

// $STATE_DIRECTORY when systemd sets it (the unit in deploy/), else /var/lib/gpuscope for root, and
// $XDG_STATE_HOME/gpuscope or ~/.local/state/gpuscope for a user running the agent on a workstation.
std::string default_data_dir();

std::expected<ServeOptions, ParseExit> parse_serve_args(std::span<const std::string> args);

int run_serve(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
