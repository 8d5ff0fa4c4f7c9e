#include "trace/device_extras.h"

namespace gpuscope::trace {

DeviceGaps analyze_device_extras(DeviceReport& d, std::span<const GpuActivity> acts, const RankExtrasInput& in) {
  DeviceGaps gaps = find_idle_gaps(acts, in.options.kernel_wait_threshold_ns);
  d.idle_intervals = analyze_idle_intervals(IdleIntervalsInput{in.timeline, gaps, in.long_calls, in.data_loading, in.steps,
                                                               in.trace_start_ns, in.options.explained_gaps});
  KernelSequenceOptions seq;
  seq.max_length = in.options.max_sequence_length;
  seq.top = in.options.sequence_top;
  seq.kernel_wait_threshold_ns = in.options.kernel_wait_threshold_ns;
  seq.mean_launch_ns = d.launch.calls > 0 ? d.launch.call_total_ns / static_cast<std::int64_t>(d.launch.calls) : 0;
  d.kernel_sequences = find_kernel_sequences(acts, in.timeline.names, seq);
  return gaps;
}

StepsReport analyze_rank_steps(std::int64_t device, std::span<const GpuActivity> acts, const DeviceGaps& gaps,
                               const RankExtrasInput& in, std::int64_t trace_end_ns) {
  return analyze_steps(StepAnalysisInput{acts, gaps.device, in.steps, in.timeline.names, in.trace_start_ns, trace_end_ns, device,
                                         in.options.drop_incomplete_steps});
}

}  // namespace gpuscope::trace
