// Runs gpuscope in-process the way a shell would, capturing stdout, stderr and the exit code.
#pragma once

#include <atomic>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "cli/run_cli.h"

namespace gpuscope::testing {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline CliResult run_gpuscope(std::vector<std::string> args, const std::atomic<bool>* stop = nullptr) {
  static const std::atomic<bool> kNeverStop{false};
  std::vector<const char*> argv{"gpuscope"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliResult r;
  r.code = cli::run_cli(argv, out, err, stop != nullptr ? *stop : kNeverStop);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// gpuscope against the simulated NVML: --simulate=SCENARIO (empty: the built-in 8x H100 node) before `args`.
inline CliResult run_simulated(const std::string& scenario, std::vector<std::string> args,
                               const std::atomic<bool>* stop = nullptr) {
  args.insert(args.begin(), {scenario.empty() ? std::string("--simulate") : "--simulate=" + scenario, "--nvml-lib",
                             GPUSCOPE_SIM_LIB});
  return run_gpuscope(std::move(args), stop);
}

// The lines of a command's output, without their newlines.
inline std::vector<std::string> output_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

}  // namespace gpuscope::testing
