// Training events: what a training loop tells the agent (a step ended, an epoch began or ended) in the
// wire format of clients/README.md, one JSON object a line, and the reasons one is turned away.
// Parsing is on the agent's intake path (≥ 100k events/s on 2 cores), so it reads with simdjson's
// On Demand API into a reused buffer and allocates only for the event's own strings.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

namespace gpuscope::analysis {

enum class TrainingEventKind { kStep, kEpochStart, kEpochEnd };

// The protocol's bounds: they keep what one event or one sender can make the agent hold small.
inline constexpr std::size_t kMaxEventBytes = 4096;
inline constexpr std::size_t kMaxJobNameBytes = 128;
inline constexpr unsigned kMaxRank = 65535;
inline constexpr std::size_t kMaxScalarsPerEvent = 32;
inline constexpr std::size_t kMaxScalarNameBytes = 64;
// A step longer than a day is a clock or unit mistake, not a step.
inline constexpr double kMaxStepDurationSeconds = 86400;

struct TrainingEvent {
  TrainingEventKind kind = TrainingEventKind::kStep;
  std::string job;
  unsigned rank = 0;
  std::optional<unsigned> world_size;
  std::optional<unsigned> local_rank;
  std::optional<int> pid;
  std::optional<std::string> gpu;  // an index ("3") or a UUID, as sent
  std::optional<double> time_s;    // when it happened, Unix seconds; absent: when received
  std::uint64_t step = 0;          // kStep
  double duration_s = 0;           // kStep
  std::optional<double> loss;
  std::vector<std::pair<std::string, double>> scalars;  // kStep
  std::uint64_t epoch = 0;                             // kEpochStart, kEpochEnd
  std::optional<double> allocated_bytes;
  std::optional<double> reserved_bytes;
  std::optional<double> peak_allocated_bytes;
};

// Why an event was turned away: the `reason` label of gpuscope_events_rejected_total.
enum class EventRejectReason : std::size_t {
  kMalformed,    // not a JSON object
  kTooLarge,     // over kMaxEventBytes
  kInvalid,      // a field missing, of the wrong type or out of range
  kTooManyJobs,  // the agent already follows its limit of jobs
  kTooManyRanks,  // the job already has its limit of ranks
  kCount,
};
inline constexpr std::size_t kEventRejectReasonCount = static_cast<std::size_t>(EventRejectReason::kCount);
std::string_view reject_reason_id(EventRejectReason reason);

struct EventRejection {
  EventRejectReason reason = EventRejectReason::kMalformed;
  std::string message;  // one line: what is wrong ("rank: 70000 is above 65535")
};

// Parses events; one per thread (it keeps simdjson's buffers between events).
class TrainingEventParser {
 public:
  std::expected<TrainingEvent, EventRejection> parse(std::string_view line);

 private:
  simdjson::ondemand::parser parser_;
  std::string buffer_;  // the line, padded as simdjson reads
};

// Calls `each` with every non-blank line of `text` (JSON lines: one event a line; \r\n too) and its
// 1-based line number.
template <typename Each>
void for_each_event_line(std::string_view text, Each&& each) {
  std::size_t line_number = 0;
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (!line.empty()) each(line, line_number);
  }
}

}  // namespace gpuscope::analysis
