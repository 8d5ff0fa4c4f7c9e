#include "analysis/timeline.h"

#include <algorithm>

namespace gpuscope::analysis {
namespace {

// Each read covers up to this many steps (plus one window before them) and at most kMaxChunkMs of
// steps, so what one read holds is bounded by time, whatever --step is.
constexpr std::int64_t kStepsPerChunk = 600;
constexpr std::int64_t kMaxChunkMs = 3600LL * 1000;

}  // namespace

std::int64_t default_step_ms(std::int64_t window_ms) { return std::max<std::int64_t>(1000, window_ms / 10); }

std::expected<std::vector<VerdictChange>, std::string> timeline(const ReadingSource& source,
                                                                 const TimelineOptions& options,
                                                                 const Thresholds& thresholds, const GpuFilter& filter) {
  const std::int64_t step = options.step_ms > 0 ? options.step_ms : default_step_ms(options.window_ms);
  VerdictTracker tracker(options.min_hold);
  std::vector<VerdictChange> changes;
  // Whole steps per chunk: at least one (a step longer than the cap reads its own window only).
  const std::int64_t chunk_ms = step * std::max<std::int64_t>(1, std::min(kStepsPerChunk, kMaxChunkMs / step));
  for (std::int64_t chunk = options.from_ms; chunk < options.to_ms; chunk += chunk_ms) {
    const std::int64_t chunk_end = std::min(options.to_ms, chunk + chunk_ms);
    // The first diagnosis of the chunk, at chunk + step, reads back one window.
    auto gpus = read_histories(source, chunk + step - options.window_ms, chunk_end);
    if (!gpus) return std::unexpected(gpus.error());
    for (std::int64_t at = chunk + step; at <= chunk_end; at += step) {
      Diagnosis d = diagnose(*gpus, at, options.window_ms, thresholds);
      // A GPU with no reading in this window (before it appeared, after it went) has no verdict here.
      std::erase_if(d.gpus, [](const GpuDiagnosis& g) { return g.readings == 0 && g.verdict == Verdict::kUnknown; });
      // The filter after the diagnosis: the other GPUs are the peers a GPU is compared with.
      std::erase_if(d.gpus, [&](const GpuDiagnosis& g) { return !filter.matches(g.identity); });
      for (auto& c : tracker.update(d)) changes.push_back(std::move(c));
    }
    if (chunk_end == options.to_ms) break;
  }
  return changes;
}

}  // namespace gpuscope::analysis
