#include "analysis/training_intake.h"

#include <fmt/format.h>

namespace gpuscope::analysis {

std::string_view transport_id(EventTransport transport) {
  switch (transport) {
    case EventTransport::kSocket: return "socket";
    case EventTransport::kHttp: return "http";
    case EventTransport::kCount: break;
  }
  return "unknown";
}

IntakeResult TrainingIntake::take(std::string_view text, std::int64_t now_ms, EventTransport transport,
                                  std::optional<int> sender_pid, TrainingEventParser& parser) {
  IntakeResult result;
  auto& received = received_[static_cast<std::size_t>(transport)];
  for_each_event_line(text, [&](std::string_view line, std::size_t line_number) {
    received.fetch_add(1, std::memory_order_relaxed);
    auto event = parser.parse(line);
    if (event) {
      if (sender_pid) event->pid = sender_pid;
      if (event->kind != TrainingEventKind::kStep && !event->allocated_bytes && event->pid && process_memory_) {
        event->allocated_bytes = process_memory_(*event->pid);
      }
      auto applied = jobs_.apply(*event, now_ms);
      if (applied) {
        ++result.accepted;
        return;
      }
      event = std::unexpected(applied.error());
    }
    ++result.rejected;
    count_rejected(event.error().reason);
    if (result.errors.size() < kMaxErrorsShown) {
      result.errors.push_back(fmt::format("line {}: {}", line_number, event.error().message));
    }
  });
  return result;
}

void TrainingIntake::reject_whole(EventTransport transport, EventRejectReason reason) {
  received_[static_cast<std::size_t>(transport)].fetch_add(1, std::memory_order_relaxed);
  count_rejected(reason);
}

IntakeCounts TrainingIntake::counts() const {
  IntakeCounts c;
  for (std::size_t i = 0; i < kEventTransportCount; ++i) c.received[i] = received_[i].load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < kEventRejectReasonCount; ++i) c.rejected[i] = rejected_[i].load(std::memory_order_relaxed);
  return c;
}

}  // namespace gpuscope::analysis
