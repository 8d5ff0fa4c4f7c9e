#include "trace/rank_timeline.h"

#include <algorithm>
#include <charconv>

namespace gpuscope::trace {
namespace {

// torch.profiler's annotation of each step, numbered by its step counter.
constexpr std::string_view kStepPrefix = "ProfilerStep#";

// `needle` in lower-case ASCII letters: a byte matches its letter in either case (OR-ing in 0x20 maps
// no other byte onto a lower-case letter), without a locale lookup per byte.
bool contains_ignoring_case(std::string_view text, std::string_view needle) {
  return std::search(text.begin(), text.end(), needle.begin(), needle.end(),
                     [](char a, char b) { return static_cast<char>(a | 0x20) == b; }) != text.end();
}

ActivityKind kind_of(const TraceEvent& event, bool communication_name) {
  switch (event.category) {
    case EventCategory::kGpuMemcpy: return ActivityKind::kMemcpy;
    case EventCategory::kGpuMemset: return ActivityKind::kMemset;
    default: return communication_name ? ActivityKind::kCommunicationKernel : ActivityKind::kComputeKernel;
  }
}

}  // namespace

std::string_view direction_name(TransferDirection direction) {
  switch (direction) {
    case TransferDirection::kHostToDevice: return "H2D";
    case TransferDirection::kDeviceToHost: return "D2H";
    case TransferDirection::kDeviceToDevice: return "D2D";
    case TransferDirection::kPeerToPeer: return "P2P";
    case TransferDirection::kHostToHost: return "H2H";
    case TransferDirection::kMemset: return "memset";
    case TransferDirection::kOther: return "other";
  }
  return "other";
}

TransferDirection direction_of_memcpy(std::string_view name) {
  if (name.find("HtoD") != std::string_view::npos) return TransferDirection::kHostToDevice;
  if (name.find("DtoH") != std::string_view::npos) return TransferDirection::kDeviceToHost;
  if (name.find("DtoD") != std::string_view::npos) return TransferDirection::kDeviceToDevice;
  if (name.find("PtoP") != std::string_view::npos || name.find("Peer") != std::string_view::npos) {
    return TransferDirection::kPeerToPeer;
  }
  if (name.find("HtoH") != std::string_view::npos) return TransferDirection::kHostToHost;
  return TransferDirection::kOther;
}

bool is_communication_kernel(std::string_view name) { return contains_ignoring_case(name, "nccl"); }

bool is_synchronizing_call(std::string_view name) {
  if (name.find("Synchronize") != std::string_view::npos) return true;  // cudaStreamSynchronize, cuCtxSynchronize, ...
  const bool copy = name.starts_with("cudaMemcpy") || name.starts_with("cuMemcpy");
  return copy && name.find("Async") == std::string_view::npos;
}

TimelineBuilder::TimelineBuilder(RankTimeline& timeline, const std::regex& data_loading_pattern)
    : timeline_(timeline), data_loading_pattern_(data_loading_pattern) {}

std::uint32_t TimelineBuilder::intern(std::string_view name) {
  const std::size_t slot =
      (name.size() * 31 + (name.empty() ? 0 : static_cast<unsigned char>(name.back()) * 7 + static_cast<unsigned char>(name[name.size() / 2]))) %
      kRecentNames;
  if (recent_valid_[slot] && timeline_.names[recent_names_[slot]] == name) return recent_names_[slot];
  recent_valid_[slot] = true;
  if (auto it = name_ids_.find(name); it != name_ids_.end()) return recent_names_[slot] = it->second;
  const auto id = static_cast<std::uint32_t>(timeline_.names.size());
  timeline_.names.emplace_back(name);
  timeline_.communication_names.push_back(is_communication_kernel(name));  // once per name, not per event
  name_ids_.emplace(std::string(name), id);
  recent_names_[slot] = id;
  return id;
}

void TimelineBuilder::reserve_for(std::uint64_t json_bytes) {
  // The smallest useful events are ~70 bytes ({"ph":"X","cat":"kernel","ts":1,"dur":1,"args":{...}});
  // a real trace spends ~3.7 KB of JSON per activity and ~1.4 KB per runtime call. Past 64 MiB of room
  // each, the arrays grow as usual.
  constexpr std::uint64_t kBytesPerEvent = 64, kCapBytes = 64u << 20;
  const std::uint64_t events = json_bytes / kBytesPerEvent;
  timeline_.activities.reserve(std::min<std::uint64_t>(events, kCapBytes / sizeof(GpuActivity)));
  timeline_.runtime_calls.reserve(std::min<std::uint64_t>(events, kCapBytes / sizeof(RuntimeCall)));
  timeline_.cpu_events.reserve(std::min<std::uint64_t>(events, kCapBytes / sizeof(CpuEvent)));
}

bool TimelineBuilder::is_data_loading(std::string_view name) {
  if (auto it = data_loading_names_.find(name); it != data_loading_names_.end()) return it->second;
  const bool match = std::regex_search(name.begin(), name.end(), data_loading_pattern_);
  data_loading_names_.emplace(std::string(name), match);
  return match;
}

void TimelineBuilder::on_event(const TraceEvent& event) {
  const std::int64_t end = event.start_ns + event.duration_ns;
  // A gpu_user_annotation repeats a CPU range on the GPU: not an event of its own for the span.
  if (event.category != EventCategory::kOther && event.category != EventCategory::kGpuUserAnnotation) {
    timeline_.first_ns = std::min(timeline_.first_ns, event.start_ns);
    timeline_.last_ns = std::max(timeline_.last_ns, end);
  }
  switch (event.category) {
    case EventCategory::kKernel:
    case EventCategory::kGpuMemcpy:
    case EventCategory::kGpuMemset: {
      GpuActivity a;
      a.start_ns = event.start_ns;
      a.duration_ns = event.duration_ns;
      a.correlation = event.correlation;
      a.name_id = intern(event.name);
      a.stream = static_cast<std::int32_t>(event.stream);
      a.device = static_cast<std::int16_t>(event.device);
      a.kind = kind_of(event, timeline_.communication_names[a.name_id]);
      if (a.kind == ActivityKind::kMemcpy || a.kind == ActivityKind::kMemset) a.bytes_code = encode_transfer_bytes(event.bytes);
      timeline_.activities.push_back(a);
      if (a.kind == ActivityKind::kMemcpy || a.kind == ActivityKind::kMemset) {
        const TransferDirection direction =
            a.kind == ActivityKind::kMemset ? TransferDirection::kMemset : direction_of_memcpy(event.name);
        auto& totals = timeline_.transfers[{event.device, direction}];
        ++totals.count;
        totals.bytes += std::max<std::int64_t>(event.bytes, 0);
        totals.duration_ns += event.duration_ns;
      }
      break;
    }
    case EventCategory::kCudaRuntime:
      if (event.correlation >= 0) {
        timeline_.runtime_calls.push_back(RuntimeCall{event.correlation, event.start_ns, event.duration_ns,
                                                      intern(event.name), compact_tid(event.tid)});
      }
      break;
    case EventCategory::kCpuOp:
      ++timeline_.cpu_ops;
      timeline_.cpu_events.push_back(
          CpuEvent{event.start_ns, event.duration_ns, intern(event.name), compact_tid(event.tid), CpuEventKind::kCpuOp});
      break;
    case EventCategory::kGpuUserAnnotation:
      timeline_.cpu_events.push_back(CpuEvent{event.start_ns, event.duration_ns, intern(event.name),
                                              compact_tid(event.tid), CpuEventKind::kGpuUserAnnotation});
      break;
    case EventCategory::kUserAnnotation:
      ++timeline_.annotations;
      timeline_.cpu_events.push_back(CpuEvent{event.start_ns, event.duration_ns, intern(event.name),
                                              compact_tid(event.tid), CpuEventKind::kUserAnnotation});
      if (event.name.starts_with(kStepPrefix)) {
        timeline_.steps.push_back(Interval{event.start_ns, end});
        const std::string_view digits = event.name.substr(kStepPrefix.size());
        std::int64_t number = 0;
        const auto [at, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
        if (ec == std::errc() && at == digits.data() + digits.size()) timeline_.step_numbers.push_back(number);
      } else if (is_data_loading(event.name)) {
        timeline_.data_loading.push_back(Interval{event.start_ns, end});
      }
      break;
    case EventCategory::kPythonFunction: {
      auto it = timeline_.python_functions.find(event.name);
      if (it == timeline_.python_functions.end()) it = timeline_.python_functions.emplace(std::string(event.name), NamedTotals{}).first;
      ++it->second.count;
      it->second.total_ns += event.duration_ns;
      it->second.max_ns = std::max(it->second.max_ns, event.duration_ns);
      break;
    }
    case EventCategory::kOther:
      break;
  }
}

}  // namespace gpuscope::trace
