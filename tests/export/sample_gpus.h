// Hand-built GPUs and readings for the view tests: an H100 with known values, so expected output can be
// written out literally.
#pragma once

#include <chrono>

#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::testing {

// 2026-01-01 00:10:00.000 UTC
inline std::chrono::system_clock::time_point sample_time() {
  return std::chrono::system_clock::time_point(std::chrono::seconds(1767226200));
}

inline model::SystemInfo sample_system() {
  model::SystemInfo s;
  s.library_path = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.65.06";
  s.driver_version = "580.65.06";
  s.nvml_version = "13.580.65.06";
  s.cuda_driver_version = 13000;
  s.hostname = "node01";
  return s;
}

inline model::GpuInfo h100_info(unsigned index = 0) {
  model::GpuInfo g;
  g.index = index;
  g.minor_number = index;
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = index == 0 ? "GPU-5e5c1a8a-1111-2222-3333-444455556666" : "GPU-77777777-1111-2222-3333-444455556666";
  g.serial = "1650123456789";
  g.pci_bus_id = index == 0 ? "00000000:18:00.0" : "00000000:2A:00.0";
  g.vbios_version = "96.00.74.00.01";
  g.memory_total_bytes = 81559ULL * 1024 * 1024;
  g.max_sm_clock_mhz = 1980;
  g.max_mem_clock_mhz = 2619;
  g.power_limit_watts = 700;
  g.enforced_power_limit_watts = 700;
  g.architecture = 9;
  g.cuda_cc_major = 9;
  g.cuda_cc_minor = 0;
  g.pcie_max_gen = 5;
  g.pcie_max_width = 16;
  g.gpm_supported = true;
  g.mig_enabled = false;
  return g;
}

// Every field unsupported except the ones set here.
inline model::GpuSample h100_sample(unsigned index = 0) {
  using model::FieldId;
  using model::FieldValue;
  model::GpuSample s;
  s.index = index;
  s[FieldId::kGpuTemp] = FieldValue::of(45);
  s[FieldId::kGpuUtil] = FieldValue::of(87);
  s[FieldId::kMemCopyUtil] = FieldValue::of(31);
  s[FieldId::kFbUsed] = FieldValue::of(61234);
  s[FieldId::kFbTotal] = FieldValue::of(81559);
  s[FieldId::kPowerUsage] = FieldValue::of(250.123);
  s[FieldId::kSmClock] = FieldValue::of(1980);
  s[FieldId::kGraphicsClock] = FieldValue::of(1980);
  s[FieldId::kMemClock] = FieldValue::of(2619);
  s[FieldId::kPstate] = FieldValue::of(0);
  s[FieldId::kClocksEventReasons] = FieldValue::of(4);
  s[FieldId::kMemoryTemp] = FieldValue::of(52);
  s[FieldId::kEncUtil] = FieldValue::of(0);
  s[FieldId::kDecUtil] = FieldValue::of(0);
  s[FieldId::kPowerViolation] = FieldValue::of(1e9);
  s[FieldId::kThermalViolation] = FieldValue::of(0);
  return s;
}

}  // namespace gpuscope::testing
