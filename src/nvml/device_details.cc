// NvmlBackend::details: what nvidia-smi shows of a GPU beyond the sampled catalog, read on demand.
// Every member records either NVML's answer or its return code, so a view can tell "not supported"
// ([N/A]) from a failure ([Unknown Error]) from a library that lacks the function (13).
#include <cstring>
#include <type_traits>
#include <variant>
#include <vector>

#include "nvml/nvml_backend.h"
#include "nvml/nvml_library.h"

namespace gpuscope::nvml {
namespace {

using model::Answer;
using model::GpuDetails;

// Field ids this file reads that nvml_abi.h does not name (NVML 13, driver 580): the module-scope
// power limits, the power smoothing floors nvidia-smi 580 prints and the PCIe replay rollovers.
enum : unsigned {
  kDdFieldPcieReplayRollovers = 95,
  kDdFieldPowerMinLimit = 187,
  kDdFieldPowerMaxLimit = 188,
  kDdFieldPowerDefaultLimit = 189,
  kDdFieldPowerCurrentLimit = 190,
  kDdFieldPowerRequestedLimit = 192,
  kDdFieldSmoothingFloorsFirst = 275,
};

std::uint64_t dd_field_u64(const nvmlFieldValue_t& f) {
  switch (f.valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return f.value.dVal < 0 ? 0 : static_cast<std::uint64_t>(f.value.dVal);
    case NVML_VALUE_TYPE_UNSIGNED_INT: return f.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return f.value.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return f.value.ullVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return f.value.sllVal < 0 ? 0 : static_cast<std::uint64_t>(f.value.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT: return f.value.siVal < 0 ? 0 : static_cast<std::uint64_t>(f.value.siVal);
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return f.value.usVal;
  }
  return 0;
}

// Signed fields (the T.Limit offsets are negative) keep their sign.
std::int64_t dd_field_i64(const nvmlFieldValue_t& f) {
  switch (f.valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return static_cast<std::int64_t>(f.value.dVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return f.value.sllVal;
    case NVML_VALUE_TYPE_SIGNED_INT: return f.value.siVal;
    default: return static_cast<std::int64_t>(dd_field_u64(f));
  }
}

std::string dd_c_string(const char* buf, std::size_t cap) { return std::string(buf, strnlen(buf, cap)); }

// Records each call's answer into its member; once the GPU answers GPU_IS_LOST (or had no handle to
// begin with) every later member gets GPU_IS_LOST without another call.
class DdReader {
 public:
  explicit DdReader(nvmlDevice_t device) : device_(device), lost_(device == nullptr) {}

  nvmlDevice_t device() const { return device_; }
  bool lost() const { return lost_; }

  // `call(slot, value)` makes the NVML call and returns its code; it runs only when the library has
  // the function and the GPU is not lost.
  template <class T, class Slot, class Call>
  void read(Answer<T>& out, Slot slot, Call&& call) {
    if (lost_) {
      out.error = NVML_ERROR_GPU_IS_LOST;
      return;
    }
    if (slot == nullptr) {
      out.error = NVML_ERROR_FUNCTION_NOT_FOUND;
      return;
    }
    T value{};
    const nvmlReturn_t rc = call(slot, value);
    note(out, rc, std::move(value));
  }

  // The common shape: f(device, U*).
  template <class T, class U>
  void read_one(Answer<T>& out, nvmlReturn_t (*slot)(nvmlDevice_t, U*)) {
    read(out, slot, [this](auto f, T& v) {
      U u{};
      const nvmlReturn_t rc = f(device_, &u);
      v = static_cast<T>(u);
      return rc;
    });
  }

  template <class T>
  void note(Answer<T>& out, nvmlReturn_t rc, T value) {
    if (rc == NVML_SUCCESS) {
      out.value = std::move(value);
      out.error = 0;
      return;
    }
    out.value.reset();
    out.error = static_cast<int>(rc);
    if (rc == NVML_ERROR_GPU_IS_LOST) lost_ = true;
  }

  void mark(nvmlReturn_t rc) {
    if (rc == NVML_ERROR_GPU_IS_LOST) lost_ = true;
  }

 private:
  nvmlDevice_t device_;
  bool lost_;
};

using DdFieldTarget = std::variant<Answer<std::uint32_t>*, Answer<std::uint64_t>*, Answer<std::int64_t>*>;

struct DdFieldRequest {
  unsigned field_id;
  unsigned scope_id;
  DdFieldTarget target;
};

void dd_set_error(const DdFieldTarget& target, int error) {
  std::visit(
      [error](auto* a) {
        a->value.reset();
        a->error = error;
      },
      target);
}

// One nvmlDeviceGetFieldValues call for every field-valued member: each field costs the driver
// little, the call's round trip is most of it. The energy counter (4 ms on a real driver) is never
// among them.
void dd_read_fields(const NvmlLibrary& L, DdReader& r, std::span<const DdFieldRequest> requests) {
  if (r.lost() || L.nvmlDeviceGetFieldValues == nullptr) {
    const int error = r.lost() ? NVML_ERROR_GPU_IS_LOST : NVML_ERROR_FUNCTION_NOT_FOUND;
    for (const auto& q : requests) dd_set_error(q.target, error);
    return;
  }
  std::vector<nvmlFieldValue_t> values(requests.size());
  for (std::size_t k = 0; k < requests.size(); ++k) {
    values[k].fieldId = requests[k].field_id;
    values[k].scopeId = requests[k].scope_id;
  }
  const nvmlReturn_t rc = L.nvmlDeviceGetFieldValues(r.device(), static_cast<int>(values.size()), values.data());
  r.mark(rc);
  for (std::size_t k = 0; k < requests.size(); ++k) {
    const nvmlReturn_t code = rc != NVML_SUCCESS ? rc : values[k].nvmlReturn;
    r.mark(code);
    if (code != NVML_SUCCESS) {
      dd_set_error(requests[k].target, static_cast<int>(code));
      continue;
    }
    const nvmlFieldValue_t& f = values[k];
    std::visit(
        [&f](auto* a) {
          using T = typename decltype(a->value)::value_type;
          if constexpr (std::is_signed_v<T>) {
            a->value = static_cast<T>(dd_field_i64(f));
          } else {
            a->value = static_cast<T>(dd_field_u64(f));
          }
          a->error = 0;
        },
        requests[k].target);
  }
}

void dd_read_dmon(const NvmlLibrary& L, DdReader& r, GpuDetails& x) {
  const auto util = [&r](auto f, std::uint32_t& v) {
    unsigned period_us = 0;
    unsigned u = 0;
    const nvmlReturn_t rc = f(r.device(), &u, &period_us);
    v = u;
    return rc;
  };
  r.read(x.jpg_util, L.nvmlDeviceGetJpgUtilization, util);
  r.read(x.ofa_util, L.nvmlDeviceGetOfaUtilization, util);
  r.read(x.protected_memory, L.nvmlDeviceGetConfComputeProtectedMemoryUsage, [&r](auto f, model::MemoryBytes& v) {
    nvmlMemory_t m{};
    const nvmlReturn_t rc = f(r.device(), &m);
    v = {m.total, m.used, m.free};
    return rc;
  });
}

void dd_read_pci_and_modes(const NvmlLibrary& L, DdReader& r, GpuDetails& x) {
  const nvmlDevice_t d = r.device();
  r.read(x.pci, L.nvmlDeviceGetPciInfo_v3, [d](auto f, model::PciIds& v) {
    nvmlPciInfo_t p{};
    const nvmlReturn_t rc = f(d, &p);
    v = {p.domain, p.bus, p.device, p.pciDeviceId, p.pciSubSystemId};
    return rc;
  });
  r.read_one(x.pcie_gen_current, L.nvmlDeviceGetCurrPcieLinkGeneration);
  r.read_one(x.pcie_gen_max, L.nvmlDeviceGetMaxPcieLinkGeneration);
  r.read_one(x.pcie_gen_gpu_max, L.nvmlDeviceGetGpuMaxPcieLinkGeneration);
  r.read_one(x.pcie_width_current, L.nvmlDeviceGetCurrPcieLinkWidth);
  r.read_one(x.pcie_width_max, L.nvmlDeviceGetMaxPcieLinkWidth);
  r.read_one(x.pcie_speed_mbps, L.nvmlDeviceGetPcieSpeed);
  r.read_one(x.irq, L.nvmlDeviceGetIrqNum);

  r.read_one(x.display_mode, L.nvmlDeviceGetDisplayMode);
  r.read_one(x.display_active, L.nvmlDeviceGetDisplayActive);
  r.read_one(x.persistence_mode, L.nvmlDeviceGetPersistenceMode);
  r.read_one(x.compute_mode, L.nvmlDeviceGetComputeMode);
  r.read_one(x.accounting_mode, L.nvmlDeviceGetAccountingMode);
  r.read_one(x.accounting_buffer_size, L.nvmlDeviceGetAccountingBufferSize);
  r.read_one(x.power_management_mode, L.nvmlDeviceGetPowerManagementMode);
  r.read(x.addressing_mode, L.nvmlDeviceGetAddressingMode, [d](auto f, std::uint32_t& v) {
    nvmlDeviceAddressingMode_t m{};
    m.version = nvmlDeviceAddressingMode_v1;
    const nvmlReturn_t rc = f(d, &m);
    v = m.value;
    return rc;
  });
  const auto pair_int = [d](auto f, model::ModePair& v) {
    int current = 0;
    int other = 0;
    const nvmlReturn_t rc = f(d, &current, &other);
    v = {current, other};
    return rc;
  };
  const auto pair_unsigned = [d](auto f, model::ModePair& v) {
    unsigned current = 0;
    unsigned other = 0;
    const nvmlReturn_t rc = f(d, &current, &other);
    v = {static_cast<int>(current), static_cast<int>(other)};
    return rc;
  };
  r.read(x.driver_model, L.nvmlDeviceGetDriverModel, pair_int);
  r.read(x.gpu_operation_mode, L.nvmlDeviceGetGpuOperationMode, pair_int);
  r.read(x.ecc_mode, L.nvmlDeviceGetEccMode, pair_int);
  r.read_one(x.ecc_default_mode, L.nvmlDeviceGetDefaultEccMode);
  r.read(x.mig_mode, L.nvmlDeviceGetMigMode, pair_unsigned);
  r.read(x.gsp_mode, L.nvmlDeviceGetGspFirmwareMode, pair_unsigned);
  r.read(x.gsp_firmware_version, L.nvmlDeviceGetGspFirmwareVersion, [d](auto f, std::string& v) {
    char buf[NVML_GSP_FIRMWARE_VERSION_BUF_SIZE] = {};
    const nvmlReturn_t rc = f(d, buf);
    v = dd_c_string(buf, sizeof buf);
    return rc;
  });
  r.read_one(x.virtualization_mode, L.nvmlDeviceGetVirtualizationMode);
  r.read_one(x.host_vgpu_mode, L.nvmlDeviceGetHostVgpuMode);
  r.read(x.vgpu_homogeneous_placements, L.nvmlDeviceGetVgpuCapabilities, [d](auto f, std::uint32_t& v) {
    unsigned result = 0;
    const nvmlReturn_t rc = f(d, static_cast<int>(NVML_DEVICE_VGPU_CAP_HOMOGENEOUS_PLACEMENTS), &result);
    v = result;
    return rc;
  });
}

void dd_read_board_and_inforom(const NvmlLibrary& L, DdReader& r, GpuDetails& x) {
  const nvmlDevice_t d = r.device();
  r.read(x.board_part_number, L.nvmlDeviceGetBoardPartNumber, [d](auto f, std::string& v) {
    char buf[NVML_DEVICE_NAME_BUFFER_SIZE] = {};
    const nvmlReturn_t rc = f(d, buf, sizeof buf);
    v = dd_c_string(buf, sizeof buf);
    return rc;
  });
  r.read_one(x.brand, L.nvmlDeviceGetBrand);
  r.read_one(x.board_id, L.nvmlDeviceGetBoardId);
  r.read_one(x.multi_gpu_board, L.nvmlDeviceGetMultiGpuBoard);
  r.read_one(x.module_id, L.nvmlDeviceGetModuleId);
  r.read_one(x.memory_bus_width, L.nvmlDeviceGetMemoryBusWidth);
  r.read_one(x.num_fans, L.nvmlDeviceGetNumFans);
  r.read_one(x.numa_node, L.nvmlDeviceGetNumaNodeId);

  r.read(x.inforom_image, L.nvmlDeviceGetInforomImageVersion, [d](auto f, std::string& v) {
    char buf[NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE] = {};
    const nvmlReturn_t rc = f(d, buf, sizeof buf);
    v = dd_c_string(buf, sizeof buf);
    return rc;
  });
  const auto object = [d](int which) {
    return [d, which](auto f, std::string& v) {
      char buf[NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE] = {};
      const nvmlReturn_t rc = f(d, which, buf, sizeof buf);
      v = dd_c_string(buf, sizeof buf);
      return rc;
    };
  };
  r.read(x.inforom_oem, L.nvmlDeviceGetInforomVersion, object(NVML_INFOROM_OEM));
  r.read(x.inforom_ecc, L.nvmlDeviceGetInforomVersion, object(NVML_INFOROM_ECC));
  r.read(x.inforom_power, L.nvmlDeviceGetInforomVersion, object(NVML_INFOROM_POWER));
  r.read_one(x.inforom_checksum, L.nvmlDeviceGetInforomConfigurationChecksum);
  if (r.lost()) {
    x.inforom_validation = NVML_ERROR_GPU_IS_LOST;
  } else if (L.nvmlDeviceValidateInforom == nullptr) {
    x.inforom_validation = NVML_ERROR_FUNCTION_NOT_FOUND;
  } else {
    const nvmlReturn_t rc = L.nvmlDeviceValidateInforom(d);
    r.mark(rc);
    x.inforom_validation = static_cast<int>(rc);
  }
}

void dd_read_clocks_and_power(const NvmlLibrary& L, DdReader& r, GpuDetails& x) {
  const nvmlDevice_t d = r.device();
  r.read_one(x.clocks_event_reasons_supported, L.nvmlDeviceGetSupportedClocksEventReasons);
  r.read_one(x.clocks_event_reasons_active, L.nvmlDeviceGetCurrentClocksEventReasons);
  const auto clock = [d](int type) {
    return [d, type](auto f, std::uint32_t& v) {
      unsigned mhz = 0;
      const nvmlReturn_t rc = f(d, type, &mhz);
      v = mhz;
      return rc;
    };
  };
  r.read(x.applications_clock_graphics, L.nvmlDeviceGetApplicationsClock, clock(NVML_CLOCK_GRAPHICS));
  r.read(x.applications_clock_memory, L.nvmlDeviceGetApplicationsClock, clock(NVML_CLOCK_MEM));
  r.read(x.default_applications_clock_graphics, L.nvmlDeviceGetDefaultApplicationsClock, clock(NVML_CLOCK_GRAPHICS));
  r.read(x.default_applications_clock_memory, L.nvmlDeviceGetDefaultApplicationsClock, clock(NVML_CLOCK_MEM));
  r.read(x.max_customer_boost_graphics, L.nvmlDeviceGetMaxCustomerBoostClock, clock(NVML_CLOCK_GRAPHICS));
  r.read(x.max_video_clock, L.nvmlDeviceGetMaxClockInfo, clock(NVML_CLOCK_VIDEO));
  r.read(x.bar1, L.nvmlDeviceGetBAR1MemoryInfo, [d](auto f, model::MemoryBytes& v) {
    nvmlBAR1Memory_t m{};
    const nvmlReturn_t rc = f(d, &m);
    v = {m.bar1Total, m.bar1Used, m.bar1Free};
    return rc;
  });

  r.read(x.temperature_margin, L.nvmlDeviceGetMarginTemperature, [d](auto f, int& v) {
    nvmlMarginTemperature_t m{};
    m.version = nvmlMarginTemperature_v1;
    const nvmlReturn_t rc = f(d, &m);
    v = m.marginTemperature;
    return rc;
  });
  r.read_one(x.power_default_limit_mw, L.nvmlDeviceGetPowerManagementDefaultLimit);
  // One call answers both ends of the range.
  Answer<std::pair<std::uint32_t, std::uint32_t>> range;
  r.read(range, L.nvmlDeviceGetPowerManagementLimitConstraints, [d](auto f, std::pair<std::uint32_t, std::uint32_t>& v) {
    unsigned lo = 0;
    unsigned hi = 0;
    const nvmlReturn_t rc = f(d, &lo, &hi);
    v = {lo, hi};
    return rc;
  });
  x.power_min_limit_mw.error = x.power_max_limit_mw.error = range.error;
  if (range.value) {
    x.power_min_limit_mw.value = range.value->first;
    x.power_max_limit_mw.value = range.value->second;
  }
}

void dd_read_ecc(const NvmlLibrary& L, DdReader& r, GpuDetails& x) {
  const nvmlDevice_t d = r.device();
  // nvidia-smi's columns in EccLocation order; device_memory and dram are the same NVML location
  // (NVML_MEMORY_LOCATION_DRAM == DEVICE_MEMORY), asked once.
  constexpr std::array<int, model::kEccLocationCount> kNvmlLocation{
      NVML_MEMORY_LOCATION_DEVICE_MEMORY, NVML_MEMORY_LOCATION_DEVICE_MEMORY, NVML_MEMORY_LOCATION_REGISTER_FILE,
      NVML_MEMORY_LOCATION_TEXTURE_MEMORY, NVML_MEMORY_LOCATION_CBU,           NVML_MEMORY_LOCATION_SRAM};
  for (int uncorrected = 0; uncorrected < 2; ++uncorrected) {
    for (int aggregate = 0; aggregate < 2; ++aggregate) {
      auto& row = x.ecc_errors[uncorrected][aggregate];
      for (std::size_t loc = 0; loc < model::kEccLocationCount; ++loc) {
        if (loc == 1) {
          row[1] = row[0];
          continue;
        }
        r.read(row[loc], L.nvmlDeviceGetMemoryErrorCounter, [&](auto f, std::uint64_t& v) {
          unsigned long long count = 0;
          const nvmlReturn_t rc = f(d, uncorrected, aggregate, kNvmlLocation[loc], &count);
          v = count;
          return rc;
        });
      }
    }
  }
  r.read(x.sram_ecc, L.nvmlDeviceGetSramEccErrorStatus, [d](auto f, model::SramEccStatus& v) {
    nvmlEccSramErrorStatus_t s{};
    s.version = nvmlEccSramErrorStatus_v1;
    const nvmlReturn_t rc = f(d, &s);
    v.volatile_uncorrected_parity = s.volatileUncParity;
    v.volatile_uncorrected_secded = s.volatileUncSecDed;
    v.aggregate_uncorrected_parity = s.aggregateUncParity;
    v.aggregate_uncorrected_secded = s.aggregateUncSecDed;
    v.aggregate_bucket_sm = s.aggregateUncBucketSm;
    v.aggregate_bucket_mcu = s.aggregateUncBucketMcu;
    v.aggregate_bucket_pcie = s.aggregateUncBucketPcie;
    v.aggregate_bucket_other = s.aggregateUncBucketL2 + s.aggregateUncBucketOther;
    v.threshold_exceeded = s.bThresholdExceeded != 0;
    return rc;
  });
  r.read(x.remap_histogram, L.nvmlDeviceGetRowRemapperHistogram, [d](auto f, model::RemapHistogram& v) {
    nvmlRowRemapperHistogramValues_t h{};
    const nvmlReturn_t rc = f(d, &h);
    v = {h.max, h.high, h.partial, h.low, h.none};
    return rc;
  });
  r.read(x.remap_inactive, L.nvmlDeviceGetRemappedRows_v2, [d](auto f, model::RemapInactive& v) {
    nvmlRemappedRowsInfo_v2_t info{};
    const nvmlReturn_t rc = f(d, &info);
    v = {info.corrInactiveRemaps, info.uncInactiveRemaps};
    return rc;
  });
}

void dd_read_fabric_and_platform(const NvmlLibrary& L, DdReader& r, GpuDetails& x) {
  const nvmlDevice_t d = r.device();
  r.read(x.fabric, L.nvmlDeviceGetGpuFabricInfoV, [d](auto f, model::FabricInfo& v) {
    nvmlGpuFabricInfoV_t info{};
    info.version = nvmlGpuFabricInfo_v3;
    const nvmlReturn_t rc = f(d, &info);
    v.state = info.state;
    v.status = static_cast<int>(info.status);
    v.clique_id = info.cliqueId;
    std::memcpy(v.cluster_uuid.data(), info.clusterUuid, v.cluster_uuid.size());
    v.health_mask = info.healthMask;
    v.health_summary = info.healthSummary;
    return rc;
  });
  r.read(x.platform, L.nvmlDeviceGetPlatformInfo, [d](auto f, model::PlatformInfo& v) {
    nvmlPlatformInfo_t info{};
    info.version = nvmlPlatformInfo_v2;
    const nvmlReturn_t rc = f(d, &info);
    v.chassis_serial = dd_c_string(reinterpret_cast<const char*>(info.chassisSerialNumber), sizeof info.chassisSerialNumber);
    v.slot = info.slotNumber;
    v.tray = info.trayIndex;
    v.host_id = info.hostId;
    v.peer_type = info.peerType;
    v.module_id = info.moduleId;
    std::memcpy(v.ib_guid.data(), info.ibGuid, v.ib_guid.size());
    return rc;
  });
  r.read(x.hostname, L.nvmlDeviceGetHostname_v1, [d](auto f, std::string& v) {
    nvmlHostname_v1_t h{};
    const nvmlReturn_t rc = f(d, &h);
    v = dd_c_string(h.value, sizeof h.value);
    return rc;
  });
}

void dd_read_field_values(const NvmlLibrary& L, DdReader& r, GpuDetails& x) {
  std::vector<DdFieldRequest> q;
  q.reserve(64);
  const auto gpu = [&q](unsigned id, DdFieldTarget t) { q.push_back({id, NVML_POWER_SCOPE_GPU, t}); };
  const auto module = [&q](unsigned id, DdFieldTarget t) { q.push_back({id, NVML_POWER_SCOPE_MODULE, t}); };
  gpu(NVML_FI_DEV_POWER_AVERAGE, &x.power_average_mw);
  gpu(NVML_FI_DEV_POWER_INSTANT, &x.power_instant_mw);
  gpu(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, &x.gpu_recovery_action);
  gpu(kDdFieldPcieReplayRollovers, &x.pcie_replay_rollovers);
  for (std::size_t k = 0; k < x.temperature_tlimit.size(); ++k) {
    gpu(NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT + static_cast<unsigned>(k), &x.temperature_tlimit[k]);
  }
  // model::GpuDetails::clocks_event_ns order: sw power cap, sync boost, sw thermal, hw thermal, hw power brake.
  constexpr std::array<unsigned, model::kClockEventCounterCount> kCounterIds{
      NVML_FI_DEV_PERF_POLICY_POWER, NVML_FI_DEV_PERF_POLICY_SYNC_BOOST, NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN,
      NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN, NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN};
  for (std::size_t k = 0; k < kCounterIds.size(); ++k) gpu(kCounterIds[k], &x.clocks_event_ns[k]);
  module(NVML_FI_DEV_POWER_AVERAGE, &x.module_power_average_mw);
  module(NVML_FI_DEV_POWER_INSTANT, &x.module_power_instant_mw);
  module(kDdFieldPowerRequestedLimit, &x.module_power_limit_mw);
  module(kDdFieldPowerCurrentLimit, &x.module_enforced_power_limit_mw);
  module(kDdFieldPowerDefaultLimit, &x.module_power_default_limit_mw);
  module(kDdFieldPowerMinLimit, &x.module_power_min_limit_mw);
  module(kDdFieldPowerMaxLimit, &x.module_power_max_limit_mw);
  for (std::size_t k = 0; k < x.power_smoothing.size(); ++k) {
    gpu(NVML_FI_PWR_SMOOTHING_ENABLED + static_cast<unsigned>(k), &x.power_smoothing[k]);
  }
  for (std::size_t k = 0; k < x.power_smoothing_floors.size(); ++k) {
    gpu(kDdFieldSmoothingFloorsFirst + static_cast<unsigned>(k), &x.power_smoothing_floors[k]);
  }
  dd_read_fields(L, r, q);
}

// nvidia-smi -q's session, class-code, C2C, repair and capability lines: one call each.
void dd_read_sessions_and_repair(const NvmlLibrary& L, DdReader& r, GpuDetails& x) {
  const nvmlDevice_t d = r.device();
  r.read(x.encoder_stats, L.nvmlDeviceGetEncoderStats, [d](auto f, model::SessionStats& v) {
    return f(d, &v.sessions, &v.average_fps, &v.average_latency_us);
  });
  r.read(x.fbc_stats, L.nvmlDeviceGetFBCStats, [d](auto f, model::SessionStats& v) {
    nvmlFBCStats_t st{};
    const nvmlReturn_t rc = f(d, &st);
    v = {st.sessionsCount, st.averageFPS, st.averageLatency};
    return rc;
  });
  r.read(x.pci_class, L.nvmlDeviceGetPciInfoExt, [d](auto f, model::PciClass& v) {
    nvmlPciInfoExt_v1_t p{};
    p.version = nvmlPciInfoExt_v1;
    const nvmlReturn_t rc = f(d, &p);
    v = {p.baseClass, p.subClass};
    return rc;
  });
  r.read(x.c2c_enabled, L.nvmlDeviceGetC2cModeInfoV, [d](auto f, bool& v) {
    nvmlC2cModeInfo_v1_t c{};
    const nvmlReturn_t rc = f(d, &c);
    v = c.isC2cEnabled != 0;
    return rc;
  });
  r.read(x.repair, L.nvmlDeviceGetRepairStatus, [d](auto f, model::RepairStatus& v) {
    nvmlRepairStatus_v1_t st{};
    st.version = nvmlRepairStatus_v1;
    const nvmlReturn_t rc = f(d, &st);
    v = {st.bChannelRepairPending != 0, st.bTpcRepairPending != 0};
    return rc;
  });
  r.read(x.unrepairable_memory, L.nvmlDeviceGetUnrepairableMemoryFlag_v1, [d](auto f, bool& v) {
    nvmlUnrepairableMemoryStatus_v1_t st{};
    const nvmlReturn_t rc = f(d, &st);
    v = st.bUnrepairableMemory != 0;
    return rc;
  });
  r.read(x.pdi, L.nvmlDeviceGetPdi, [d](auto f, std::uint64_t& v) {
    nvmlPdi_v1_t p{};
    p.version = nvmlPdi_v1;
    const nvmlReturn_t rc = f(d, &p);
    v = p.value;
    return rc;
  });
  r.read(x.capabilities, L.nvmlDeviceGetCapabilities, [d](auto f, std::uint32_t& v) {
    nvmlDeviceCapabilities_v1_t caps{};
    caps.version = nvmlDeviceCapabilities_v1;
    const nvmlReturn_t rc = f(d, &caps);
    v = caps.capMask;
    return rc;
  });
}

}  // namespace

model::GpuDetails NvmlBackend::details(std::size_t gpu, DetailSet set) {
  model::GpuDetails x;
  const NvmlLibrary& L = *library_;
  DdReader r(handle(gpu));
  dd_read_dmon(L, r, x);
  if (set == DetailSet::kDmon) return x;
  dd_read_pci_and_modes(L, r, x);
  dd_read_board_and_inforom(L, r, x);
  dd_read_clocks_and_power(L, r, x);
  dd_read_ecc(L, r, x);
  dd_read_field_values(L, r, x);
  dd_read_fabric_and_platform(L, r, x);
  dd_read_sessions_and_repair(L, r, x);
  return x;
}

}  // namespace gpuscope::nvml
