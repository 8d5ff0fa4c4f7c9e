#include "agent/history_recorder.h"

#include <chrono>
#include <string>
#include <utility>

#include "export/exposition_writer.h"

namespace gpuscope::agent {
namespace {

// Turns exposition samples into labeled values. A reading has the same series in the same order as
// the one before, nearly always: a sample whose text matches the one at its position only updates
// the value, so labels are parsed and built only for series that are new or moved.
class LabeledValueSink : public exporter::SampleSink {
 public:
  // `changed` is set when any position ends up holding another series than before.
  LabeledValueSink(std::vector<store::LabeledValue>& values, std::vector<std::string>& keys, bool& changed)
      : values_(values), keys_(keys), changed_(changed) {}
  ~LabeledValueSink() override {
    if (position_ != values_.size()) changed_ = true;
    values_.resize(position_);
    keys_.resize(position_);
  }
  void sample(std::string_view name, std::string_view labels, std::string_view extra, double value) override {
    key_.assign(name).append(1, '\0').append(labels).append(1, '\0').append(extra);
    if (position_ < keys_.size() && keys_[position_] == key_) {
      values_[position_++].value = value;
      return;
    }
    pairs_.clear();
    pairs_.emplace_back(std::string(store::kMetricNameLabel), std::string(name));
    if (!exporter::parse_label_text(labels, pairs_) || !exporter::parse_label_text(extra, pairs_)) {
      return;  // cannot happen for text LabelSet wrote; never record a half-parsed series
    }
    std::vector<store::Label> ls;
    ls.reserve(pairs_.size());
    for (auto& [n, v] : pairs_) ls.push_back({std::move(n), std::move(v)});
    store::LabeledValue lv{store::Labels(std::move(ls)), value};
    changed_ = true;
    if (position_ < keys_.size()) {
      keys_[position_] = key_;
      values_[position_] = std::move(lv);
    } else {
      keys_.push_back(key_);
      values_.push_back(std::move(lv));
    }
    ++position_;
  }

 private:
  std::vector<store::LabeledValue>& values_;
  std::vector<std::string>& keys_;
  bool& changed_;
  std::size_t position_ = 0;
  std::string key_;
  std::vector<std::pair<std::string, std::string>> pairs_;
};

}  // namespace

HistoryRecorder::HistoryRecorder(store::Tsdb& tsdb, std::vector<model::GpuInfo> gpus, model::SystemInfo system,
                                 exporter::GpuMetricsOptions options, log::Logger& log)
    : tsdb_(&tsdb), gpus_(std::move(gpus)), system_(std::move(system)), log_(log) {
  set_options(std::move(options));
}

HistoryRecorder::HistoryRecorder(store::Head& head, std::vector<model::GpuInfo> gpus, model::SystemInfo system,
                                 exporter::GpuMetricsOptions options, log::Logger& log)
    : head_(&head), gpus_(std::move(gpus)), system_(std::move(system)), log_(log) {
  set_options(std::move(options));
}

HistoryRecorder::HistoryRecorder(std::vector<model::GpuInfo> gpus, model::SystemInfo system,
                                 exporter::GpuMetricsOptions options, log::Logger& log)
    : gpus_(std::move(gpus)), system_(std::move(system)), log_(log) {
  set_options(std::move(options));
}

void HistoryRecorder::record(const model::Snapshot& snapshot) {
  auto set = set_.load();
  if (!set) return;
  bool changed = false;
  {
    LabeledValueSink sink(values_, keys_, changed);
    exporter::ExpositionWriter writer(sink);
    const auto options = options_.load();
    exporter::write_gpu_metrics(writer, snapshot, gpus_, system_, *set, *options);
    if (cost_counters_) exporter::write_cost_metrics(writer, cost_counters_(), gpus_, system_, *set, *options);
    if (extra_families_) extra_families_(writer);
    if (agent_status_) exporter::write_agent_metrics(writer, agent_status_());
  }
  const auto t_ms = std::chrono::duration_cast<std::chrono::milliseconds>(snapshot.time.time_since_epoch()).count();
  if (changed) ++layout_;
  store::ReadingResult result;
  if (tsdb_ != nullptr) {
    result = tsdb_->append_reading(t_ms, values_);
  } else if (head_ != nullptr) {
    result = head_->append_reading(t_ms, values_);
  }
  if (listener_) listener_(t_ms, values_, layout_);
  // Logged when appends start or stop failing (a clock stepped back), not per reading.
  const bool failing = result.rejected > 0;
  if (failing != append_failing_) {
    append_failing_ = failing;
    if (failing) {
      log_.warn("history: samples rejected (did the clock step back?)",
                {{"rejected", std::to_string(result.rejected)}, {"err", result.first_error}});
    } else {
      log_.info("history: samples accepted again");
    }
  }
}

}  // namespace gpuscope::agent
