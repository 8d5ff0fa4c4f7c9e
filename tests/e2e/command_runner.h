// Runs a built binary as a child process with extra environment variables, capturing stdout,
// stderr and the exit code, with a time limit (the child is killed, by PID, when it overruns).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpuscope::e2e {

struct CommandResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
};

// What execve needs, built before fork (only async-signal-safe calls in the child): `argv` as given
// (it must outlive this), and this process's environment with `env` laid over it.
struct ExecImage {
  std::vector<std::string> env_strings;
  std::vector<char*> argv;
  std::vector<char*> envp;
};
ExecImage exec_image(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

CommandResult run_command(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                          double timeout_seconds = 60);

// The scenario file path in the repo's scenarios/ folder.
std::string scenario(const std::string& name);

}  // namespace gpuscope::e2e
