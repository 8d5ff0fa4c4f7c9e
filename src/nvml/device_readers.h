// The queries behind one GPU's gauges and counters at a reading, each filling its catalog fields of a
// GpuSample from one or a few NVML calls: utilization and performance state, framebuffer memory, BAR1,
// health (ECC totals, retired pages, remapped rows), violation times, and the fields only
// GetFieldValues has. NvmlBackend decides which run at a reading (its cadences) and in what order.
#pragma once

#include <functional>

#include "model/snapshot.h"
#include "nvml/nvml_abi.h"

namespace gpuscope::nvml {

class NvmlLibrary;

// Sees every return code of a reading's calls, so GPU_IS_LOST anywhere ends the GPU's reading.
using ReturnMark = std::function<void(nvmlReturn_t)>;

// GPU and memory-copy utilization, encoder and decoder utilization, P-state, clock-event reasons.
void read_utilization(const NvmlLibrary& L, nvmlDevice_t d, model::GpuSample& g, const ReturnMark& mark);

// Framebuffer total, free, used and reserved in MiB (v2; v1 where the driver lacks it: no reserved).
void read_memory(const NvmlLibrary& L, nvmlDevice_t d, model::GpuSample& g, const ReturnMark& mark);

// BAR1 use in MiB.
void read_bar1(const NvmlLibrary& L, nvmlDevice_t d, model::GpuSample& g, const ReturnMark& mark);

// ECC totals (volatile and aggregate), retired-page counts and pending, remapped rows.
void read_health(const NvmlLibrary& L, nvmlDevice_t d, model::GpuSample& g, const ReturnMark& mark);

// The six violation times: one GetFieldValues batch, ViolationStatus for a policy it does not answer.
void read_violations(const NvmlLibrary& L, nvmlDevice_t d, model::GpuSample& g, const ReturnMark& mark);

// Memory temperature and NVLink traffic (all links), in one GetFieldValues call.
void read_field_values(const NvmlLibrary& L, nvmlDevice_t d, model::GpuSample& g, const ReturnMark& mark);

// A GetFieldValues answer as a number, whatever type the driver chose for it.
double field_number(const nvmlFieldValue_t& f);

}  // namespace gpuscope::nvml
