// KernelSummary: what `nsys stats --report cuda_gpu_kern_sum` prints, computed from a rank's timeline
// (an nsys report or a PyTorch trace alike) without nsys: per kernel name, the share of all kernel time,
// total, instances, mean, median, min, max and standard deviation, sorted by total time, largest first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/rank_timeline.h"

namespace gpuscope::trace {

struct KernelSummaryRow {
  std::string name;
  std::uint64_t instances = 0;
  std::int64_t total_ns = 0;
  std::int64_t min_ns = 0;
  std::int64_t max_ns = 0;
  double average_ns = 0;
  // The middle duration, or the mean of the two middle ones for an even count (as nsys's median()).
  double median_ns = 0;
  // The sample standard deviation (n - 1 in the denominator), 0 for one instance: nsys's stdev(). Its
  // figures say so: `osrt_sum` printed 233,376,198.5 for two calls of 2,971,823 and 333,015,608 ns,
  // which is |a - b| / sqrt(2), where the population's would be |a - b| / 2.
  double stddev_ns = 0;
  double time_ratio = 0;  // of the total time of all kernels (0..1); nsys prints it as a percentage
};

struct KernelSummary {
  std::string file;
  std::int64_t rank = -1;  // -1: not known
  std::vector<KernelSummaryRow> rows;
};

// Every kernel of the timeline (all devices, compute and NCCL; not copies or memsets), grouped by name.
KernelSummary summarize_kernels(const RankTimeline& timeline);

// nsys's table layout: right-aligned numbers with thousands separators, one decimal for the mean,
// median, standard deviation and the percentage. One table per summary, each under a line naming its
// file (and rank).
std::string kernel_summary_text(const std::vector<KernelSummary>& summaries);

// {"kernel_summaries": [{"file", "rank", "kernels": [{"name", "time_ratio", "total_ns", "instances",
// "average_ns", "median_ns", "min_ns", "max_ns", "stddev_ns"}]}]}: nanoseconds, the unit nsys reports in
// and where the integers stay exact.
nlohmann::ordered_json kernel_summary_json(const std::vector<KernelSummary>& summaries);

}  // namespace gpuscope::trace
