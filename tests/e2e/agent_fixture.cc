#include "e2e/agent_fixture.h"

#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <thread>

#include "e2e/http_client.h"

namespace gpuscope::e2e {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::map<std::string, std::string> frozen_env(double seconds) {
  return {{"GPUSCOPE_SIM_TIME", std::to_string(seconds)}, {"GPUSCOPE_SIM_SEED", ""}, {"TZ", "UTC"}};
}

std::map<std::string, std::string> live_env() { return {{"GPUSCOPE_SIM_SEED", ""}, {"TZ", "UTC"}}; }

TempDir::TempDir() {
  char tmpl[] = "/tmp/gpuscope-e2e-XXXXXX";
  path = mkdtemp(tmpl);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  std::ofstream(path / name) << text;
  return (path / name).string();
}

Agent::Agent(std::vector<std::string> args, std::map<std::string, std::string> env) {
  const bool serve = std::find(args.begin(), args.end(), "serve") != args.end();
  const bool has_history_flag = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--data-dir" || a.starts_with("--data-dir=") || a == "--no-history";
  });
  if (serve && !has_history_flag) {
    data_dir = std::make_unique<TempDir>();
    args.push_back("--data-dir");
    args.push_back(data_dir->path.string());
  }
  args.insert(args.begin(), GPUSCOPE_EXE);
  process = std::make_unique<BackgroundProcess>(args, env);
  port = logged_port(*process);
}

bool Agent::ready(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (http_get(port, "/healthz").status == 200) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

std::string Agent::metrics() const { return http_get(port, "/metrics").body; }

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace gpuscope::e2e
