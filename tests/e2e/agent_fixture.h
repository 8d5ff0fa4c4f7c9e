// What the e2e tests share to run `gpuscope serve`: an agent on a free port with its own history
// directory, scratch directories, the simulator's clock settings, and URL encoding for queries.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "e2e/background_process.h"

namespace gpuscope::e2e {

// The simulator frozen at `seconds` with the default seed: every reading is the same.
std::map<std::string, std::string> frozen_env(double seconds);
// The simulator's real clock: t counts from the agent's nvmlInit, so timed faults happen while it runs.
std::map<std::string, std::string> live_env();

// A scratch directory removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string write(const std::string& name, const std::string& text) const;
};

// An agent (`gpuscope ARGS...`) on a free port; the test fails (not hangs) when it does not come up.
// A `serve` given no --data-dir (or --no-history) gets a data directory of its own, removed with it,
// so concurrent tests never share history.
struct Agent {
  std::unique_ptr<TempDir> data_dir;
  std::unique_ptr<BackgroundProcess> process;
  int port = 0;
  Agent(std::vector<std::string> args, std::map<std::string, std::string> env);
  // Waits for the first GPU reading (healthz turns 200).
  bool ready(std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  std::string metrics() const;
};

std::string url_encode(const std::string& s);

}  // namespace gpuscope::e2e
