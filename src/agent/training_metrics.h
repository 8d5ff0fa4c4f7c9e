// The training families of /metrics (and of the history, which records what /metrics shows): the
// series names hand-written training monitors export (training_batches_total,
// training_batch_completed_total, training_batch_duration_seconds, training_epoch_loss,
// training_gpu_memory_gb), so their dashboards and stall rules keep working, plus a step-time histogram,
// the allocator's figures, and what the agent found (stalled, straggler, memory not released, the epoch's
// verdict). Labels: training_job (not `job`, which Prometheus sets to the scrape job) and rank.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "analysis/training_findings.h"
#include "analysis/training_intake.h"
#include "analysis/training_jobs.h"
#include "export/exposition_writer.h"

namespace gpuscope::agent {

// The label naming a job in every training series.
inline constexpr std::string_view kTrainingJobLabel = "training_job";

struct TrainingExposition {
  std::span<const analysis::JobView> jobs;
  std::span<const analysis::JobFindings> findings;  // by job name, as `jobs`
  const analysis::TrainingContext* context = nullptr;  // the rank → GPU mapping (training_gpu_memory_gb's gpu_id)
  analysis::IntakeCounts counts;
  std::uint64_t scalars_dropped = 0;
  // The host label the GPU families carry (Hostname, hostname, or none: empty name).
  std::string host_label;
  std::string hostname;
};

void write_training_metrics(exporter::ExpositionWriter& writer, const TrainingExposition& training);

}  // namespace gpuscope::agent
