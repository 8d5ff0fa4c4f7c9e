#include "agent/training_metrics.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace gpuscope::agent {

namespace {

using model::MetricType;

// 1e9 bytes: the "gb" of the hand-written monitors this series stands in for (bytes / 1e9).
constexpr double kBytesPerGb = 1e9;

struct RankRow {
  const analysis::JobView* job;
  const analysis::RankView* rank;
  std::string labels;  // training_job, rank, host
};

class TrainingWriter {
 public:
  TrainingWriter(exporter::ExpositionWriter& w, const TrainingExposition& t) : w_(w), t_(t) {
    for (const auto& job : t.jobs) {
      for (const auto& rank : job.ranks) {
        exporter::LabelSet labels;
        labels.add(kTrainingJobLabel, job.job).add("rank", std::to_string(rank.rank));
        if (!t.host_label.empty()) labels.add(t.host_label, t.hostname);
        rows_.push_back({&job, &rank, labels.text()});
      }
    }
  }

  // One sample per rank that has a value.
  void per_rank(std::string_view name, MetricType type, std::string_view help,
                const std::function<std::optional<double>(const analysis::RankView&)>& value) {
    bool started = false;
    for (const auto& row : rows_) {
      const auto v = value(*row.rank);
      if (!v) continue;
      if (!started) w_.family(name, type, help);
      started = true;
      w_.sample(name, row.labels, *v);
    }
  }

  void write() {
    write_intake();
    if (rows_.empty()) return;
    write_steps();
    write_histogram();
    write_epochs();
    write_memory();
    write_scalars();
    write_findings();
  }

 private:
  std::string job_labels(const std::string& job) const {
    exporter::LabelSet labels;
    labels.add(kTrainingJobLabel, job);
    if (!t_.host_label.empty()) labels.add(t_.host_label, t_.hostname);
    return labels.text();
  }

  const analysis::JobFindings* findings_of(const std::string& job) const {
    for (const auto& f : t_.findings) {
      if (f.job == job) return &f;
    }
    return nullptr;
  }

  void write_intake() {
    w_.family("gpuscope_events_received_total", MetricType::kCounter,
              "Training events received (one per JSON line), by transport: the Unix datagram socket or POST "
              "/api/v1/events.");
    for (std::size_t i = 0; i < analysis::kEventTransportCount; ++i) {
      const auto transport = static_cast<analysis::EventTransport>(i);
      w_.sample("gpuscope_events_received_total",
                exporter::LabelSet().add("transport", analysis::transport_id(transport)).text(),
                static_cast<double>(t_.counts.received[i]));
    }
    w_.family("gpuscope_events_rejected_total", MetricType::kCounter,
              "Training events turned away, by reason: malformed (not a JSON object), too_large (over 4096 "
              "bytes), invalid (a field missing or out of range), too_many_jobs, too_many_ranks.");
    for (std::size_t i = 0; i < analysis::kEventRejectReasonCount; ++i) {
      const auto reason = static_cast<analysis::EventRejectReason>(i);
      w_.sample("gpuscope_events_rejected_total",
                exporter::LabelSet().add("reason", analysis::reject_reason_id(reason)).text(),
                static_cast<double>(t_.counts.rejected[i]));
    }
    w_.family("gpuscope_training_scalars_dropped_total", MetricType::kCounter,
              "User scalars not exported because their rank already exports the most it may (32 names).");
    w_.sample("gpuscope_training_scalars_dropped_total", "", static_cast<double>(t_.scalars_dropped));
    w_.family("gpuscope_training_jobs", MetricType::kGauge, "Training jobs the agent follows (that sent events).");
    w_.sample("gpuscope_training_jobs", "", static_cast<double>(t_.jobs.size()));
  }

  void write_steps() {
    auto steps = [](const analysis::RankView& r) -> std::optional<double> { return static_cast<double>(r.steps_total); };
    per_rank("training_batches_total", MetricType::kCounter, "Training steps (batches) the rank finished.", steps);
    per_rank("training_batch_completed_total", MetricType::kCounter,
             "Training steps (batches) the rank finished (the same count, under the other name stall rules use).",
             steps);
    per_rank("training_batch_duration_seconds", MetricType::kGauge, "How long the rank's last step took.",
             [](const analysis::RankView& r) -> std::optional<double> {
               if (r.steps_total == 0) return std::nullopt;
               return r.last_duration_s;
             });
    per_rank("training_step", MetricType::kGauge, "The rank's last step number.",
             [](const analysis::RankView& r) -> std::optional<double> {
               if (r.steps_total == 0) return std::nullopt;
               return static_cast<double>(r.last_step);
             });
    per_rank("training_last_step_timestamp_seconds", MetricType::kGauge, "When the rank's last step ended (Unix seconds).",
             [](const analysis::RankView& r) -> std::optional<double> {
               if (!r.last_step_ms) return std::nullopt;
               return static_cast<double>(*r.last_step_ms) / 1000.0;
             });
    per_rank("training_loss", MetricType::kGauge, "The loss the rank sent with its last step that had one.",
             [](const analysis::RankView& r) { return r.loss; });
    per_rank("training_world_size", MetricType::kGauge, "How many ranks the job has, as the rank said.",
             [](const analysis::RankView& r) -> std::optional<double> {
               if (!r.world_size) return std::nullopt;
               return static_cast<double>(*r.world_size);
             });
  }

  void write_histogram() {
    const std::string_view name = "training_step_duration_seconds";
    w_.family(name, MetricType::kHistogram, "How long the rank's steps took.");
    for (const auto& row : rows_) {
      const auto& r = *row.rank;
      for (std::size_t i = 0; i < analysis::kStepDurationBuckets.size(); ++i) {
        std::string le;
        exporter::append_value(le, analysis::kStepDurationBuckets[i]);
        w_.sample("training_step_duration_seconds_bucket", row.labels, static_cast<double>(r.bucket_counts[i]),
                  exporter::LabelSet().add("le", le).text());
      }
      w_.sample("training_step_duration_seconds_bucket", row.labels, static_cast<double>(r.steps_total),
                exporter::LabelSet().add("le", "+Inf").text());
      w_.sample("training_step_duration_seconds_sum", row.labels, r.duration_sum_s);
      w_.sample("training_step_duration_seconds_count", row.labels, static_cast<double>(r.steps_total));
    }
  }

  void write_epochs() {
    per_rank("training_epoch", MetricType::kGauge, "The rank's current (or last) epoch.",
             [](const analysis::RankView& r) -> std::optional<double> {
               if (!r.epoch) return std::nullopt;
               return static_cast<double>(*r.epoch);
             });
    per_rank("training_epoch_loss", MetricType::kGauge, "The loss the rank sent at its last epoch's end.",
             [](const analysis::RankView& r) { return r.epoch_loss; });
  }

  void write_memory() {
    // training_gpu_memory_gb carries the GPU as gpu_id, as the monitors it replaces label it.
    bool started = false;
    for (const auto& row : rows_) {
      const auto& r = *row.rank;
      if (!r.allocated_bytes) continue;
      if (!started) {
        w_.family("training_gpu_memory_gb", MetricType::kGauge,
                  "GPU memory the rank's tensors hold (PyTorch's allocated bytes / 1e9) at its last epoch event.");
      }
      started = true;
      std::optional<unsigned> gpu;
      if (t_.context != nullptr) gpu = analysis::rank_gpu(r, *t_.context);
      const std::string extra = exporter::LabelSet().add("gpu_id", gpu ? std::to_string(*gpu) : "").text();
      w_.sample("training_gpu_memory_gb", row.labels, *r.allocated_bytes / kBytesPerGb, extra);
    }
    per_rank("training_allocator_allocated_bytes", MetricType::kGauge,
             "Bytes the rank's tensors hold (torch.cuda.memory_allocated) at its last epoch event.",
             [](const analysis::RankView& r) { return r.allocated_bytes; });
    per_rank("training_allocator_reserved_bytes", MetricType::kGauge,
             "Bytes PyTorch's caching allocator holds from the GPU (torch.cuda.memory_reserved) at the last epoch event.",
             [](const analysis::RankView& r) { return r.reserved_bytes; });
    per_rank("training_allocator_peak_allocated_bytes", MetricType::kGauge,
             "The most bytes the rank's tensors held (torch.cuda.max_memory_allocated), as of its last epoch event.",
             [](const analysis::RankView& r) { return r.peak_allocated_bytes; });
    per_rank("training_allocator_fragmentation_bytes", MetricType::kGauge,
             "Reserved minus allocated: memory the allocator holds but no tensor uses. Large values explain an "
             "out-of-memory error while nvidia-smi shows memory free; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
             "reduces it.",
             [](const analysis::RankView& r) -> std::optional<double> {
               if (!r.allocated_bytes || !r.reserved_bytes) return std::nullopt;
               return std::max(0.0, *r.reserved_bytes - *r.allocated_bytes);
             });
  }

  void write_scalars() {
    bool started = false;
    for (const auto& row : rows_) {
      for (const auto& [name, value] : row.rank->scalars) {
        if (!started) w_.family("training_scalar", MetricType::kGauge, "A value the rank sent with its steps, by name.");
        started = true;
        w_.sample("training_scalar", row.labels, value, exporter::LabelSet().add("name", name).text());
      }
    }
  }

  void write_findings() {
    w_.family("gpuscope_training_stalled", MetricType::kGauge,
              "1 when the job took no step for the stall time (--training.stall-after) while a process of it still "
              "holds a GPU or lives; else 0.");
    for (const auto& job : t_.jobs) {
      const auto* f = findings_of(job.job);
      w_.sample("gpuscope_training_stalled", job_labels(job.job), f != nullptr && f->stalled ? 1 : 0);
    }
    bool started = false;
    for (const auto& job : t_.jobs) {
      const auto* f = findings_of(job.job);
      if (f == nullptr || !f->step_time_cv) continue;
      if (!started) {
        w_.family("gpuscope_training_step_time_cv", MetricType::kGauge,
                  "Coefficient of variation (std / mean) of the ranks' mean step times over the last 5 minutes; above "
                  "0.1 the slowest rank is a straggler.");
      }
      started = true;
      w_.sample("gpuscope_training_step_time_cv", job_labels(job.job), *f->step_time_cv);
    }
    started = false;
    for (const auto& job : t_.jobs) {
      const auto* f = findings_of(job.job);
      if (f == nullptr || !f->straggler) continue;
      if (!started) {
        w_.family("gpuscope_training_straggler_info", MetricType::kGauge,
                  "1 for the job's straggler: its slowest rank, its GPU, and why (cause: gpu_clock, gpu_throttled, "
                  "gpu_hot, host, gpu_unknown, no_reading). GET /api/v1/training says it in words.");
      }
      started = true;
      const auto& s = *f->straggler;
      exporter::LabelSet extra;
      extra.add("rank", std::to_string(s.rank)).add("gpu", s.gpu ? std::to_string(*s.gpu) : "").add("cause", s.cause_id);
      w_.sample("gpuscope_training_straggler_info", job_labels(job.job), 1, extra.text());
    }
    started = false;
    for (const auto& job : t_.jobs) {
      const auto* f = findings_of(job.job);
      if (f == nullptr) continue;
      for (const auto& m : f->memory_not_released) {
        if (!started) {
          w_.family("gpuscope_training_memory_not_released_bytes", MetricType::kGauge,
                    "How much the memory a rank holds between epochs grew over the last epoch boundaries, when it grew "
                    "at each of them (tensors kept from one epoch to the next).");
        }
        started = true;
        w_.sample("gpuscope_training_memory_not_released_bytes", job_labels(job.job), m.growth_bytes,
                  exporter::LabelSet().add("rank", std::to_string(m.rank)).text());
      }
    }
    started = false;
    for (const auto& row : rows_) {
      const auto& last = row.rank->last_epoch;
      if (!last || !last->verdict) continue;
      if (!started) {
        w_.family("gpuscope_training_epoch_verdict_info", MetricType::kGauge,
                  "1 with the diagnosis' verdict over the rank's GPU during its last finished epoch.");
      }
      started = true;
      w_.sample("gpuscope_training_epoch_verdict_info", row.labels, 1,
                exporter::LabelSet().add("epoch", std::to_string(last->epoch)).add("verdict", *last->verdict).text());
    }
  }

  exporter::ExpositionWriter& w_;
  const TrainingExposition& t_;
  std::vector<RankRow> rows_;
};

}  // namespace

void write_training_metrics(exporter::ExpositionWriter& writer, const TrainingExposition& training) {
  TrainingWriter(writer, training).write();
}

}  // namespace gpuscope::agent
