// `gpuscope top`: a full-screen live view of the GPUs, like nvtop or nvitop, that puts nvidia-smi's
// "GPU util" beside SM active so the difference shows, with each GPU's verdict and its processes.
// Readings come from NVML (or the simulator) or from a running agent (--url).
#pragma once

#include <chrono>
#include <expected>
#include <span>
#include <string>

#include "cli/invocation.h"
#include "top/top_model.h"

namespace gpuscope::cli {

struct TopOptions {
  std::string url;  // a running agent's base URL; empty: NVML
  std::chrono::milliseconds interval{1000};
  std::string ids;   // -i: indices, UUIDs or PCI bus ids
  std::string user;  // the process table's user filter at start
  top::SortKey sort = top::SortKey::kMemory;
};

// The shortest --interval: a reading of 8 GPUs takes a few ms, and faster than this is no easier to read.
inline constexpr std::chrono::milliseconds kTopMinInterval{100};

std::expected<TopOptions, ParseExit> parse_top_args(std::span<const std::string> args);
int run_top(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
