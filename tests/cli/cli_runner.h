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

}  // namespace gpuscope::testing
