#include <array>

#include "export/smi_q_values.h"

namespace gpuscope::exporter::smi_q {
namespace {

// nvidia-smi's words for NVML's enums; "Unknown" for a value it does not name.
std::string sq_brand(int brand) {
  static constexpr std::array<std::string_view, 17> kNames{"Unknown",
                                                           "Quadro",
                                                           "Tesla",
                                                           "NVS",
                                                           "Grid",
                                                           "GeForce",
                                                           "Titan",
                                                           "NVIDIA Virtual Applications",
                                                           "NVIDIA Virtual PC",
                                                           "NVIDIA Virtual Compute Server",
                                                           "NVIDIA RTX Virtual Workstation",
                                                           "NVIDIA Cloud Gaming",
                                                           "Quadro RTX",
                                                           "NVIDIA RTX",
                                                           "NVIDIA",
                                                           "GeForce RTX",
                                                           "Titan RTX"};
  return brand >= 0 && brand < static_cast<int>(kNames.size()) ? std::string(kNames[brand]) : "Unknown";
}

std::string sq_hex_bytes(const std::array<std::uint8_t, 16>& bytes) {
  std::string out = "0x";
  for (auto b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

}  // namespace

std::vector<SmiQNode> board_nodes(const SmiQGpu& g) {
  const auto& d = g.details;
  const auto& info = g.info;
  std::vector<SmiQNode> out;
  out.push_back(sq_leaf("Product Name", "product_name", sq_text(info.name)));
  out.push_back(sq_answer("Product Brand", "product_brand", d.brand, [](int b) { return sq_text(sq_brand(b)); }));
  out.push_back(info.architecture ? sq_leaf("Product Architecture", "product_architecture",
                                            sq_text(model::architecture_name(*info.architecture)))
                                  : sq_na("Product Architecture", "product_architecture"));
  // nvidia-smi 580 no longer reads a display mode: it prints NVML's wording for DEPRECATED, and the
  // display mode NVML returns as "Display Attached".
  out.push_back(sq_leaf("Display Mode", "display_mode", {"Requested functionality has been deprecated", nullptr}));
  out.push_back(
      sq_answer("Display Attached", "display_attached", d.display_mode, [](int v) { return sq_yes(v != 0); }));
  out.push_back(
      sq_answer("Display Active", "display_active", d.display_active, [](int v) { return sq_enabled(v != 0); }));
  out.push_back(sq_answer("Persistence Mode", "persistence_mode",
                          sq_or(d.persistence_mode, info.persistence_mode.transform([](bool b) { return int(b); })),
                          [](int v) { return sq_enabled(v != 0); }));
  out.push_back(sq_answer("Addressing Mode", "addressing_mode", d.addressing_mode, [](std::uint32_t v) {
    return sq_text(sq_enum(static_cast<int>(v), {"None", "HMM", "ATS"}));
  }));
  auto mig = d.mig_mode;
  if (!mig.ok() && mig.error == 13 && info.mig_enabled) {
    // Discovery knows the current mode only; pending stays unanswered.
    out.push_back(sq_section(
        "MIG Mode", "mig_mode",
        {sq_leaf("Current", "current_mig", sq_enabled(*info.mig_enabled)), sq_na("Pending", "pending_mig")}));
  } else {
    out.push_back(sq_section("MIG Mode", "mig_mode",
                             sq_pair(mig, "current_mig", "pending_mig", [](int v) { return sq_enabled(v != 0); })));
  }
  if (auto mig_devices = mig_devices_node(g)) out.push_back(std::move(*mig_devices));
  out.push_back(
      sq_answer("Accounting Mode", "accounting_mode", d.accounting_mode, [](int v) { return sq_enabled(v != 0); }));
  out.push_back(sq_answer("Accounting Mode Buffer Size", "accounting_mode_buffer_size", d.accounting_buffer_size,
                          [](std::uint32_t v) { return sq_int(v); }));
  out.push_back(
      sq_section("Driver Model", "driver_model", sq_pair(d.driver_model, "current_dm", "pending_dm", sq_driver_model)));
  out.push_back(sq_identity("Serial Number", "serial", info.serial));
  out.push_back(sq_identity("GPU UUID", "uuid", info.uuid));
  out.push_back(sq_answer("GPU PDI", "pdi", g.details.pdi, [](std::uint64_t v) {
    return sq_text(fmt::format("0x{:016x}", v));
  }));
  out.push_back(info.minor_number ? sq_leaf("Minor Number", "minor_number", sq_int(*info.minor_number))
                                  : sq_na("Minor Number", "minor_number"));
  out.push_back(sq_identity("VBIOS Version", "vbios_version", info.vbios_version));
  out.push_back(
      sq_answer("MultiGPU Board", "multigpu_board", d.multi_gpu_board, [](std::uint32_t v) { return sq_yes(v != 0); }));
  out.push_back(
      sq_answer("Board ID", "board_id", d.board_id, [](std::uint32_t v) { return sq_text(fmt::format("{:#x}", v)); }));
  out.push_back(
      sq_answer("Board Part Number", "board_part_number", sq_or(d.board_part_number, info.board_part_number), sq_text));
  out.push_back(sq_na("GPU Part Number", "gpu_part_number"));
  out.push_back(sq_na("FRU Part Number", "gpu_fru_part_number"));

  std::vector<SmiQNode> platform;
  if (d.platform.ok()) {
    const auto& p = *d.platform.value;
    platform.push_back(sq_identity("Chassis Serial Number", "chassis_serial_number", p.chassis_serial));
    platform.push_back(sq_leaf("Slot Number", "slot_number", sq_int(p.slot)));
    platform.push_back(sq_leaf("Tray Index", "tray_index", sq_int(p.tray)));
    platform.push_back(sq_leaf("Host ID", "host_id", sq_int(p.host_id)));
    platform.push_back(sq_leaf("Peer Type", "peer_type", sq_int(p.peer_type)));
    platform.push_back(sq_leaf("Module Id", "module_id", sq_int(p.module_id)));
    platform.push_back(sq_leaf("GPU Fabric GUID", "gpu_fabric_guid", sq_text(sq_hex_bytes(p.ib_guid))));
  } else {
    for (auto [label, key] : {std::pair{"Chassis Serial Number", "chassis_serial_number"},
                              {"Slot Number", "slot_number"},
                              {"Tray Index", "tray_index"},
                              {"Host ID", "host_id"},
                              {"Peer Type", "peer_type"}}) {
      platform.push_back(sq_failed(label, key, d.platform.error));
    }
    platform.push_back(sq_answer("Module Id", "module_id", d.module_id, [](std::uint32_t v) { return sq_int(v); }));
    platform.push_back(sq_failed("GPU Fabric GUID", "gpu_fabric_guid", d.platform.error));
  }
  out.push_back(sq_section("Platform Info", "platform_info", std::move(platform)));

  out.push_back(sq_section("Inforom Version", "inforom_version",
                           {sq_answer("Image Version", "img_version", d.inforom_image, sq_text),
                            sq_answer("OEM Object", "oem_object", d.inforom_oem, sq_text),
                            sq_answer("ECC Object", "ecc_object", d.inforom_ecc, sq_text),
                            sq_answer("Power Management Object", "pwr_object", d.inforom_power, sq_text)}));
  out.push_back(
      sq_section("Inforom BBX Object Flush", "inforom_bbx_flush",
                 {sq_na("Latest Timestamp", "latest_timestamp"), sq_na("Latest Duration", "latest_duration")}));
  out.push_back(sq_section("GPU Operation Mode", "gpu_operation_mode",
                           sq_pair(d.gpu_operation_mode, "current_gom", "pending_gom", sq_gom)));
  out.push_back(sq_answer("GPU C2C Mode", "c2c_mode", d.c2c_enabled, sq_enabled));
  out.push_back(
      sq_section("GPU Virtualization Mode", "gpu_virtualization_mode",
                 {sq_answer("Virtualization Mode", "virtualization_mode", d.virtualization_mode,
                            [](int v) {
                              return sq_text(sq_enum(v, {"None", "Pass-Through", "VGPU", "Host VGPU", "Host VSGA"}));
                            }),
                  sq_answer("Host VGPU Mode", "host_vgpu_mode", d.host_vgpu_mode,
                            [](int v) {
                              return sq_text(sq_enum(v, {"Non SR-IOV", "SR-IOV"}));
                            }),
                  sq_na("vGPU Heterogeneous Mode", "vgpu_heterogeneous_mode")}));
  out.push_back(sq_answer("GPU Recovery Action", "gpu_recovery_action", d.gpu_recovery_action, [](std::uint32_t v) {
    return sq_text(sq_enum(static_cast<int>(v), {"None", "Reset", "Reboot", "Drain P2P", "Drain and Reset"}));
  }));
  out.push_back(sq_answer("GSP Firmware Version", "gsp_firmware_version", d.gsp_firmware_version, sq_text));
  out.push_back(sq_section("IBMNPU", "ibmnpu", {sq_na("Relaxed Ordering Mode", "relaxed_ordering_mode")}));
  return out;
}

SmiQNode pci_node(const SmiQGpu& g) {
  const auto& d = g.details;
  const auto& s = g.sample;
  auto id = [&](std::string label, std::string key, auto part) {
    return sq_answer(std::move(label), std::move(key), d.pci, [&](const model::PciIds& p) { return sq_text(part(p)); });
  };
  auto gen = [](std::uint32_t v) { return sq_int(v); };
  auto width = [](std::uint32_t v) { return SqValue{fmt::format("{}x", v), Json(v)}; };
  std::vector<SmiQNode> pci;
  pci.push_back(id("Bus", "pci_bus", [](const model::PciIds& p) { return fmt::format("0x{:02X}", p.bus); }));
  pci.push_back(id("Device", "pci_device", [](const model::PciIds& p) { return fmt::format("0x{:02X}", p.device); }));
  pci.push_back(id("Domain", "pci_domain", [](const model::PciIds& p) { return fmt::format("0x{:04X}", p.domain); }));
  // nvidia-smi: "0x3" in text, "3" in XML (hex digits, no padding).
  auto pci_class = [](std::uint32_t v) { return SqValue{fmt::format("0x{:x}", v), Json(v)}; };
  pci.push_back(sq_answer("Base Classcode", "pci_base_class", d.pci_class,
                          [&](const model::PciClass& c) { return pci_class(c.base); }));
  pci.push_back(sq_answer("Sub Classcode", "pci_sub_class", d.pci_class,
                          [&](const model::PciClass& c) { return pci_class(c.sub); }));
  pci.push_back(
      id("Device Id", "pci_device_id", [](const model::PciIds& p) { return fmt::format("0x{:08X}", p.device_id); }));
  pci.push_back(sq_leaf("Bus Id", "pci_bus_id", sq_text(g.info.pci_bus_id)));
  pci.push_back(id("Sub System Id", "pci_sub_system_id",
                   [](const model::PciIds& p) { return fmt::format("0x{:08X}", p.subsystem_id); }));
  pci.push_back(
      sq_section("GPU Link Info", "pci_gpu_link_info",
                 {sq_section("PCIe Generation", "pcie_gen",
                             {sq_answer("Max", "max_link_gen", d.pcie_gen_max, gen),
                              sq_answer("Current", "current_link_gen", d.pcie_gen_current, gen),
                              // The GPU's own current generation is the one NVML reports: one call answers both.
                              sq_answer("Device Current", "device_current_link_gen", d.pcie_gen_current, gen),
                              sq_answer("Device Max", "max_device_link_gen", d.pcie_gen_gpu_max, gen),
                              sq_na("Host Max", "max_host_link_gen")}),
                  sq_section("Link Width", "link_widths",
                             {sq_answer("Max", "max_link_width", d.pcie_width_max, width),
                              sq_answer("Current", "current_link_width", d.pcie_width_current, width)})}));
  pci.push_back(sq_section("Bridge Chip", "pci_bridge_chip",
                           {sq_na("Type", "bridge_chip_type"), sq_na("Firmware", "bridge_chip_fw")}));
  pci.push_back(
      sq_field(s, FieldId::kPcieReplay, "Replays Since Reset", "replay_counter", [](double v) { return sq_int(v); }));
  pci.push_back(sq_answer("Replay Number Rollovers", "replay_rollover_counter", d.pcie_replay_rollovers,
                          [](std::uint64_t v) { return sq_int(static_cast<double>(v)); }));
  pci.push_back(sq_field(s, FieldId::kPcieTxThroughput, "Tx Throughput", json_key("tx_util", "KB/s"),
                         [](double v) { return sq_int(v, "KB/s"); }));
  pci.push_back(sq_field(s, FieldId::kPcieRxThroughput, "Rx Throughput", json_key("rx_util", "KB/s"),
                         [](double v) { return sq_int(v, "KB/s"); }));
  pci.push_back(sq_na("Atomic Caps Outbound", "atomic_caps_outbound"));
  pci.push_back(sq_na("Atomic Caps Inbound", "atomic_caps_inbound"));
  return sq_section("PCI", "pci", std::move(pci));
}

}  // namespace gpuscope::exporter::smi_q
