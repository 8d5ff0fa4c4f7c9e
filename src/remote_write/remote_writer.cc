#include "remote_write/remote_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "remote_write/write_request.h"
#include "store/label_matcher.h"

namespace gpuscope::remote_write {

namespace {

std::function<double()> default_random() {
  auto engine = std::make_shared<std::minstd_rand>(std::random_device{}());
  return [engine] { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); };
}

// Worth the same request again later: the receiver is away or overloaded, not refusing it.
bool retryable(int status) { return status == 0 || status >= 500 || status == 429 || status == 408; }

std::string failure_kind(int status) {
  if (status == 0) return "no response";
  if (status >= 500) return "HTTP 5xx";
  return fmt::format("HTTP {}", status);
}

}  // namespace

RemoteWriter::RemoteWriter(RemoteWriterOptions options, const store::Queryable& store,
                           std::unique_ptr<WriteTransport> transport, const model::Clock& clock, log::Logger& log)
    : options_(std::move(options)),
      store_(store),
      transport_(std::move(transport)),
      clock_(clock),
      log_(log),
      cursor_file_(options_.data_dir, options_.receiver.url, options_.receiver.display_url),
      backoff_(options_.receiver.queue.min_backoff, options_.receiver.queue.max_backoff,
               options_.unit_random ? options_.unit_random : default_random()),
      window_(std::clamp(options_.read_window, kMinReadWindow, std::chrono::milliseconds(kMaxReadWindow))) {
  stats_.url = options_.receiver.display_url;
  // Until init() reads the persisted cursor: from now on, so the lag is not "since 1970" meanwhile.
  cursor_ = clock_.unix_ms() - options_.settle.count();
  stats_.cursor_ms = cursor_;
}

RemoteWriter::~RemoteWriter() { stop(); }

void RemoteWriter::init() {
  const std::int64_t now = clock_.unix_ms();
  // A new receiver gets what the agent reads from now on: older history would land behind what the
  // receiver already holds for these series, or before its head's time range.
  std::int64_t cursor = now - options_.settle.count();
  auto loaded = cursor_file_.load();
  if (!loaded) {
    log_.warn("remote write: cursor not read; sending from now on", {{"url", display_url()}, {"err", loaded.error()}});
  } else if (*loaded) {
    cursor = std::max(**loaded, now - options_.retention.count());
    log_.info("remote write: resuming", {{"url", display_url()},
                                         {"behind", fmt::format("{:.1f}s", static_cast<double>(now - cursor) / 1000.0)}});
  }
  cursor_ = cursor;
  std::lock_guard lock(stats_mutex_);
  stats_.cursor_ms = cursor_;
}

bool RemoteWriter::read_window(std::int64_t end) {
  static const auto every_series = store::LabelMatcher::make(store::LabelMatcher::Op::kRegex, "__name__", ".+");
  const std::size_t limit = options_.receiver.queue.max_samples_per_read;
  for (;;) {
    const std::int64_t read_end = std::min(end, cursor_ + window_.count());
    std::vector<store::SeriesSamples> series;
    std::size_t samples = 0;
    bool too_many = false;
    store::Queryable::SeriesVisitor visitor;
    visitor.each = [&](store::SeriesSamples&& s) {
      if (!keeps_series(options_.receiver.write_relabel, s.labels)) return true;
      for (const auto& [name, value] : options_.external_labels) {
        if (!s.labels.has(name)) s.labels.set(name, value);
      }
      samples += s.samples.size();
      series.push_back(std::move(s));
      // One window at the least is sent whatever it holds: a single millisecond is not split further.
      too_many = samples > limit && window_ > kMinReadWindow;
      return !too_many;
    };
    const std::span<const store::LabelMatcher> matchers(&*every_series, 1);
    if (auto read = store_.select_each(matchers, cursor_ + 1, read_end, visitor); !read) {
      log_.warn("remote write: reading the history failed", {{"url", display_url()}, {"err", read.error()}});
      return false;
    }
    if (too_many) {
      window_ = std::max(kMinReadWindow, window_ / 2);
      continue;
    }
    if (samples < limit / 4 && read_end == cursor_ + window_.count()) window_ = std::min(kMaxReadWindow, window_ * 2);
    auto batches = plan_batches(series, read_end, options_.receiver.queue.max_samples_per_send);
    window_series_ = std::move(series);
    pending_.assign(std::make_move_iterator(batches.begin()), std::make_move_iterator(batches.end()));
    std::lock_guard lock(stats_mutex_);
    stats_.samples_pending = samples;
    if (pending_.empty()) {
      // Nothing in (cursor, read_end]: the next read starts after it.
      cursor_ = read_end;
      stats_.cursor_ms = cursor_;
    }
    return true;
  }
}

void RemoteWriter::acknowledge(const WriteBatch& batch, bool sent) {
  const std::size_t n = batch.samples.size();
  if (batch.cursor_after) {
    cursor_ = *batch.cursor_after;
    if (auto saved = cursor_file_.save(cursor_); !saved) {
      std::lock_guard lock(stats_mutex_);
      if (stats_.cursor_save_failures++ == 0) {
        log_.warn("remote write: cursor not saved (a restart resends from an older one)",
                  {{"url", display_url()}, {"err", saved.error()}});
      }
    }
  }
  std::lock_guard lock(stats_mutex_);
  (sent ? stats_.samples_sent : stats_.samples_failed) += n;
  stats_.samples_pending -= std::min<std::uint64_t>(stats_.samples_pending, n);
  stats_.cursor_ms = cursor_;
}

void RemoteWriter::note_failure(const PostResult& result) {
  const std::string kind = failure_kind(result.status);
  if (!failing_since_ && retryable(result.status)) failing_since_ = clock_.steady();
  // Once per kind for the agent's life: a receiver away for an hour is one line, not thousands.
  if (!failure_kinds_logged_.insert(kind).second) return;
  log_.warn(retryable(result.status) ? "remote write: request failed; retrying with backoff"
                                     : "remote write: request refused; its samples are dropped",
            {{"url", display_url()}, {"kind", kind}, {"detail", result.error}});
}

RemoteWriter::StepResult RemoteWriter::step() {
  if (pending_.empty()) {
    const std::int64_t upper = clock_.unix_ms() - options_.settle.count();
    if (cursor_ >= upper) return {Step::kIdle, options_.poll};
    if (!read_window(upper)) return {Step::kReadFailed, options_.poll};
    if (pending_.empty()) return {Step::kIdle, cursor_ >= upper ? options_.poll : std::chrono::milliseconds(0)};
  }
  const WriteBatch& batch = pending_.front();
  const PostResult result = transport_->post(encode_batch(window_series_, batch));
  // Cut short by stop(): neither a failure to report nor a request to count.
  if (result.status == 0 && stopping_.load()) return {Step::kIdle, options_.poll};
  {
    std::lock_guard lock(stats_mutex_);
    ++stats_.requests[result.status == 0 ? std::string("error") : std::to_string(result.status)];
  }
  if (result.status >= 200 && result.status < 300) {
    if (failing_since_) {
      log_.info("remote write: receiver reachable again",
                {{"url", display_url()},
                 {"after", fmt::format("{:.1f}s", std::chrono::duration<double>(clock_.steady() - *failing_since_).count())}});
      failing_since_.reset();
    }
    backoff_.reset();
    acknowledge(batch, true);
    pending_.pop_front();
    return {Step::kSent, std::chrono::milliseconds(0)};
  }
  note_failure(result);
  if (retryable(result.status)) {
    std::optional<std::chrono::milliseconds> retry_after;
    if (result.status == 429 || result.status == 503) retry_after = result.retry_after;
    return {Step::kRetry, backoff_.next(retry_after)};
  }
  acknowledge(batch, false);
  pending_.pop_front();
  return {Step::kDropped, std::chrono::milliseconds(0)};
}

void RemoteWriter::start() {
  init();
  thread_ = std::thread([this] { run(); });
}

void RemoteWriter::run() {
  while (!stopping_.load()) {
    const StepResult r = step();
    if (r.wait.count() <= 0) continue;
    std::unique_lock lock(wait_mutex_);
    clock_.wait_for(lock, wait_cv_, r.wait, [this] { return stopping_.load(); });
  }
}

void RemoteWriter::stop() {
  {
    std::lock_guard lock(wait_mutex_);
    stopping_ = true;
  }
  wait_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

RemoteWriteStats RemoteWriter::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

}  // namespace gpuscope::remote_write
