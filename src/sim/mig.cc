#include "sim/mig.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "sim/gpu_physics.h"

namespace gpuscope::sim {
namespace {

Noise mig_noise(std::uint64_t seed, unsigned gpu, const MigInstanceSpec& inst) {
  // Each instance its own streams, apart from the GPU's own (which plays while MIG is off).
  return Noise(splitmix64(seed ^ (0x4D4947ULL << 24U) ^ (static_cast<std::uint64_t>(inst.id) + 1)), gpu);
}

}  // namespace

std::vector<const MigInstanceSpec*> mig_instances_at(const GpuSpec& spec, double t) {
  std::vector<const MigInstanceSpec*> out;
  for (const MigInstanceSpec& inst : spec.mig_instances) {
    if (inst.alive(t)) out.push_back(&inst);
  }
  std::sort(out.begin(), out.end(), [](const MigInstanceSpec* a, const MigInstanceSpec* b) { return a->id < b->id; });
  return out;
}

const MigInstanceSpec* mig_instance_at(const GpuSpec& spec, unsigned gpu_instance_id, double t) {
  for (const MigInstanceSpec& inst : spec.mig_instances) {
    if (inst.id == gpu_instance_id && inst.alive(t)) return &inst;
  }
  return nullptr;
}

Activity mig_instance_activity(const MigInstanceSpec& inst, const GpuModel& model, double link_mibps,
                               std::uint64_t seed, unsigned gpu, std::uint64_t cell) {
  const double t = static_cast<double>(cell) * kCellS;
  auto phase = std::upper_bound(inst.phases.begin(), inst.phases.end(), t,
                                [](double v, const Phase& p) { return v < p.at_s; });
  if (phase != inst.phases.begin()) --phase;  // a cell that starts before a mid-second creation: the first phase
  const Noise noise = mig_noise(seed, gpu, inst);
  Activity a = workload_activity(phase->spec, std::max(0.0, t - phase->at_s), cell, model, link_mibps, noise);
  const double share = static_cast<double>(inst.profile->sm_count) / model.sm_count;
  a.metric[kPcieTxMiBps] *= share;
  a.metric[kPcieRxMiBps] *= share;
  a.metric[kNvlinkRxMiBps] = 0;
  a.metric[kNvlinkTxMiBps] = 0;
  return a;
}

Activity mig_gpu_activity(const GpuSpec& spec, const GpuModel& model, double link_mibps, std::uint64_t seed,
                          unsigned gpu, std::uint64_t cell) {
  Activity out;
  const double t = static_cast<double>(cell) * kCellS;
  double busy_share = 0;
  double duty_sum = 0;
  for (const MigInstanceSpec* inst : mig_instances_at(spec, t)) {
    const Activity a = mig_instance_activity(*inst, model, link_mibps, seed, gpu, cell);
    const double share = static_cast<double>(inst->profile->sm_count) / model.sm_count;
    for (std::size_t m = 0; m < kMetricCount; ++m) out.metric[m] += is_rate_metric(m) ? a.metric[m] : share * a.metric[m];
    out.util_gpu += share * a.util_gpu;
    out.util_mem += share * a.util_mem;
    out.board_clock_factor = std::min(out.board_clock_factor, a.board_clock_factor);
    out.cooling_degradation = std::max(out.cooling_degradation, a.cooling_degradation);
    if (a.busy()) {
      busy_share += share;
      duty_sum += share * a.duty;
    }
  }
  out.duty = busy_share > 0 ? duty_sum / busy_share : 1.0;
  return out;
}

MigMeter::MigMeter(const MigInstanceSpec& inst, const GpuModel& model, double link_mibps, std::uint64_t seed,
                   unsigned gpu)
    : inst_(inst),
      model_(model),
      link_mibps_(link_mibps),
      seed_(seed),
      gpu_(gpu),
      first_cell_(static_cast<std::uint64_t>(std::floor(inst.from_s / kCellS))),
      k_(first_cell_) {}

MigMeter::Value MigMeter::at(double t) {
  const auto k = std::max(first_cell_, static_cast<std::uint64_t>(std::floor(std::max(0.0, t) / kCellS)));
  if (k < k_) {
    k_ = first_cell_;
    sum_ = {};
  }
  for (; k_ < k; ++k_) {
    const Activity a = mig_instance_activity(inst_, model_, link_mibps_, seed_, gpu_, k_);
    for (std::size_t m = 0; m < kMetricCount; ++m) sum_[m] += a.metric[m] * kCellS;
  }
  Value v;
  v.activity = mig_instance_activity(inst_, model_, link_mibps_, seed_, gpu_, k);
  const double dt = std::max(0.0, t - static_cast<double>(k) * kCellS);
  for (std::size_t m = 0; m < kMetricCount; ++m) v.integral[m] = sum_[m] + v.activity.metric[m] * dt;
  return v;
}

std::string mig_uuid(const std::string& parent_uuid, const MigInstanceSpec& inst) {
  std::uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a over the parent's UUID
  for (const char c : parent_uuid) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
  const std::uint64_t a = splitmix64(h ^ (static_cast<std::uint64_t>(inst.id) << 48U) ^
                                     static_cast<std::uint64_t>(std::llround(inst.from_s * 1000.0)));
  const std::uint64_t b = splitmix64(a ^ 0x4D49475555494400ULL);
  char buf[64];
  // Version 5-like layout: the nibble after the second dash is 5, the variant bits 10.
  std::snprintf(buf, sizeof buf, "MIG-%08x-%04x-5%03x-%04x-%012llx", static_cast<unsigned>(a >> 32U),
                static_cast<unsigned>((a >> 16U) & 0xFFFFU), static_cast<unsigned>(a & 0xFFFU),
                static_cast<unsigned>(((b >> 48U) & 0x3FFFU) | 0x8000U),
                static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFULL));
  return buf;
}

}  // namespace gpuscope::sim
