// The drawing of `gpuscope top`: a model, the view state and the reading source's state laid out into a
// ScreenBuffer of any size. Per GPU, utilization.gpu (what nvidia-smi calls GPU util) beside SM active
// (how much of the GPU was busy), tensor and DRAM activity, memory, power, temperature, clocks,
// throttle reasons and the diagnosis' verdict; below, the processes. The layout shrinks from five rows
// per GPU to two or one as the terminal gets smaller, and scrolls to keep the selected GPU in view.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "top/screen_buffer.h"
#include "top/top_keys.h"
#include "top/top_model.h"

namespace gpuscope::top {

// The smallest terminal drawn; below it the screen only says it is too small.
inline constexpr int kMinWidth = 60;
inline constexpr int kMinHeight = 12;

// What the screen says about where readings come from and how they are going.
struct SourceView {
  std::string source;  // "NVML (simulated)", "http://gpu-host:9400"
  std::chrono::milliseconds interval{1000};
  std::optional<double> age_seconds;          // since the reading on screen was taken; none before the first
  std::optional<double> reading_for_seconds;  // a reading in progress for this long, once it is late
  std::string error;                          // the last reading's failure, empty when it succeeded
  std::string clock_text;                     // "14:03:27", the local time
};

void draw_screen(const TopModel& model, const ViewState& view, const SourceView& source, ScreenBuffer& out);

}  // namespace gpuscope::top
