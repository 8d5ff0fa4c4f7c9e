#include "agent/diagnosis_loop.h"

#include <algorithm>
#include <charconv>
#include <tuple>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "analysis/network_verdict.h"

namespace gpuscope::agent {
namespace {

// /metrics lists each family's GPUs as the GPU families do, by host then index, not by UUID.
void order_by_gpu(std::vector<analysis::DiagnosisSample>& samples) {
  auto index = [](const store::Labels& l) {
    const std::string_view gpu = l.get("gpu");
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(gpu.data(), gpu.data() + gpu.size(), n);
    return ec == std::errc() && end == gpu.data() + gpu.size() ? n : static_cast<std::size_t>(-1);
  };
  std::stable_sort(samples.begin(), samples.end(), [&](const auto& a, const auto& b) {
    return std::tuple(a.labels.metric_name(), a.labels.get("Hostname"), a.labels.get("hostname"), index(a.labels)) <
           std::tuple(b.labels.metric_name(), b.labels.get("Hostname"), b.labels.get("hostname"), index(b.labels));
  });
}

}  // namespace

DiagnosisLoop::DiagnosisLoop(const analysis::ReadingSource& recent, const analysis::ReadingSource& history,
                             rules::SampleAppender& out, DiagnosisLoopOptions options, const model::Clock& clock,
                             log::Logger& log)
    : source_(recent), history_(history), out_(out), options_(std::move(options)), clock_(clock), log_(log) {
  published_.store(std::make_shared<const Published>());
}

DiagnosisLoop::~DiagnosisLoop() { stop(); }

void DiagnosisLoop::start(std::function<void()> ready) {
  thread_ = std::thread([this, ready = std::move(ready)] { run(ready); });
}

void DiagnosisLoop::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

exporter::DiagnosisStatus DiagnosisLoop::status() const {
  const auto p = latest();
  exporter::DiagnosisStatus s;
  s.interval_seconds = std::chrono::duration<double>(options_.interval).count();
  s.window_seconds = std::chrono::duration<double>(options_.window).count();
  s.evaluations_total = p->evaluations;
  s.evaluation_failures_total = p->failures;
  s.last_duration_seconds = p->last_duration_seconds;
  s.last_evaluation_timestamp_seconds = static_cast<double>(p->last_evaluation_ms) / 1000.0;
  // After a failed evaluation the verdicts are of an older window: none is exported as current.
  const bool current = p->last_error.empty();
  s.series.reserve(current ? p->series.size() : 0);
  for (const analysis::DiagnosisSample& d : current ? p->series : std::vector<analysis::DiagnosisSample>{}) {
    exporter::DiagnosisStatus::Sample out;
    out.value = d.value;
    for (const auto& l : d.labels) {
      if (l.name == store::kMetricNameLabel) {
        out.name = l.value;
      } else {
        out.labels.emplace_back(l.name, l.value);
      }
    }
    s.series.push_back(std::move(out));
  }
  return s;
}

std::expected<analysis::Diagnosis, std::string> DiagnosisLoop::diagnose(std::int64_t at_ms) {
  const std::int64_t window_ms = options_.window.count();
  auto gpus = analysis::read_histories(source_, at_ms - window_ms, at_ms);
  if (!gpus) return std::unexpected(gpus.error());
  std::vector<analysis::PortHistory> ports;
  if (fabric_ != nullptr) {
    auto read = analysis::read_port_histories(*fabric_, at_ms - std::max(window_ms, analysis::kFabricLookbackMs), at_ms);
    if (!read) return std::unexpected(read.error());
    ports = std::move(*read);
  }
  analysis::Diagnosis d = analysis::diagnose(*gpus, ports, at_ms, window_ms, options_.thresholds);
  // "Idle since" comes from the verdict tracker for the GPUs it has followed; only a GPU seen idle for
  // the first time (the agent's start, or a GPU that appeared) is looked for further back, so an idle
  // host costs one walk of the history, not one per evaluation.
  analysis::Diagnosis first_seen;
  first_seen.at_ms = d.at_ms;
  first_seen.window_ms = d.window_ms;
  for (const auto& g : d.gpus) {
    if (g.verdict == analysis::Verdict::kIdle && !series_.tracker().states().contains(g.identity.key)) {
      first_seen.gpus.push_back(g);
    }
  }
  if (!first_seen.gpus.empty()) {
    auto found = analysis::find_last_activity(history_, first_seen, options_.thresholds, options_.idle_lookback_ms);
    if (!found) return std::unexpected(found.error());
    for (const auto& f : first_seen.gpus) {
      for (auto& g : d.gpus) {
        if (g.identity.key != f.identity.key) continue;
        g.since_ms = f.since_ms;
        g.since_is_lower_bound = f.since_is_lower_bound;
      }
    }
  }
  return d;
}

void DiagnosisLoop::evaluate(std::int64_t at_ms) {
  const auto started = std::chrono::steady_clock::now();
  auto d = diagnose(at_ms);
  std::string error;
  std::vector<analysis::DiagnosisSample> samples;
  if (d) {
    samples = series_.update(*d);
    std::string append_error;
    for (const analysis::DiagnosisSample& s : samples) {
      if (auto ok = out_.append(s.labels, at_ms, s.value); !ok && append_error.empty()) append_error = ok.error();
    }
    // Logged when appends start or stop failing (the clock stepped back), not at every evaluation.
    if (!append_error.empty() != append_failing_) {
      append_failing_ = !append_error.empty();
      if (append_failing_) {
        log_.warn("diagnosis: verdict series not written to the history", {{"err", append_error}});
      } else {
        log_.info("diagnosis: verdict series written to the history again");
      }
    }
    if (!append_error.empty()) error = "history: " + append_error;
  } else {
    error = d.error();
  }

  // Its health is logged when it changes, not at every evaluation.
  if (error != counts_.last_error) {
    if (error.empty()) {
      log_.info("diagnosis evaluates again");
    } else {
      log_.warn("diagnosis evaluation failed", {{"err", error}});
    }
  }
  ++counts_.evaluations;
  if (!error.empty()) ++counts_.failures;
  counts_.last_error = error;
  counts_.last_evaluation_ms = at_ms;
  counts_.last_duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  auto next = std::make_shared<Published>(counts_);
  if (d) {
    next->diagnosis = std::make_shared<const analysis::Diagnosis>(std::move(*d));
    counts_.diagnosis = next->diagnosis;
  }
  next->series = series_.current();
  order_by_gpu(next->series);
  published_.store(std::move(next));
  {
    std::lock_guard lock(mu_);
    evaluated_ = true;
  }
  cv_.notify_all();
}

bool DiagnosisLoop::wait_for_first(std::chrono::milliseconds limit) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, limit, [this] { return evaluated_ || stop_; }) && evaluated_;
}

void DiagnosisLoop::run(const std::function<void()>& ready) {
  if (ready) ready();
  // Evaluations are due on a fixed grid from the first: a slow one delays the next, never shifts them all.
  // Slots the evaluation itself overran, or that passed before it woke, are skipped rather than caught up
  // on (a diagnosis of the past is no use to /metrics). Judged by the evaluation's own duration, not by
  // where the clock stands after it: a clock moved meanwhile (a virtual one) makes the next slot due at
  // once instead of losing it.
  // An interval of 0 would spin; the agent never passes one, and a millisecond is the clock's grain.
  const auto step = std::max<std::chrono::nanoseconds>(options_.interval, std::chrono::milliseconds(1));
  auto due = clock_.steady();
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
    }
    const auto woke = clock_.steady();
    const auto started = std::chrono::steady_clock::now();
    evaluate(clock_.unix_ms());
    const auto done = woke + (std::chrono::steady_clock::now() - started);
    do {
      due += step;
    } while (due <= done);
    std::unique_lock lock(mu_);
    clock_.wait_until(lock, cv_, due, [this] { return stop_; });
    if (stop_) return;
  }
}

}  // namespace gpuscope::agent
