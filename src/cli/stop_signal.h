// Ending a loop cleanly: SIGINT/SIGTERM set a flag that `gpuscope query -l` and `dmon` check between
// readings, so they finish the line they are printing, flush, and exit 0 like nvidia-smi does.
#pragma once

#include <atomic>
#include <chrono>

namespace gpuscope::cli {

// The flag the process's signal handlers set.
const std::atomic<bool>& process_stop_flag();

// Installs the handlers (idempotent). A second signal kills the process the default way, so a loop
// stuck inside a driver call can still be interrupted.
void install_stop_handlers();

// Sleeps until `deadline`, waking early when `stop` is set; false when stopped.
bool sleep_until_or_stopped(std::chrono::steady_clock::time_point deadline, const std::atomic<bool>& stop);

}  // namespace gpuscope::cli
