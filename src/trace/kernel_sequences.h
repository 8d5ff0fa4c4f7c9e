// KernelSequences: runs of consecutive kernels on one stream that repeat (length 2 to N): the
// candidates for fusion or for capture in a CUDA graph. Kernel name ids are hashed (a rolling 64-bit
// hash per start position and length) and counted in an open-addressing table, so no string is
// compared; the sequences listed are then found again id by id and their figures counted from those
// occurrences, so a hash collision (about 1e-10 for the 60k sequences of the 35 MB trace) could only
// change which candidates are looked at, never a figure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trace/rank_timeline.h"

namespace gpuscope::trace {

struct KernelSequence {
  std::int64_t stream = -1;
  std::vector<std::string> kernels;  // the sequence, in launch order
  std::uint64_t repeats = 0;         // non-overlapping occurrences, counted left to right
  std::int64_t kernel_ns = 0;        // GPU time of the kernels in all occurrences
  std::int64_t inner_idle_ns = 0;    // host-wait and kernel-wait gaps between them, inside occurrences
  std::uint64_t launches_saved = 0;  // (length - 1) * repeats: one launch per occurrence instead of length
  std::int64_t launch_ns = 0;        // launches_saved * the device's mean launch call
  // inner_idle_ns + launch_ns: what one graph launch (or one fused kernel) per occurrence could save.
  std::int64_t saving_ns() const { return inner_idle_ns + launch_ns; }
};

struct KernelSequenceOptions {
  std::size_t min_length = 2;
  std::size_t max_length = 8;
  std::size_t top = 5;
  std::int64_t mean_launch_ns = 0;  // the device's mean runtime launch call
  std::int64_t kernel_wait_threshold_ns = 30'000;
  // A gap this long on the stream ends a run: the kernels around it were not launched as one burst (a
  // collective waiting for its bucket, a data wait), and neither fusion nor a graph would join them.
  std::int64_t break_gap_ns = 1'000'000;
};

// `acts`: one device's activities sorted by start. A memcpy or memset, or a gap of break_gap_ns, breaks
// a run of kernels. The
// result holds the `top` sequences by saving; a sequence whose occurrences mostly lie inside those of
// one already listed (a part of it, a rotation of a periodic pattern) is left out.
std::vector<KernelSequence> find_kernel_sequences(std::span<const GpuActivity> acts, const std::vector<std::string>& names,
                                                  const KernelSequenceOptions& options);

}  // namespace gpuscope::trace
