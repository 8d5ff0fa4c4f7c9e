#include "cli/stop_signal.h"

#include <csignal>
#include <thread>

namespace gpuscope::cli {
namespace {

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the flag is written from a signal handler");

extern "C" void on_stop_signal(int) { g_stop.store(true, std::memory_order_relaxed); }

// Short enough that Ctrl-C feels immediate, long enough to cost nothing.
constexpr auto kStopPollSlice = std::chrono::milliseconds(50);

}  // namespace

const std::atomic<bool>& process_stop_flag() { return g_stop; }

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool sleep_until_or_stopped(std::chrono::steady_clock::time_point deadline, const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(deadline - now, kStopPollSlice));
  }
  return false;
}

}  // namespace gpuscope::cli
