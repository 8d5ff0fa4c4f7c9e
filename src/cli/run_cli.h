// The gpuscope command line: global flags (accepted before or after the verb), dispatch to one verb,
// exit codes. main() only forwards here, so tests drive every verb in-process.
#pragma once

#include <atomic>
#include <expected>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "cli/invocation.h"

namespace gpuscope::cli {

struct CommandLine {
  GlobalOptions global;
  bool help = false;     // -h/--help/help before the verb
  bool version = false;  // --version anywhere
  std::string verb;
  std::vector<std::string> verb_args;  // in order, global flags taken out
};

// Takes the global flags out wherever they stand, so `gpuscope query --simulate ...` and
// `gpuscope --simulate query ...` mean the same. `--simulate=SCENARIO` needs the '=': a bare `--simulate`
// never swallows the next word. The error is a one-line usage message.
std::expected<CommandLine, std::string> parse_command_line(std::span<const char* const> argv);

// argv[0] is the program name. Never throws: an unexpected exception is reported and exits 1.
int run_cli(std::span<const char* const> argv, std::ostream& out, std::ostream& err);

// As above, but loops end when `stop` is set instead of on SIGINT/SIGTERM, and no signal handler is
// installed: for tests.
int run_cli(std::span<const char* const> argv, std::ostream& out, std::ostream& err, const std::atomic<bool>& stop);

}  // namespace gpuscope::cli
