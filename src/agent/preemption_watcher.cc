#include "agent/preemption_watcher.h"

#include <fmt/format.h>

#include "export/timestamp_text.h"
#include "model/printable_text.h"
#include "promql/parser.h"

namespace gpuscope::agent {

std::expected<std::chrono::milliseconds, std::string> parse_preemption_poll_interval(std::string_view text) {
  const auto ms = promql::parse_duration(text);
  if (!ms || *ms < kMinPreemptionPollInterval.count() || *ms > kMaxPreemptionPollInterval.count()) {
    return std::unexpected(fmt::format("invalid value '{}' for --preemption-poll-interval (100ms to 30s, e.g. 5s)",
                                       model::printable_text(text)));
  }
  return std::chrono::milliseconds(*ms);
}

PreemptionWatcher::PreemptionWatcher(PreemptionNoticeSource& source, NoticeHandler on_notice,
                                     PreemptionWatcherOptions options, const model::Clock& clock, log::Logger& log)
    : source_(source), on_notice_(std::move(on_notice)), options_(std::move(options)), clock_(clock), log_(log) {
  status_.provider = options_.provider;
}

PreemptionWatcher::~PreemptionWatcher() { stop(); }

void PreemptionWatcher::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void PreemptionWatcher::stop() {
  {
    std::lock_guard lock(mu_);
    stop_requested_ = true;
  }
  cv_.notify_all();
  source_.cancel();
  if (thread_.joinable()) thread_.join();
}

exporter::PreemptionStatus PreemptionWatcher::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

bool PreemptionWatcher::wait_for_polls(std::uint64_t polls, std::chrono::milliseconds limit) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, limit, [&] {
    return status_.polls_notice_total + status_.polls_none_total + status_.polls_error_total >= polls;
  });
}

void PreemptionWatcher::run() {
  for (;;) {
    const auto poll_started = clock_.steady();
    auto answer = source_.poll();
    const auto seen = clock_.wall();
    if (record(answer, seen) && on_notice_) on_notice_(**answer, seen);
    std::unique_lock lock(mu_);
    if (stop_requested_) return;
    // On a fixed grid from the poll's start: a slow answer does not stretch the interval.
    if (clock_.wait_until(lock, cv_, poll_started + options_.interval, [this] { return stop_requested_; })) return;
  }
}

bool PreemptionWatcher::record(const std::expected<std::optional<PreemptionNotice>, std::string>& answer,
                               std::chrono::system_clock::time_point seen) {
  bool first_notice = false;
  bool recovered = false;
  std::uint64_t failed_polls = 0;
  {
    std::lock_guard lock(mu_);
    // A poll cut short by stop() says nothing about the endpoint.
    if (stop_requested_ && !answer) return false;
    if (!answer) {
      ++status_.polls_error_total;
      ++failures_in_a_row_;
    } else {
      recovered = failing_;
      failed_polls = failures_in_a_row_;
      failures_in_a_row_ = 0;
      if (answer->has_value()) {
        ++status_.polls_notice_total;
        if (!status_.noticed) {
          first_notice = true;
          status_.noticed = true;
          const auto when = (*answer)->action_time.value_or(seen);
          status_.notice_timestamp_seconds = exporter::unix_seconds(when);
        }
      } else {
        ++status_.polls_none_total;
      }
    }
  }
  cv_.notify_all();
  // Once as the endpoint starts failing and once as it answers again, never at every poll.
  if (!answer && !failing_) {
    failing_ = true;
    log_.warn("preemption notice endpoint not answering; polls keep trying (counted in gpuscope_preemption_polls_total)",
              {{"provider", options_.provider}, {"err", answer.error()}});
  } else if (recovered) {
    failing_ = false;
    log_.info("preemption notice endpoint answering again",
              {{"provider", options_.provider}, {"failed_polls", std::to_string(failed_polls)}});
  }
  return first_notice;
}

}  // namespace gpuscope::agent
