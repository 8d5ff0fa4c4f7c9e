// Statistics of one GPU's readings over a segment of time, as the diagnosis asks for them: means of
// the ratios, the share of readings a throttle reason was on, whether the readings are steady or swing
// in a sawtooth, and the PCIe link's capacity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "analysis/gpu_signals.h"
#include "analysis/thresholds.h"

namespace gpuscope::analysis {

struct Stat {
  std::size_t count = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  double first = 0;
  double last = 0;
};

class Segment {
 public:
  // The readings with from_ms < t <= to_ms.
  Segment(const GpuHistory& history, std::int64_t from_ms, std::int64_t to_ms);

  std::int64_t from_ms() const { return from_ms_; }
  std::int64_t to_ms() const { return to_ms_; }
  const GpuHistory& history() const { return history_; }

  std::optional<Stat> stat(Signal s) const;
  std::optional<double> mean(Signal s) const;
  std::optional<double> last(Signal s) const;
  // FP32 + FP16 + FP64 pipe activity; none when no pipe is recorded.
  std::optional<double> float_pipes() const;
  // How many readings of the GPU's activity the segment holds (the most of GR, SM and utilization).
  std::size_t readings() const;
  // The share of readings with any of `bits` among the throttle reasons; none when not recorded.
  std::optional<double> throttle_share(std::uint64_t bits) const;
  // What the PCIe link carries per direction, bytes/s, from its current generation and width.
  std::optional<double> link_bytes_per_second() const;
  // Every activity ratio (GR, SM, tensor, DRAM; utilization/100 without them; PCIe RX and TX as shares
  // of the link) within `tolerance` over the segment.
  bool steady(double tolerance) const;
  // Whether the mean of any activity ratio differs from `other`'s by more than `tolerance`.
  bool differs_from(const Segment& other, double tolerance) const;
  // A sawtooth or bursts slower than the readings: SM active (GR when SM is not recorded) swings from
  // a peak of at least `peak` to below half of it in at least `low_share` of the readings, rising at
  // least twice.
  bool sawtooth(double peak, double low_share) const;

 private:
  // The activity ratios steady() and differs_from() compare, each as its values in the segment, in a
  // fixed order (a ratio not recorded is left out).
  std::vector<std::vector<double>> activity() const;

  const GpuHistory& history_;
  std::int64_t from_ms_;
  std::int64_t to_ms_;
};

// The longest run of readings ending at times[end - 1] whose activity ratios (as Segment::steady reads
// them) stay within `tolerance`: how many of times[0, end) it holds, at least 1. One pass over the
// readings, so an hour-long window costs what its readings do.
std::size_t steady_run(const GpuHistory& history, std::span<const Point> times, std::size_t end, double tolerance);

// Bytes/s one direction of a PCIe link carries (after line coding) at `gen` and `width`.
std::optional<double> pcie_link_bytes_per_second(double gen, double width);

}  // namespace gpuscope::analysis
