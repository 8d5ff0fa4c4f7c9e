// Synthetic GPU readings for the diagnosis' tests: one GPU's series at 1 s, built from per-second
// values of each DCGM field, grouped as the store's answer would be.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analysis/gpu_signals.h"
#include "store/queryable.h"

namespace gpuscope::analysis::testing {

inline constexpr std::int64_t kT0 = 1'800'000'000'000;  // ms

class GpuBuilder {
 public:
  explicit GpuBuilder(std::string gpu = "0", std::string host = "node-1", std::string job = "")
      : gpu_(std::move(gpu)), host_(std::move(host)), job_(std::move(job)) {}

  // `field` at each second s in [from_s, to_s) with value f(s).
  GpuBuilder& set(const std::string& field, int from_s, int to_s, const std::function<double(int)>& f) {
    auto& pts = values_[field];
    for (int s = from_s; s < to_s; ++s) pts[s] = f(s);
    return *this;
  }
  GpuBuilder& set(const std::string& field, int from_s, int to_s, double v) {
    return set(field, from_s, to_s, [v](int) { return v; });
  }
  // A busy profile over [from_s, to_s): GR, SM, tensor, DRAM, FP32 and utilization.
  GpuBuilder& busy(int from_s, int to_s, double gr, double sm, double tensor, double dram, double fp32, double util) {
    set("DCGM_FI_PROF_GR_ENGINE_ACTIVE", from_s, to_s, gr);
    set("DCGM_FI_PROF_SM_ACTIVE", from_s, to_s, sm);
    set("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", from_s, to_s, tensor);
    set("DCGM_FI_PROF_DRAM_ACTIVE", from_s, to_s, dram);
    set("DCGM_FI_PROF_PIPE_FP32_ACTIVE", from_s, to_s, fp32);
    set("DCGM_FI_DEV_GPU_UTIL", from_s, to_s, util);
    return *this;
  }

  // The series are those of one of the GPU's MIG instances (GPU_I_ID, GPU_I_PROFILE labels).
  GpuBuilder& mig(std::string gpu_instance_id, std::string profile) {
    mig_id_ = std::move(gpu_instance_id);
    mig_profile_ = std::move(profile);
    return *this;
  }

  std::vector<store::SeriesSamples> series() const {
    std::vector<store::SeriesSamples> out;
    for (const auto& [field, pts] : values_) {
      store::SeriesSamples s;
      std::vector<store::Label> labels = {{std::string(store::kMetricNameLabel), field},
                                          {"gpu", gpu_},
                                          {"UUID", "GPU-" + host_ + "-" + gpu_},
                                          {"Hostname", host_},
                                          {"modelName", "NVIDIA H100 80GB HBM3"}};
      if (!job_.empty()) labels.push_back({"hpc_job", job_});
      if (!mig_id_.empty()) {
        labels.push_back({"GPU_I_ID", mig_id_});
        labels.push_back({"GPU_I_PROFILE", mig_profile_});
      }
      s.labels = store::Labels(labels);
      for (const auto& [sec, v] : pts) s.samples.push_back({kT0 + sec * 1000LL, v});
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  std::string gpu_, host_, job_;
  std::string mig_id_, mig_profile_;
  std::map<std::string, std::map<int, double>> values_;
};

inline std::vector<GpuHistory> histories(const std::vector<GpuBuilder>& gpus) {
  std::vector<store::SeriesSamples> all;
  for (const auto& g : gpus) {
    auto s = g.series();
    all.insert(all.end(), s.begin(), s.end());
  }
  return group_by_gpu(std::move(all));
}

inline std::int64_t at_s(int s) { return kT0 + s * 1000LL; }

}  // namespace gpuscope::analysis::testing
