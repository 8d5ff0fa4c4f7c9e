// `query -q`'s "MIG Devices" section: one "MIG Device" block per MIG device of a GPU in MIG mode, in
// nvidia-smi -q's layout (Index, GPU and Compute Instance ID, Device Attributes > Shared, ECC Errors,
// FB and BAR1 Memory Usage). gpuscope reads a MIG device's SM count and memory; the shared engine
// counts, its SRAM ECC count and BAR1 print N/A.
#include "export/mig_instance_rows.h"
#include "export/smi_q_values.h"

namespace gpuscope::exporter::smi_q {
namespace {

SmiQNode sq_mig_mib(const model::GpuSample& own, FieldId id, std::string label, std::string_view key) {
  return sq_field(own, id, std::move(label), json_key(key, "MiB"), [](double v) { return sq_int(v, "MiB"); });
}

SmiQNode sq_mig_device(const model::GpuSample& parent, const model::MigInstanceSample& m) {
  const auto own = mig_instance_as_sample(parent, m);
  SmiQNode device = sq_section("MIG Device", "mig_device", {});
  device.children.push_back(sq_leaf("Index", "index", sq_int(m.device_index)));
  device.children.push_back(sq_leaf("GPU Instance ID", "gpu_instance_id", sq_int(m.gpu_instance_id)));
  device.children.push_back(sq_leaf("Compute Instance ID", "compute_instance_id", sq_int(m.compute_instance_id)));
  device.children.push_back(sq_section(
      "Device Attributes", "device_attributes",
      {sq_section("Shared", "shared",
                  {m.sm_count ? sq_leaf("Multiprocessor count", "multiprocessor_count", sq_int(*m.sm_count))
                              : sq_na("Multiprocessor count", "multiprocessor_count"),
                   sq_na("Copy Engine count", "copy_engine_count"), sq_na("Encoder count", "encoder_count"),
                   sq_na("Decoder count", "decoder_count"), sq_na("OFA count", "ofa_count"),
                   sq_na("JPG count", "jpg_count")})}));
  device.children.push_back(sq_section(
      "ECC Errors", "ecc_error_count",
      {sq_section("Volatile", "volatile_count", {sq_na("SRAM Uncorrectable", "sram_uncorrectable")})}));
  device.children.push_back(sq_section(
      "FB Memory Usage", "fb_memory_usage",
      {sq_mig_mib(own, FieldId::kFbTotal, "Total", "total"), sq_mig_mib(own, FieldId::kFbReserved, "Reserved", "reserved"),
       sq_mig_mib(own, FieldId::kFbUsed, "Used", "used"), sq_mig_mib(own, FieldId::kFbFree, "Free", "free")}));
  device.children.push_back(sq_section("BAR1 Memory Usage", "bar1_memory_usage",
                                       {sq_na("Total", json_key("total", "MiB")), sq_na("Used", json_key("used", "MiB")),
                                        sq_na("Free", json_key("free", "MiB"))}));
  return device;
}

}  // namespace

std::optional<SmiQNode> mig_devices_node(const SmiQGpu& g) {
  // nvidia-smi 580's text has no MIG Devices line outside MIG mode (real-h100/nvidia-smi-q.txt).
  if (!g.sample.up || !g.sample.mig_enabled) return std::nullopt;
  if (g.sample.mig_instances.empty()) return sq_leaf("MIG Devices", "mig_devices", {"None", Json::array()});
  SmiQNode list = sq_section("MIG Devices", "mig_devices", {});
  list.json = Json::array();  // marks the children as array elements
  for (const auto& m : g.sample.mig_instances) list.children.push_back(sq_mig_device(g.sample, m));
  return list;
}

}  // namespace gpuscope::exporter::smi_q
