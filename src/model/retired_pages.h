// A GPU's retired memory pages (nvmlDeviceGetRetiredPages_v2): what `query --query-retired-pages` prints.
// Pre-Ampere GPUs retire a page after a double-bit ECC error or repeated single-bit ones; Ampere and newer
// remap rows instead and answer NOT_SUPPORTED.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace gpuscope::model {

enum class RetirementCause : std::uint8_t { kMultipleSingleBitEcc, kDoubleBitEcc };

struct RetiredPage {
  RetirementCause cause = RetirementCause::kDoubleBitEcc;
  std::uint64_t address = 0;                  // the hardware address, as Xid 63 reports it
  std::optional<std::uint64_t> timestamp_us;  // µs since the Unix epoch; none from the v1 call
};

struct RetiredPagesReading {
  int error = 0;  // NVML's return code: 0 read; 3 NOT_SUPPORTED (row remapping instead), ...
  std::vector<RetiredPage> pages;  // single-bit causes first, then double-bit, each in the driver's order
};

}  // namespace gpuscope::model
