// TrainingIntake: where events from training processes enter the agent, whichever way they came (the
// Unix datagram socket, POST /api/v1/events): JSON lines parsed, applied to TrainingJobs, and counted,
// received by transport and rejected by reason (gpuscope_events_received_total,
// gpuscope_events_rejected_total). A bad line costs its own event only.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/training_event.h"
#include "analysis/training_jobs.h"

namespace gpuscope::analysis {

enum class EventTransport : std::size_t { kSocket, kHttp, kCount };
inline constexpr std::size_t kEventTransportCount = static_cast<std::size_t>(EventTransport::kCount);
std::string_view transport_id(EventTransport transport);

struct IntakeResult {
  std::size_t accepted = 0;
  std::size_t rejected = 0;
  // The first few rejections as "line N: why" (an HTTP answer shows them; the socket has no answer).
  std::vector<std::string> errors;
};

struct IntakeCounts {
  std::array<std::uint64_t, kEventTransportCount> received{};  // lines that held an event, accepted or not
  std::array<std::uint64_t, kEventRejectReasonCount> rejected{};
};

class TrainingIntake {
 public:
  // How many rejections one call describes in IntakeResult::errors.
  static constexpr std::size_t kMaxErrorsShown = 10;

  explicit TrainingIntake(TrainingJobs& jobs) : jobs_(jobs) {}

  // For epoch events without the allocator's figures: the GPU memory the pid holds (NVML's per-process
  // use), so memory kept between epochs is seen for clients that send no allocator figures. Set before
  // events arrive.
  void set_process_memory(std::function<std::optional<double>(int pid)> lookup) { process_memory_ = std::move(lookup); }

  // Takes every line of `text` (JSON lines) received at `now_ms`. `sender_pid`: the kernel's word for
  // the sender (SO_PASSCRED), which wins over the event's own pid field. `parser` is the calling
  // thread's.
  IntakeResult take(std::string_view text, std::int64_t now_ms, EventTransport transport, std::optional<int> sender_pid,
                    TrainingEventParser& parser);
  // Counts a datagram or body turned away whole (over the size limit) as one rejected event.
  void reject_whole(EventTransport transport, EventRejectReason reason);

  IntakeCounts counts() const;
  TrainingJobs& jobs() { return jobs_; }

 private:
  void count_rejected(EventRejectReason reason) {
    rejected_[static_cast<std::size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  }

  TrainingJobs& jobs_;
  std::function<std::optional<double>(int pid)> process_memory_;
  std::array<std::atomic<std::uint64_t>, kEventTransportCount> received_{};
  std::array<std::atomic<std::uint64_t>, kEventRejectReasonCount> rejected_{};
};

}  // namespace gpuscope::analysis
