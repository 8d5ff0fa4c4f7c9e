#include "trace/trace_report_json.h"

#include "trace/counters_report.h"
#include "trace/extras_report.h"
#include "trace/ops_report.h"
#include "trace/rank_comparison.h"

namespace gpuscope::trace {
namespace {

using json = nlohmann::ordered_json;

double seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

// null, not -1, for a file whose rank neither distributedInfo nor its name says.
json rank_json_value(std::int64_t rank) { return rank >= 0 ? json(rank) : json(nullptr); }
json idle_json(const IdleBreakdown& idle) {
  return json{{"host_wait_seconds", seconds(idle.host_wait_ns)},
              {"kernel_wait_seconds", seconds(idle.kernel_wait_ns)},
              {"other_seconds", seconds(idle.other_ns)}};
}

json kernels_json(const std::vector<KernelReport>& kernels) {
  json list = json::array();
  for (const auto& k : kernels) {
    list.push_back(json{{"name", k.name},
                        {"count", k.count},
                        {"total_seconds", seconds(k.total_ns)},
                        {"mean_seconds", k.count > 0 ? seconds(k.total_ns) / static_cast<double>(k.count) : 0.0},
                        {"max_seconds", seconds(k.max_ns)},
                        {"share_ratio", k.share}});
  }
  return list;
}

json device_json(const DeviceReport& d) {
  json streams = json::array();
  for (const auto& s : d.streams) {
    streams.push_back(json{{"stream", s.stream},
                           {"activities", s.activities},
                           {"window_seconds", seconds(s.window_ns)},
                           {"busy_seconds", seconds(s.busy_ns)},
                           {"idle_seconds", seconds(s.window_ns - s.busy_ns)},
                           {"idle", idle_json(s.idle)}});
  }
  json transfers = json::array();
  for (const auto& t : d.transfers) {
    transfers.push_back(json{{"direction", t.direction},
                             {"count", t.count},
                             {"bytes", t.bytes},
                             {"seconds", seconds(t.duration_ns)},
                             {"bandwidth_bytes_per_second", t.bytes_per_second()}});
  }
  const auto& l = d.launch;
  json launch{{"launched_activities", l.launched},
              {"unmatched_activities", l.unmatched},
              {"runtime_calls", l.calls},
              {"runtime_call_mean_seconds", l.calls > 0 ? seconds(l.call_total_ns) / static_cast<double>(l.calls) : 0.0},
              {"runtime_call_max_seconds", seconds(l.call_max_ns)},
              {"launch_delay_mean_seconds", seconds(l.delay_mean_ns)},
              {"launch_delay_p50_seconds", seconds(l.delay_p50_ns)},
              {"launch_delay_p95_seconds", seconds(l.delay_p95_ns)},
              {"launch_delay_max_seconds", seconds(l.delay_max_ns)},
              {"kernels", l.kernels},
              {"short_kernels", l.short_kernels},
              {"short_kernel_count_ratio", l.kernels > 0 ? static_cast<double>(l.short_kernels) / static_cast<double>(l.kernels) : 0.0},
              {"short_kernel_time_ratio", ratio(l.short_kernel_ns, d.kernel_total_ns)}};
  return json{
      {"device", d.device},
      {"name", d.name},
      {"window_start_seconds", seconds(d.window_start_ns)},
      {"window_seconds", seconds(d.window_ns())},
      {"busy_seconds", seconds(d.busy_ns)},
      {"idle_seconds", seconds(d.idle_ns())},
      {"busy_ratio", ratio(d.busy_ns, d.window_ns())},
      {"idle_ratio", ratio(d.idle_ns(), d.window_ns())},
      {"idle", idle_json(d.idle)},
      // Issue 22: "idle" is device-wide (no stream busy); the same split under a name that says so.
      {"device_wide_idle", idle_json(d.idle)},
      {"host_wait_idle_ratio", ratio(d.idle.host_wait_ns, d.idle_ns())},
      {"streams", streams},
      {"kernel_breakdown",
       json{{"computation_seconds", seconds(d.computation_ns)},
            {"communication_seconds", seconds(d.communication_ns)},
            {"memory_seconds", seconds(d.memory_ns)},
            {"computation_ratio", ratio(d.computation_ns, d.computation_ns + d.communication_ns + d.memory_ns)},
            {"communication_ratio", ratio(d.communication_ns, d.computation_ns + d.communication_ns + d.memory_ns)},
            {"memory_ratio", ratio(d.memory_ns, d.computation_ns + d.communication_ns + d.memory_ns)}}},
      {"communication_seconds", seconds(d.communication_union_ns)},
      {"computation_seconds", seconds(d.computation_union_ns)},
      {"communication_overlap_seconds", seconds(d.overlap_ns)},
      {"communication_overlap_ratio", ratio(d.overlap_ns, d.communication_union_ns)},
      {"kernel_count", d.kernel_count},
      {"kernel_seconds", seconds(d.kernel_total_ns)},
      {"top_kernels", kernels_json(d.top_kernels)},
      {"transfers", transfers},
      {"launch", launch},
      {"data_loading_idle_seconds", seconds(d.data_loading_idle_ns)},
      {"data_loading_idle_ratio", ratio(d.data_loading_idle_ns, d.idle_ns())},
      {"verdict", json{{"kind", verdict_key(d.verdict.kind)}, {"evidence", d.verdict.evidence}, {"fix", d.verdict.fix}}},
      {"idle_intervals", idle_intervals_json(d.idle_intervals)},
      {"kernel_sequences", kernel_sequences_json(d.kernel_sequences)},
      {"launch_queue", queue_length_json(d.queue_length)},
      {"memory_bandwidth", memory_bandwidth_json(d.memory_bandwidth)},
  };
}

json rank_json(const RankReport& r) {
  json devices = json::array();
  for (const auto& d : r.devices) devices.push_back(device_json(d));
  json problems = json::array();
  for (const auto& p : r.parse.problems) problems.push_back(p);
  json out{
      {"file", r.file},
      {"rank", rank_json_value(display_rank(r))},
      {"world_size", r.world_size ? json(*r.world_size) : json(nullptr)},
      {"backend", r.backend ? json(*r.backend) : json(nullptr)},
      {"span_start_seconds", seconds(r.span_start_ns)},
      {"span_seconds", seconds(r.span_ns())},
      {"steps",
       json{{"count", r.steps.count},
            {"mean_seconds", seconds(r.steps.mean_ns)},
            {"median_seconds", seconds(r.steps.median_ns)},
            {"max_seconds", seconds(r.steps.max_ns)},
            {"first_number", r.steps.first_number ? json(*r.steps.first_number) : json(nullptr)},
            {"last_number", r.steps.last_number ? json(*r.steps.last_number) : json(nullptr)}}},
      {"data_loading_seconds", seconds(r.data_loading_ns)},
      {"devices", devices},
      {"verdict", r.main_device() != nullptr ? json(verdict_key(r.main_device()->verdict.kind)) : json("no_gpu_work")},
      {"parse",
       json{{"json_bytes", r.parse.json_bytes},
            {"seconds", r.parse_seconds},
            {"bytes_per_second", r.parse_seconds > 0 ? static_cast<double>(r.parse.json_bytes) / r.parse_seconds : 0.0},
            {"event_objects", r.parse.event_objects},
            {"complete_events", r.parse.complete_events},
            {"unparsed_events", r.parse.unparsed_events},
            {"skipped_events", r.parse.skipped_events},
            {"skipped_bytes", r.parse.skipped_bytes},
            {"truncated", r.parse.truncated},
            {"problems", problems}}},
  };
  if (!r.python_functions.empty()) out["python_functions"] = kernels_json(r.python_functions);
  out["per_step"] = per_step_json(r);
  out["attribution"] = attribution_json(r.ops, 10);
  out["critical_path"] = critical_path_json(r.critical_path);
  return out;
}

}  // namespace

nlohmann::ordered_json trace_report_json(const TraceReport& report) {
  json ranks = json::array();
  for (const auto& r : report.ranks) ranks.push_back(rank_json(r));
  json out{{"input_bytes", report.input_bytes}, {"ranks", ranks}};
  if (report.comparison.straggler) {
    const auto& s = *report.comparison.straggler;
    json straggler{{"rank", rank_json_value(s.rank)}, {"file", s.file}, {"basis", straggler_basis_key(s.basis)}, {"evidence", s.evidence}};
    if (s.basis == StragglerBasis::kSteps) {
      straggler["median_step_seconds"] = s.value;
      straggler["others_median_step_seconds"] = s.others_median;
      straggler["excess_ratio"] = s.excess;
      straggler["threshold_ratio"] = s.threshold;
    } else {
      straggler["busy_ratio"] = s.value;
      straggler["others_median_busy_ratio"] = s.others_median;
      straggler["gap_ratio"] = s.excess;
      straggler["threshold_ratio"] = s.threshold;
    }
    out["straggler"] = straggler;
  }
  if (report.comparison.no_straggler) {
    const auto& n = *report.comparison.no_straggler;
    out["no_straggler"] = json{{"reason", no_straggler_key(n.reason)}, {"evidence", n.evidence}};
  }
  if (!report.skipped_files.empty()) out["skipped_files"] = report.skipped_files;
  return out;
}

}  // namespace gpuscope::trace
