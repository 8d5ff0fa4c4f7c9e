#include "sampler/sampler.h"

namespace gpuscope::sampler {

Sampler::Sampler(ReadFn read, std::chrono::nanoseconds interval, const model::Clock& clock)
    : read_(std::move(read)), interval_(interval), clock_(clock) {}

Sampler::~Sampler() { stop(); }

void Sampler::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

bool Sampler::stop(std::chrono::milliseconds grace) {
  if (!thread_.joinable()) return true;
  std::unique_lock lock(mu_);
  stop_requested_ = true;
  cv_.notify_all();
  const bool ended = grace == std::chrono::milliseconds::max()
                         ? (cv_.wait(lock, [this] { return finished_; }), true)
                         : cv_.wait_for(lock, grace, [this] { return finished_; });
  lock.unlock();
  if (ended) thread_.join();
  return ended;
}

SamplerStats Sampler::stats() const {
  return {samples_.load(std::memory_order_relaxed), overruns_.load(std::memory_order_relaxed)};
}

std::shared_ptr<const Publication> Sampler::wait_for(std::uint64_t sequence, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] {
    auto p = latest();
    return (p && p->sequence >= sequence) || finished_;
  });
  auto p = latest();
  return p && p->sequence >= sequence ? p : nullptr;
}

void Sampler::run() {
  auto next = clock_.steady();
  std::uint64_t sequence = 0;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (clock_.wait_until(lock, cv_, next, [this] { return stop_requested_; })) break;
    }
    auto pub = std::make_shared<Publication>();
    pub->started = clock_.steady();
    pub->snapshot = read_();
    pub->finished = clock_.steady();
    pub->sequence = ++sequence;
    const auto took = pub->finished - pub->started;
    samples_.fetch_add(1, std::memory_order_relaxed);
    // The first reading carries one-off warm-up (GPM needs a first window), so it is no overrun.
    if (took > interval_ && pub->sequence > 1) overruns_.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard lock(mu_);
      latest_.store(std::move(pub), std::memory_order_release);
    }
    cv_.notify_all();
    // Keep the grid: the next reading is due one interval after this one was due; a reading that ran
    // past one or more ticks skips them rather than firing back to back.
    next += interval_;
    const auto now = clock_.steady();
    // A tick due exactly now is not missed: only ticks strictly past are skipped.
    if (next < now) next += ((now - next) / interval_ + 1) * interval_;
  }
  std::lock_guard lock(mu_);
  finished_ = true;
  cv_.notify_all();
}

}  // namespace gpuscope::sampler
