// LocalReader: one `gpuscope top` reading from NVML (the driver or the simulator), with each GPU's
// verdict from the project's diagnosis over the readings top has taken: they go through the agent's
// recorder into a recent window, which the diagnosis reads as the agent's DiagnosisLoop does, so top,
// `gpuscope diagnose` and the agent agree on what a GPU is doing.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "agent/history_recorder.h"
#include "analysis/diagnosis.h"
#include "analysis/reading_source.h"
#include "analysis/thresholds.h"
#include "log/logger.h"
#include "model/snapshot.h"
#include "nvml/nvml_backend.h"
#include "store/recent_window.h"
#include "top/top_frame.h"

namespace gpuscope::top {

struct LocalReaderOptions {
  std::set<unsigned> gpus;  // NVML indices to show; empty: all
  // The diagnosis window: the agent's default (serve --diagnosis-window), so the verdicts match its.
  std::chrono::milliseconds diagnosis_window{30'000};
  analysis::Thresholds thresholds;
};

class LocalReader {
 public:
  // `backend` must outlive the reader; read() is called from one thread at a time.
  LocalReader(nvml::NvmlBackend& backend, LocalReaderOptions options);
  std::expected<Frame, std::string> read();

  // The Frame of one snapshot, without verdicts (tests).
  static Frame frame_of(const model::Snapshot& snapshot, const std::vector<model::GpuInfo>& gpus,
                        const model::SystemInfo& system, const std::set<unsigned>& only);
  // Puts each diagnosis' verdict on its GPU's row, or on its GPU instance's row when its series carry
  // GPU_I_ID (a MIG instance is diagnosed on its own): a GPU row never shows one of its instances' verdicts.
  static void attach_verdicts(Frame& frame, const analysis::Diagnosis& diagnosis);

 private:
  nvml::NvmlBackend& backend_;
  LocalReaderOptions options_;
  std::ostringstream log_text_;  // the recorder's warnings: never onto the terminal top draws on
  log::Logger log_;
  store::RecentWindow window_;
  agent::HistoryRecorder recorder_;
  analysis::StoreSource source_;
  // The previous reading's time on the driver's clock, and when it was taken on the steady clock.
  std::optional<std::chrono::system_clock::time_point> last_time_;
  std::chrono::steady_clock::time_point last_steady_;
};

}  // namespace gpuscope::top
