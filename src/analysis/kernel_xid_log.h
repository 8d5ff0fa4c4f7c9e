// XIDs from the kernel log: the NVIDIA driver writes every XID it raises as an `NVRM: Xid (PCI:...)` line,
// so the log since boot holds XIDs that happened before any NVML client was there to receive the event.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::analysis {

// A PCI address as numbers: domain, bus, device (and the function, where written). NVML writes
// "00000000:3B:00.0", the kernel log "0000:3b:00" (no function), so addresses are compared this way
// rather than as text; == says two addresses name the same device, whatever their functions.
struct PciAddress {
  std::uint32_t domain = 0;
  std::uint32_t bus = 0;
  std::uint32_t device = 0;
  std::optional<std::uint32_t> function;
  friend bool operator==(const PciAddress& a, const PciAddress& b) {
    return a.domain == b.domain && a.bus == b.bus && a.device == b.device;
  }
};

// "[domain:]bus:device[.function]" in hex (any of NVML's, lspci's or the kernel log's spellings);
// nullopt for anything else.
std::optional<PciAddress> parse_pci_address(std::string_view text);

// One `NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.` line.
struct KernelXid {
  PciAddress pci;
  std::string pci_text;  // as the line wrote it ("0000:3b:00")
  unsigned xid = 0;
  std::string text;      // the rest of the line after the XID number, as the driver wrote it
};

// Every XID line in `text` (one log line per line: dmesg, journalctl -k, /dev/kmsg records, with or
// without their prefixes). Other lines, NVSwitch `SXid` lines and malformed XID lines are skipped.
std::vector<KernelXid> parse_kernel_xid_lines(std::string_view text);

// What was read from a kernel log, or why it could not be read. A log that could not be read says so:
// it never stands for "no XIDs".
struct KernelXidLog {
  std::string source;   // the file or device read ("/dev/kmsg", a saved dmesg)
  bool readable = false;
  std::string error;    // why not, when !readable ("Permission denied")
  std::vector<KernelXid> xids;
};

// Reads `path` whole: a regular file, or the kernel's record device (/dev/kmsg), read without blocking
// up to the newest record. Never throws.
KernelXidLog read_kernel_xid_log(const std::string& path);

// The kernel log of the running system.
inline constexpr std::string_view kKernelLogDevice = "/dev/kmsg";

}  // namespace gpuscope::analysis
