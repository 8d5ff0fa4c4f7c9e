// `gpuscope top` driven in tmux, as a person at a terminal would: the layout at two sizes, the keys,
// a GPU lost and back, a resize, a slow driver and an agent that does not answer (the screen still
// answers keys), --url against a running agent, and the one-line errors. Each test runs its own tmux
// server on its own socket and kills it at the end. Waits poll the screen with a generous deadline that
// only a failure reaches.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/agent_fixture.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;

const std::string kExe = GPUSCOPE_EXE;
// Only a failing test waits this long for the screen to show what it expects.
constexpr auto kDeadline = 60s;

// tmux found on PATH (run_command does not search it); empty when it is not installed.
const std::string& tmux_path() {
  static const std::string path = [] {
    const char* env = std::getenv("PATH");
    std::istringstream dirs(env != nullptr ? env : "/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
      const std::string candidate = dir + "/tmux";
      if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return std::string();
  }();
  return path;
}

bool have_tmux() { return !tmux_path().empty(); }

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// One tmux server with one window running `gpuscope ARGS...` then a marker line with its exit code and
// the terminal's modes, so a test sees that top exited and gave the terminal back.
class TmuxTop {
 public:
  TmuxTop(int width, int height, const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
    socket_ = (dir_.path / "sock").string();
    // The shell traps SIGINT and SIGTERM (its children get the default), so Ctrl-C ends top, not the shell
    // that reports how top ended.
    std::string command = "trap true INT TERM; env LANG=C.UTF-8 LC_ALL=C.UTF-8";
    for (const auto& [k, v] : env) command += " " + k + "=" + shell_quote(v);
    command += " " + shell_quote(kExe);
    for (const auto& a : args) command += " " + shell_quote(a);
    command += "; echo \"EXITED $?\"; stty -a | tr ' ;' '\\n\\n' | grep -E '^-?(icanon|echo)$' | tr '\\n' ' '; echo; sleep 3600";
    const auto r = tmux({"-f", "/dev/null", "new-session", "-d", "-s", "top", "-x", std::to_string(width), "-y",
                         std::to_string(height), command});
    started_ = r.exit_code == 0;
    EXPECT_TRUE(started_) << r.err;
  }
  ~TmuxTop() { tmux({"kill-server"}); }

  CommandResult tmux(std::vector<std::string> args) const {
    args.insert(args.begin(), {tmux_path(), "-u", "-S", socket_});
    return run_command(args, {}, 30);
  }
  std::string screen() const { return tmux({"capture-pane", "-p", "-J", "-t", "top"}).out; }
  void keys(const std::vector<std::string>& keys) const {
    std::vector<std::string> args = {"send-keys", "-t", "top"};
    args.insert(args.end(), keys.begin(), keys.end());
    tmux(args);
  }
  void resize(int width, int height) const {
    tmux({"resize-window", "-t", "top", "-x", std::to_string(width), "-y", std::to_string(height)});
  }
  // The pid of gpuscope: the child of the window's shell.
  int top_pid() const {
    const std::string shell = tmux({"display-message", "-p", "-t", "top", "#{pane_pid}"}).out;
    std::ifstream children("/proc/" + std::to_string(std::stoi(shell)) + "/task/" + std::to_string(std::stoi(shell)) +
                           "/children");
    int pid = 0;
    children >> pid;
    return pid;
  }

  // Polls the screen until `ok` holds; the last screen either way.
  std::string wait_for(const std::function<bool(const std::string&)>& ok) const {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    std::string s;
    while (std::chrono::steady_clock::now() < deadline) {
      s = screen();
      if (ok(s)) return s;
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "the screen never showed what was expected; last screen:\n" << s;
    return s;
  }
  std::string wait_for_text(const std::string& text) const {
    return wait_for([&](const std::string& s) { return s.find(text) != std::string::npos; });
  }
  // Waits for top to have exited: the window's shell has printed the exit code and the terminal's modes.
  std::string wait_for_exit() const {
    return wait_for([](const std::string& s) {
      const auto at = s.find("EXITED");
      return at != std::string::npos && s.find("icanon", at) != std::string::npos;
    });
  }
  bool started() const { return started_; }

 private:
  TempDir dir_;
  std::string socket_;
  bool started_ = false;
};

bool has(const std::string& s, const std::string& text) { return s.find(text) != std::string::npos; }

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Display width of a captured line (UTF-8 continuation bytes do not count).
std::size_t cells(const std::string& line) {
  std::size_t n = 0;
  for (unsigned char c : line) n += (c & 0xc0) != 0x80;
  return n;
}

void expect_fits(const std::string& screen, std::size_t width, std::size_t height) {
  const auto lines = lines_of(screen);
  EXPECT_LE(lines.size(), height) << screen;
  ASSERT_FALSE(lines.empty());
  // Nothing scrolled the screen: the title is still on the first line.
  EXPECT_TRUE(lines[0].starts_with("gpuscope top")) << screen;
  for (const auto& l : lines) EXPECT_LE(cells(l), width) << l;
}

// The rows of the process table: the column of each (0 pid, 3 memory, 4 SM%).
std::vector<std::vector<std::string>> process_rows(const std::string& screen) {
  std::vector<std::vector<std::string>> rows;
  bool in_table = false;
  for (const auto& l : lines_of(screen)) {
    if (l.find("PID") != std::string::npos && l.find("COMMAND") != std::string::npos) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    std::istringstream words(l);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.size() >= 6 && std::isdigit(static_cast<unsigned char>(w[0][0]))) rows.push_back(w);
  }
  return rows;
}

double memory_mib(const std::string& text) {
  const double v = std::stod(text);
  return text.ends_with("GiB") ? v * 1024 : v;
}

#define REQUIRE_TMUX() \
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed (scripts/setup installs it)"

const std::vector<std::string> kDemo = {"--simulate=" + scenario("demo.yaml"), "top"};

TEST(TopE2e, At80x24EveryGpuShowsUtilizationBesideSmActiveAndTheProcesses) {
  REQUIRE_TMUX();
  TmuxTop t(80, 24, kDemo, frozen_env(600));
  const std::string s = t.wait_for([](const std::string& s) { return has(s, "compute_bound") && has(s, "input_starved"); });
  expect_fits(s, 80, 24);
  EXPECT_TRUE(has(s, "dgx-h100-demo-01  8 GPUs")) << s;
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(has(s, std::to_string(i) + " H100 80GB HBM3")) << s;
  EXPECT_TRUE(has(s, "util [")) << s;
  EXPECT_TRUE(has(s, "SM [")) << s;
  EXPECT_TRUE(has(s, "GPU MEM▼")) << s;
  EXPECT_TRUE(has(s, "python train.py")) << s;
}

TEST(TopE2e, At200x50EveryGpuGetsBarsSparklinesClocksAndItsVerdict) {
  REQUIRE_TMUX();
  TmuxTop t(200, 50, kDemo, frozen_env(600));
  const std::string s = t.wait_for([](const std::string& s) { return has(s, "verdict: compute bound"); });
  expect_fits(s, 200, 50);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(has(s, "GPU " + std::to_string(i) + " NVIDIA H100 80GB HBM3")) << s;
  EXPECT_TRUE(has(s, "util.gpu")) << s;
  EXPECT_TRUE(has(s, "SM active")) << s;
  EXPECT_TRUE(has(s, "tensor")) << s;
  EXPECT_TRUE(has(s, "DRAM")) << s;
  EXPECT_TRUE(has(s, "MHz")) << s;
  EXPECT_TRUE(has(s, "verdict: starved")) << s;  // GPU 2
  EXPECT_TRUE(has(s, "throttle: HwSlowdown")) << s;  // GPU 5, the straggler
}

TEST(TopE2e, HelpSortSelectionAndFocusKeys) {
  REQUIRE_TMUX();
  TmuxTop t(100, 30, kDemo, frozen_env(600));
  t.wait_for_text("python train.py");
  t.keys({"h"});
  t.wait_for_text("gpuscope top: keys");
  t.keys({"x"});  // any key closes the help
  t.wait_for([](const std::string& s) { return !has(s, "gpuscope top: keys"); });

  // Memory order, then SM% order: each column read off the screen is in descending order.
  auto s = t.wait_for([](const std::string& s) { return process_rows(s).size() >= 4; });
  auto rows = process_rows(s);
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_GE(memory_mib(rows[i - 1][3]), memory_mib(rows[i][3])) << s;
  t.keys({"S"});
  s = t.wait_for_text("SM%▼");
  rows = process_rows(s);
  ASSERT_GE(rows.size(), 4u) << s;
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_GE(std::stod(rows[i - 1][4]), std::stod(rows[i][4])) << s;
  t.keys({"s"});  // cycles on: pid
  s = t.wait_for_text("PID▼");
  rows = process_rows(s);
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_LE(std::stoi(rows[i - 1][0]), std::stoi(rows[i][0])) << s;

  t.keys({"Down", "Down"});
  t.wait_for_text("▶2 H100");
  t.keys({"5"});
  t.wait_for_text("▶5 H100");
  t.keys({"Tab"});
  s = t.wait_for_text("GPU 5 only");
  EXPECT_TRUE(has(s, "▶GPU 5 NVIDIA H100 80GB HBM3  GPU-")) << s;
  EXPECT_FALSE(has(s, "▶2 H100")) << s;
  t.keys({"Escape"});
  t.wait_for_text("all GPUs");
}

TEST(TopE2e, TheUserFilterShowsOnlyThatUsersProcessesFromTheKeyAndTheFlag) {
  REQUIRE_TMUX();
  // At 10 minutes the demo node runs alice's trainer on every GPU and bob's eval worker on GPU 3.
  TmuxTop t(100, 30, kDemo, frozen_env(600));
  auto s = t.wait_for([](const std::string& s) { return process_rows(s).size() == 9; });
  EXPECT_TRUE(has(s, "bob")) << s;
  t.keys({"u"});
  t.wait_for_text("show the processes of user");
  t.keys({"b", "o", "b", "Enter"});
  s = t.wait_for([](const std::string& s) { return has(s, "user bob") && process_rows(s).size() == 1; });
  auto rows = process_rows(s);
  ASSERT_EQ(rows.size(), 1u) << s;
  EXPECT_EQ(rows[0][0], "5300") << s;
  EXPECT_EQ(rows[0][1], "bob") << s;
  t.keys({"u", "BSpace", "BSpace", "BSpace", "Enter"});  // empty: everyone's again
  t.wait_for([](const std::string& s) { return process_rows(s).size() == 9; });

  std::vector<std::string> alice = kDemo;
  alice.insert(alice.end(), {"--user", "alice"});
  TmuxTop a(100, 30, alice, frozen_env(600));
  s = a.wait_for([](const std::string& s) { return process_rows(s).size() == 8; });
  for (const auto& row : process_rows(s)) EXPECT_EQ(row[1], "alice") << s;
  EXPECT_FALSE(has(s, "5300")) << s;
}

TEST(TopE2e, PauseFreezesTheValuesWhileReadingsGoOn) {
  REQUIRE_TMUX();
  TmuxTop t(100, 30, kDemo, live_env());  // the live clock: values move every reading
  t.wait_for_text("python train.py");
  const auto gpu_rows = [](const std::string& s) {
    const auto l = lines_of(s);
    return std::vector<std::string>(l.begin() + 2, l.begin() + std::min<std::size_t>(l.size(), 18));
  };
  t.keys({"p"});
  const std::string paused = t.wait_for_text("PAUSED");
  // Paused for at least three readings (the age of what is shown says so): the GPU rows are as they were.
  const std::string later = t.wait_for([](const std::string& s) {
    const auto at = s.find("reading ");
    return at != std::string::npos && std::stod(s.substr(at + 8)) >= 3.0;
  });
  EXPECT_EQ(gpu_rows(paused), gpu_rows(later)) << paused << "\n---\n" << later;
  t.keys({"p"});
  t.wait_for([&](const std::string& s) { return !has(s, "PAUSED") && gpu_rows(s) != gpu_rows(paused); });
}

TEST(TopE2e, QuitCtrlCAndSigtermExitZeroAndRestoreTheTerminal) {
  REQUIRE_TMUX();
  for (const std::string how : {"q", "C-c", "TERM"}) {
    TmuxTop t(80, 24, kDemo, frozen_env(600));
    t.wait_for_text("8 GPUs");
    if (how == "TERM") {
      const int pid = t.top_pid();
      ASSERT_GT(pid, 0);
      ::kill(pid, SIGTERM);
    } else {
      t.keys({how});
    }
    const std::string s = t.wait_for_exit();
    EXPECT_TRUE(has(s, "EXITED 0")) << how << "\n" << s;
    // Back on the normal screen in canonical mode with echo: the full-screen view is gone.
    EXPECT_TRUE(has(s, "icanon echo")) << how << "\n" << s;
    EXPECT_FALSE(has(s, "8 GPUs")) << how << "\n" << s;
  }
}

TEST(TopE2e, AGpuLostShowsAsLostAndComesBack) {
  REQUIRE_TMUX();
  TempDir dir;
  // scenarios/gpu_lost.yaml's fault (GPU 1 answers GPU_IS_LOST for a minute from 1m), sooner and shorter.
  const std::string lost = dir.write("lost.yaml",
                                     "description: GPU 1 lost for 4 s\nseed: 23\nnode:\n  hostname: lost-h100-01\n"
                                     "gpus:\n  count: 2\n  model: NVIDIA H100 80GB HBM3\nworkload:\n  profile: training\n"
                                     "faults:\n  - {type: gpu_lost, gpu: 1, at: 3s, for: 4s}\n");
  TmuxTop t(80, 24, {"--simulate=" + lost, "top"}, live_env());
  t.wait_for_text("GPU 1 NVIDIA H100 80GB HBM3  ");
  const std::string s = t.wait_for_text("LOST:");
  EXPECT_TRUE(has(s, "GPU 1 NVIDIA H100 80GB HBM3  LOST: GPU is lost")) << s;
  EXPECT_TRUE(has(s, "GPU 0 NVIDIA H100 80GB HBM3  ")) << s;
  // Back: values again (its temperature) and no LOST.
  const std::string back = t.wait_for([](const std::string& s) {
    return !has(s, "LOST") && has(s, "GPU 1 NVIDIA H100 80GB HBM3  ") && s.find("°C", s.find("GPU 1 NVIDIA")) != std::string::npos;
  });
  EXPECT_FALSE(has(back, "LOST")) << back;
}

TEST(TopE2e, AResizeRedrawsForTheNewSize) {
  REQUIRE_TMUX();
  TmuxTop t(80, 24, kDemo, frozen_env(600));
  t.wait_for_text("util [");
  t.resize(160, 48);
  auto s = t.wait_for([](const std::string& s) { return has(s, "util.gpu") && lines_of(s).size() > 40; });
  expect_fits(s, 160, 48);
  t.resize(70, 20);
  s = t.wait_for([](const std::string& s) { return !has(s, "util.gpu") && has(s, "8 GPUs"); });
  expect_fits(s, 70, 20);
  t.resize(50, 10);
  t.wait_for_text("too small: 50x10 (top needs 60x12)");
  t.resize(80, 24);
  s = t.wait_for_text("util [");
  expect_fits(s, 80, 24);
}

TEST(TopE2e, ASlowDriverNeverStopsTheScreenAnsweringKeysOrQuitting) {
  REQUIRE_TMUX();
  TempDir dir;
  // scenarios/slow_calls.yaml's fault made slower and from the start: every reading takes seconds.
  const std::string slow = dir.write("slow.yaml",
                                     "description: very slow NVML\nseed: 24\ngpus:\n  count: 2\n"
                                     "  model: NVIDIA H100 80GB HBM3\nworkload:\n  profile: training\n"
                                     "faults:\n  - {type: slow, function: nvmlDeviceGetFieldValues, delay: 3s, at: 0s, for: 10m}\n");
  TmuxTop t(80, 24, {"--simulate=" + slow, "top"}, live_env());
  t.wait_for_text("s (the source is slow)");
  t.keys({"h"});
  // The help is up while the first reading is still under way.
  const std::string s = t.wait_for_text("gpuscope top: keys");
  EXPECT_TRUE(has(s, "s (the source is slow)")) << s;
  EXPECT_FALSE(has(s, "2 GPUs")) << s;
  t.keys({"q"});
  const std::string after = t.wait_for_exit();
  EXPECT_TRUE(has(after, "EXITED 0")) << after;
  EXPECT_TRUE(has(after, "icanon echo")) << after;
}

TEST(TopE2e, UrlReadsARunningAgentAndItsVerdicts) {
  REQUIRE_TMUX();
  // The live clock: the agent diagnoses the readings of its last 30 s, which a frozen clock never has.
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--diagnosis.interval", "1s"},
              live_env());
  ASSERT_TRUE(agent.ready());
  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port);
  TmuxTop t(100, 30, {"top", "--url", url}, {});
  const std::string s = t.wait_for([](const std::string& s) { return has(s, "compute_bound") && has(s, "python train.py"); });
  expect_fits(s, 100, 30);
  EXPECT_TRUE(has(s, "dgx-h100-demo-01  8 GPUs  " + url)) << s;
  EXPECT_TRUE(has(s, "7 H100 80GB HBM3")) << s;
}

// scenarios/mig.yaml at 5m: GPU 0 in MIG mode with GPU instances 2 (3g.40gb), 4 (2g.20gb), 7 and 8 (1g.10gb).
TEST(TopE2e, UrlShowsAMigGpusInstanceRowsAsTheLocalTopDoes) {
  REQUIRE_TMUX();
  const auto env = frozen_env(300);
  Agent agent({"--simulate=" + scenario("mig.yaml"), "serve", "--listen", "127.0.0.1:0"}, env);
  ASSERT_TRUE(agent.ready());
  const auto api = nlohmann::json::parse(http_get(agent.port, "/api/v1/gpus").body);
  const auto& g0 = api["gpus"][0];
  EXPECT_EQ(g0["mig_enabled"], true);
  ASSERT_EQ(g0["mig_instances"].size(), 4u) << g0.dump();
  std::vector<std::pair<unsigned, std::string>> instances;
  for (const auto& m : g0["mig_instances"]) instances.emplace_back(m["gpu_instance_id"].get<unsigned>(), m["profile"].get<std::string>());
  EXPECT_EQ(instances, (std::vector<std::pair<unsigned, std::string>>{
                           {2, "3g.40gb"}, {4, "2g.20gb"}, {7, "1g.10gb"}, {8, "1g.10gb"}}));
  for (const auto& m : g0["mig_instances"]) {
    EXPECT_TRUE(m["uuid"].get<std::string>().starts_with("MIG-")) << m.dump();
    EXPECT_GT(m["values"]["fb_total_mib"].get<double>(), 0) << m.dump();
  }
  for (const auto& p : g0["processes"]) {
    if (p["pid"] == 5001) {
      EXPECT_EQ(p["gpu_instance_id"], 2) << p.dump();
    }
  }
  EXPECT_EQ(api["gpus"][1]["mig_enabled"], false);
  EXPECT_FALSE(api["gpus"][1].contains("mig_instances"));

  // The instance rows of `top --url` and of the local top on the same frozen reading: the same text from the
  // id to the process count.
  const auto row = [](const std::string& screen, const std::string& id) {
    for (const auto& l : lines_of(screen)) {
      const auto at = l.find(id);
      const auto procs = l.find(" proc", at == std::string::npos ? 0 : at);
      if (at != std::string::npos && procs != std::string::npos) return l.substr(at, procs - at);
    }
    return std::string();
  };
  const auto all_rows = [](const std::string& s) {
    return has(s, "├ 0/2   3g.40gb") && has(s, "├ 0/4   2g.20gb") && has(s, "├ 0/7   1g.10gb") && has(s, "└ 0/8   1g.10gb");
  };
  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port);
  TmuxTop remote(150, 40, {"top", "--url", url}, {});
  const std::string remote_screen = remote.wait_for(all_rows);
  TmuxTop local(150, 40, {"--simulate=" + scenario("mig.yaml"), "top"}, env);
  const std::string local_screen = local.wait_for(all_rows);
  for (const char* id : {"0/2 ", "0/4 ", "0/7 ", "0/8 "}) {
    EXPECT_FALSE(row(remote_screen, id).empty()) << id << "\n" << remote_screen;
    EXPECT_EQ(row(remote_screen, id), row(local_screen, id)) << remote_screen << "\n" << local_screen;
  }
  // The process table names the instance of a MIG process.
  EXPECT_TRUE(has(remote_screen, "0/2")) << remote_screen;
  remote.keys({"q"});
  local.keys({"q"});
  EXPECT_TRUE(has(remote.wait_for_exit(), "EXITED 0"));
  EXPECT_TRUE(has(local.wait_for_exit(), "EXITED 0"));
}

TEST(TopE2e, AnAgentThatDoesNotAnswerIsShownAsReadingAndKeysStillWork) {
  REQUIRE_TMUX();
  // A port that takes connections (the kernel's backlog) and never answers.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  TmuxTop t(80, 24, {"top", "--url", url, "--interval", "10s"}, {});
  t.wait_for_text("s (the source is slow)");
  t.keys({"?"});
  const std::string s = t.wait_for_text("gpuscope top: keys");
  EXPECT_TRUE(has(s, "reading…")) << s;
  // Once the request times out, the error is on screen.
  t.keys({"x"});
  t.wait_for_text("error: ");
  t.keys({"q"});
  EXPECT_TRUE(has(t.wait_for_exit(), "EXITED 0"));
  ::close(fd);
}

TEST(TopE2e, ATerminalTooSmallIsOneLineAndExitOne) {
  REQUIRE_TMUX();
  TmuxTop t(40, 10, kDemo, frozen_env(600));
  const std::string s = t.wait_for_exit();
  EXPECT_TRUE(has(s, "gpuscope: terminal too small for top: 40x10 (it needs at least 60x12)")) << s;
  EXPECT_TRUE(has(s, "EXITED 1")) << s;
}

TEST(TopE2e, BadFlagsAndNoTerminalAreOneLineAndExitTwo) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {kExe, "--simulate", "top", "--bogus"},
           {kExe, "--simulate", "top", "--interval", "5ms"},
           {kExe, "--simulate", "top", "--sort", "name"},
           {kExe, "--simulate", "top", "--url", "gpu-host:9400"},
           {kExe, "--simulate", "top"},  // stdout is a pipe here
       }) {
    const auto r = run_command(args, frozen_env(600), 60);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.err.starts_with("gpuscope: ")) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  EXPECT_TRUE(has(run_command({kExe, "--simulate", "top"}, frozen_env(600), 60).err, "top needs a terminal"));
  const auto help = run_command({kExe, "top", "--help"}, {}, 60);
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(has(help.out, "gpuscope top --url")) << help.out;
}

}  // namespace
}  // namespace gpuscope::e2e
