#include "export/smi_field_order.h"

#include <algorithm>
#include <array>

namespace gpuscope::exporter {
namespace {

// nvidia-smi 580.159.04 on an H100 (../shared/reference/real-h100/nvidia-smi-query-gpu-fields.txt).
constexpr auto kSfoOrder = std::to_array<std::string_view>({
    "timestamp", "driver_version", "count", "name", "serial", "uuid", "pci.bus_id", "pci.domain", "pci.bus",
    "pci.device", "pci.device_id", "pci.sub_device_id", "vgpu_device_capability.homogeneous_placements",
    "pcie.link.gen.current", "pcie.link.gen.gpucurrent", "pcie.link.gen.max", "pcie.link.gen.gpumax",
    "pcie.link.gen.hostmax", "pcie.link.width.current", "pcie.link.width.max", "index", "display_mode",
    "display_attached", "display_active", "persistence_mode", "addressing_mode", "accounting.mode",
    "accounting.buffer_size", "driver_model.current", "driver_model.pending", "vbios_version", "inforom.img",
    "inforom.oem", "inforom.ecc", "inforom.pwr", "inforom.checksum_validation", "gpu_recovery_action", "gom.current",
    "gom.pending", "fan.speed", "pstate", "clocks_event_reasons.supported", "clocks_event_reasons.active",
    "clocks_event_reasons.gpu_idle", "clocks_event_reasons.applications_clocks_setting",
    "clocks_event_reasons.sw_power_cap", "clocks_event_reasons.hw_slowdown",
    "clocks_event_reasons.hw_thermal_slowdown", "clocks_event_reasons.hw_power_brake_slowdown",
    "clocks_event_reasons.sw_thermal_slowdown", "clocks_event_reasons.sync_boost",
    "clocks_event_reasons_counters.sw_power_cap", "clocks_event_reasons_counters.sync_boost",
    "clocks_event_reasons_counters.sw_thermal_slowdown", "clocks_event_reasons_counters.hw_thermal_slowdown",
    "clocks_event_reasons_counters.hw_power_brake_slowdown", "memory.total", "memory.reserved", "memory.used",
    "memory.free", "compute_mode", "compute_cap", "utilization.gpu", "utilization.memory", "utilization.encoder",
    "utilization.decoder", "utilization.jpeg", "utilization.ofa", "ecc.mode.current", "ecc.mode.pending",
    "ecc.errors.corrected.volatile.device_memory", "ecc.errors.corrected.volatile.dram",
    "ecc.errors.corrected.volatile.register_file", "ecc.errors.corrected.volatile.texture_memory",
    "ecc.errors.corrected.volatile.cbu", "ecc.errors.corrected.volatile.sram", "ecc.errors.corrected.volatile.total",
    "ecc.errors.corrected.aggregate.device_memory", "ecc.errors.corrected.aggregate.dram",
    "ecc.errors.corrected.aggregate.register_file", "ecc.errors.corrected.aggregate.texture_memory",
    "ecc.errors.corrected.aggregate.cbu", "ecc.errors.corrected.aggregate.sram",
    "ecc.errors.corrected.aggregate.total", "ecc.errors.uncorrected.volatile.device_memory",
    "ecc.errors.uncorrected.volatile.dram", "ecc.errors.uncorrected.volatile.register_file",
    "ecc.errors.uncorrected.volatile.texture_memory", "ecc.errors.uncorrected.volatile.cbu",
    "ecc.errors.uncorrected.volatile.sram", "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.uncorrected.aggregate.device_memory", "ecc.errors.uncorrected.aggregate.dram",
    "ecc.errors.uncorrected.aggregate.register_file", "ecc.errors.uncorrected.aggregate.texture_memory",
    "ecc.errors.uncorrected.aggregate.cbu", "ecc.errors.uncorrected.aggregate.sram",
    "ecc.errors.uncorrected.aggregate.total", "ecc.errors.uncorrected.volatile.sram.parity",
    "ecc.errors.uncorrected.volatile.sram.secded", "ecc.errors.uncorrected.aggregate.sram.parity",
    "ecc.errors.uncorrected.aggregate.sram.secded", "ecc.errors.uncorrected.aggregate.sram.sm",
    "ecc.errors.uncorrected.aggregate.sram.mcu", "ecc.errors.uncorrected.aggregate.sram.pcie",
    "ecc.errors.uncorrected.aggregate.sram.other", "retired_pages.single_bit_ecc.count",
    "retired_pages.double_bit.count", "retired_pages.pending", "remapped_rows.correctable",
    "remapped_rows.correctable_inactive", "remapped_rows.uncorrectable", "remapped_rows.uncorrectable_inactive",
    "remapped_rows.pending", "remapped_rows.failure", "remapped_rows.histogram.max", "remapped_rows.histogram.high",
    "remapped_rows.histogram.partial", "remapped_rows.histogram.low", "remapped_rows.histogram.none",
    "temperature.gpu", "temperature.gpu.tlimit", "temperature.memory", "power.management", "power.draw",
    "power.draw.average", "power.draw.instant", "power.limit", "enforced.power.limit", "power.default_limit",
    "power.min_limit", "power.max_limit", "module.power.draw.average", "module.power.draw.instant",
    "module.power.limit", "module.enforced.power.limit", "module.power.default_limit", "module.power.min_limit",
    "module.power.max_limit", "power_smoothing.delayed_power_smoothing_supported",
    "power_smoothing.primary_power_floor", "power_smoothing.secondary_power_floor",
    "power_smoothing.min_primary_floor_activation_offset", "power_smoothing.min_primary_floor_activation_point",
    "power_smoothing.window_multiplier", "power_smoothing.curr_profile.secondary_power_floor",
    "power_smoothing.curr_profile.primary_floor_act_window_multiplier",
    "power_smoothing.curr_profile.primary_floor_tar_window_multiplier",
    "power_smoothing.curr_profile.primary_floor_act_offset", "power_smoothing.admin_override.secondary_power_floor",
    "power_smoothing.admin_override.primary_floor_act_window_multiplier",
    "power_smoothing.admin_override.primary_floor_tar_window_multiplier",
    "power_smoothing.admin_override.primary_floor_act_offset", "clocks.current.graphics", "clocks.current.sm",
    "clocks.current.memory", "clocks.current.video", "clocks.applications.graphics", "clocks.applications.memory",
    "clocks.default_applications.graphics", "clocks.default_applications.memory", "clocks.max.graphics",
    "clocks.max.sm", "clocks.max.memory", "mig.mode.current", "mig.mode.pending", "gsp.mode.current",
    "gsp.mode.default", "protected_memory.total", "protected_memory.used", "protected_memory.free", "fabric.state",
    "fabric.status", "fabric.health.summary", "fabric.health.bandwidth", "fabric.health.route_recovery_in_progress",
    "fabric.health.route_unhealthy", "fabric.health.access_timeout_recovery",
    "fabric.health.incorrect_configuration", "fabric.health.partition_assigned", "platform.chassis_serial_number",
    "platform.slot_number", "platform.tray_index", "platform.host_id", "platform.peer_type", "platform.module_id",
    "platform.gpu_fabric_guid", "hostname",
});

}  // namespace

std::span<const std::string_view> smi_query_gpu_order() { return kSfoOrder; }

std::optional<std::size_t> smi_query_gpu_rank(std::string_view name) {
  const auto* it = std::find(kSfoOrder.begin(), kSfoOrder.end(), name);
  if (it == kSfoOrder.end()) return std::nullopt;
  return static_cast<std::size_t>(it - kSfoOrder.begin());
}

}  // namespace gpuscope::exporter
