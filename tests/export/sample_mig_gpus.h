// A hand-built H100 in MIG mode for the view tests: two MIG devices with known values (a 3g.40gb with
// GPM ratios, a 1g.10gb whose GPM has no second sample yet), so expected output can be written out
// literally.
#pragma once

#include "export/sample_gpus.h"

namespace gpuscope::testing {

inline model::GpuInfo h100_mig_info(unsigned index = 0) {
  auto g = h100_info(index);
  g.mig_enabled = true;
  return g;
}

// GPU instance 1 (compute instance 0), 3g.40gb: 10240 of 40192 MiB used, SM active 0.62, SM occupancy
// 0.31, tensor 0.45, DRAM 0.27, graphics 0.7, FP64 0, FP32 0.12, FP16 0.33 (none a rounding tie at 2 or 3
// decimals or in percent); in pod ml/trainer-0.
inline model::MigInstanceSample mig_3g(unsigned device_index = 0) {
  using model::FieldId;
  using model::FieldValue;
  model::MigInstanceSample m;
  m.device_index = device_index;
  m.gpu_instance_id = 1;
  m.compute_instance_id = 0;
  m.profile = "3g.40gb";
  m.uuid = "MIG-11111111-aaaa-5bbb-8ccc-000000000001";
  m.sm_count = 60;
  m.gpu_instance_slices = 3;
  m[FieldId::kFbTotal] = FieldValue::of(40192);
  m[FieldId::kFbUsed] = FieldValue::of(10240);
  m[FieldId::kFbFree] = FieldValue::of(29952);
  m[FieldId::kFbReserved] = FieldValue::of(0);
  m[FieldId::kSmActive] = FieldValue::of(0.62);
  m[FieldId::kSmOccupancy] = FieldValue::of(0.31);
  m[FieldId::kPipeTensorActive] = FieldValue::of(0.45);
  m[FieldId::kDramActive] = FieldValue::of(0.27);
  m[FieldId::kGrEngineActive] = FieldValue::of(0.7);
  m[FieldId::kPipeFp64Active] = FieldValue::of(0);
  m[FieldId::kPipeFp32Active] = FieldValue::of(0.12);
  m[FieldId::kPipeFp16Active] = FieldValue::of(0.33);
  m.kubernetes_pod = model::KubernetesPod{"trainer-0", "ml", "pytorch"};
  return m;
}

// GPU instance 13 (compute instance 0), 1g.10gb: idle, 9728 MiB free of 9728; no GPM ratio yet.
inline model::MigInstanceSample mig_1g(unsigned device_index = 1) {
  using model::FieldId;
  using model::FieldValue;
  model::MigInstanceSample m;
  m.device_index = device_index;
  m.gpu_instance_id = 13;
  m.compute_instance_id = 0;
  m.profile = "1g.10gb";
  m.uuid = "MIG-22222222-aaaa-5bbb-8ccc-000000000002";
  m.sm_count = 16;
  m.gpu_instance_slices = 1;
  m[FieldId::kFbTotal] = FieldValue::of(9728);
  m[FieldId::kFbUsed] = FieldValue::of(0);
  m[FieldId::kFbFree] = FieldValue::of(9728);
  return m;
}

// GPU `index` in MIG mode with mig_3g() and mig_1g(): utilization rates unsupported, as on a real MIG GPU.
inline model::GpuSample h100_mig_sample(unsigned index = 0) {
  auto s = h100_sample(index);
  s[model::FieldId::kGpuUtil] = model::FieldValue::unsupported();
  s[model::FieldId::kMemCopyUtil] = model::FieldValue::unsupported();
  s.mig_enabled = true;
  s.mig_instances = {mig_3g(0), mig_1g(1)};
  return s;
}

}  // namespace gpuscope::testing
