// The C ABI the simulator exports: struct layouts and constants against the reference (and, when
// Debian's generated NVML bindings are installed, against those), and the symbol tables of the main
// and the legacy build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every function nvml_abi.h declares, in order.
std::vector<std::string> header_functions() {
  const std::string text = read_file(source_dir() + "/src/nvml/nvml_abi.h");
  const std::regex decl(R"((?:nvmlReturn_t|const char\*)\s+(\w+)\()");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), decl); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

TEST(AbiLayout, StructSizesAndOffsetsMatchTheReference) {
  EXPECT_EQ(sizeof(nvmlMemory_t), 24U);
  EXPECT_EQ(offsetof(nvmlMemory_t, total), 0U);
  EXPECT_EQ(offsetof(nvmlMemory_t, free), 8U);
  EXPECT_EQ(offsetof(nvmlMemory_t, used), 16U);

  EXPECT_EQ(sizeof(nvmlMemory_v2_t), 40U);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, version), 0U);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, total), 8U);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, reserved), 16U);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, free), 24U);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, used), 32U);

  EXPECT_EQ(sizeof(nvmlUtilization_t), 8U);
  EXPECT_EQ(offsetof(nvmlUtilization_t, gpu), 0U);
  EXPECT_EQ(offsetof(nvmlUtilization_t, memory), 4U);

  EXPECT_EQ(sizeof(nvmlProcessInfo_t), 24U);
  EXPECT_EQ(offsetof(nvmlProcessInfo_t, pid), 0U);
  EXPECT_EQ(offsetof(nvmlProcessInfo_t, usedGpuMemory), 8U);
  EXPECT_EQ(offsetof(nvmlProcessInfo_t, gpuInstanceId), 16U);
  EXPECT_EQ(offsetof(nvmlProcessInfo_t, computeInstanceId), 20U);

  EXPECT_EQ(sizeof(nvmlProcessInfo_v1_t), 16U);
  EXPECT_EQ(offsetof(nvmlProcessInfo_v1_t, pid), 0U);
  EXPECT_EQ(offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), 8U);

  EXPECT_EQ(sizeof(nvmlProcessUtilizationSample_t), 32U);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, pid), 0U);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, timeStamp), 8U);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, smUtil), 16U);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, memUtil), 20U);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, encUtil), 24U);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, decUtil), 28U);

  EXPECT_EQ(sizeof(nvmlPciInfo_t), 68U);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, busIdLegacy), 0U);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, domain), 16U);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, bus), 20U);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, device), 24U);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, pciDeviceId), 28U);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, pciSubSystemId), 32U);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, busId), 36U);

  EXPECT_EQ(sizeof(nvmlViolationTime_t), 16U);
  EXPECT_EQ(offsetof(nvmlViolationTime_t, referenceTime), 0U);
  EXPECT_EQ(offsetof(nvmlViolationTime_t, violationTime), 8U);

  EXPECT_EQ(sizeof(nvmlEventData_t), 32U);
  EXPECT_EQ(offsetof(nvmlEventData_t, device), 0U);
  EXPECT_EQ(offsetof(nvmlEventData_t, eventType), 8U);
  EXPECT_EQ(offsetof(nvmlEventData_t, eventData), 16U);
  EXPECT_EQ(offsetof(nvmlEventData_t, gpuInstanceId), 24U);
  EXPECT_EQ(offsetof(nvmlEventData_t, computeInstanceId), 28U);

  EXPECT_EQ(sizeof(nvmlFieldValue_t), 40U);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, fieldId), 0U);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, scopeId), 4U);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, timestamp), 8U);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, latencyUsec), 16U);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, valueType), 24U);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, nvmlReturn), 28U);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, value), 32U);

  EXPECT_EQ(sizeof(nvmlGpmSupport_t), 8U);
  EXPECT_EQ(offsetof(nvmlGpmSupport_t, version), 0U);
  EXPECT_EQ(offsetof(nvmlGpmSupport_t, isSupportedDevice), 4U);

  EXPECT_EQ(sizeof(nvmlGpmMetric_t), 40U);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, metricId), 0U);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, nvmlReturn), 4U);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, value), 8U);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, metricInfo), 16U);

  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, version), 0U);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, numMetrics), 4U);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, sample1), 8U);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, sample2), 16U);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, metrics), 24U);
  EXPECT_EQ(sizeof(nvmlGpmMetricsGet_t), 24U + 40U * NVML_GPM_METRIC_MAX);

  EXPECT_EQ(sizeof(nvmlBAR1Memory_t), 24U);
  EXPECT_EQ(sizeof(nvmlReturn_t), 4U);
}

TEST(AbiLayout, VersionsAndConstantsMatchTheReference) {
  EXPECT_EQ(nvmlMemory_v2, 0x02000028U);
  EXPECT_EQ(NVML_GPM_SUPPORT_VERSION, 1U);
  EXPECT_EQ(NVML_GPM_METRICS_GET_VERSION, 1U);
  EXPECT_EQ(nvmlEventTypeSingleBitEccError, 0x1ULL);
  EXPECT_EQ(nvmlEventTypeDoubleBitEccError, 0x2ULL);
  EXPECT_EQ(nvmlEventTypeXidCriticalError, 0x8ULL);
  EXPECT_EQ(nvmlClocksEventReasonGpuIdle, 0x1ULL);
  EXPECT_EQ(nvmlClocksEventReasonSwPowerCap, 0x4ULL);
  EXPECT_EQ(nvmlClocksThrottleReasonHwSlowdown, 0x8ULL);
  EXPECT_EQ(nvmlClocksEventReasonSyncBoost, 0x10ULL);
  EXPECT_EQ(nvmlClocksEventReasonSwThermalSlowdown, 0x20ULL);
  EXPECT_EQ(nvmlClocksThrottleReasonHwThermalSlowdown, 0x40ULL);
  EXPECT_EQ(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 25);
  EXPECT_EQ(NVML_ERROR_FUNCTION_NOT_FOUND, 13);
  EXPECT_EQ(NVML_ERROR_GPU_IS_LOST, 15);
  EXPECT_EQ(NVML_ERROR_UNKNOWN, 999);
}

// Debian's librust-nvml-wrapper-sys-dev ships bindings generated from NVIDIA's 11.8 header: an
// independent source for the layouts and constants. Skipped where the package is not installed.
constexpr const char* kBindings = "/usr/share/cargo/registry/nvml-wrapper-sys-0.7.0/src/bindings.rs";

class RustBindings {
 public:
  explicit RustBindings(const std::string& text) : text_(text) {}

  std::optional<long long> constant(const std::string& name) const {
    const std::regex re("pub const " + name + R"(: [\w:]+ = (-?\d+);)");
    std::smatch m;
    if (!std::regex_search(text_, m, re)) return std::nullopt;
    return std::stoll(m[1]);
  }

  // C layout of a #[repr(C)] struct: field name -> offset, plus its size.
  struct Layout {
    std::map<std::string, std::size_t> offsets;
    std::size_t size = 0, align = 1;
  };
  std::optional<Layout> layout(const std::string& name) const {
    const std::regex re("pub (struct|union) " + name + R"( \{([^}]*)\})");
    std::smatch m;
    if (!std::regex_search(text_, m, re)) return std::nullopt;
    const bool is_union = m[1] == "union";
    Layout l;
    const std::string body = m[2];
    const std::regex field(R"(pub (\w+): ([^,]+),)");
    for (auto it = std::sregex_iterator(body.begin(), body.end(), field); it != std::sregex_iterator(); ++it) {
      auto [size, align] = type_size(std::string((*it)[2]));
      if (size == 0) return std::nullopt;
      const std::size_t offset = is_union ? 0 : (l.size + align - 1) / align * align;
      l.offsets[(*it)[1]] = offset;
      l.size = is_union ? std::max(l.size, size) : offset + size;
      l.align = std::max(l.align, align);
    }
    l.size = (l.size + l.align - 1) / l.align * l.align;
    return l;
  }

 private:
  std::pair<std::size_t, std::size_t> type_size(std::string type) const {
    static const std::map<std::string, std::size_t> scalars{
        {"raw::c_uint", 4},       {"raw::c_int", 4},     {"raw::c_ulonglong", 8}, {"raw::c_longlong", 8},
        {"raw::c_ulong", 8},      {"f64", 8},            {"u32", 4},              {"nvmlReturn_t", 4},
        {"nvmlValueType_t", 4},   {"nvmlDevice_t", 8},   {"nvmlGpmSample_t", 8},  {"raw::c_char", 1},
        {"raw::c_ushort", 2},     {"*mut raw::c_char", 8}};
    const std::regex array(R"(\[(.+); (\d+)usize\])");
    std::smatch m;
    if (std::regex_match(type, m, array)) {
      auto [size, align] = type_size(m[1]);
      return {size * std::stoul(m[2]), align};
    }
    if (const auto it = scalars.find(type); it != scalars.end()) return {it->second, it->second};
    if (const auto l = layout(type)) return {l->size, l->align};
    const std::regex alias("pub type " + type + R"( = (\w+);)");
    if (std::regex_search(text_, m, alias)) return type_size(m[1]);
    return {0, 1};
  }

  const std::string& text_;
};

TEST(AbiLayout, MatchesDebiansGeneratedBindings) {
  std::ifstream probe(kBindings);
  if (!probe) GTEST_SKIP() << "librust-nvml-wrapper-sys-dev is not installed";
  const std::string text = read_file(kBindings);
  const RustBindings b(text);
  const auto check = [&](const std::string& rust_name, std::size_t size,
                         std::initializer_list<std::pair<const char*, std::size_t>> fields) {
    const auto l = b.layout(rust_name);
    ASSERT_TRUE(l.has_value()) << rust_name;
    EXPECT_EQ(l->size, size) << rust_name;
    for (const auto& [field, offset] : fields) {
      ASSERT_TRUE(l->offsets.contains(field)) << rust_name << "." << field;
      EXPECT_EQ(l->offsets.at(field), offset) << rust_name << "." << field;
    }
  };
#define FIELD(type, f) {#f, offsetof(type, f)}
  check("nvmlMemory_st", sizeof(nvmlMemory_t),
        {FIELD(nvmlMemory_t, total), FIELD(nvmlMemory_t, free), FIELD(nvmlMemory_t, used)});
  check("nvmlMemory_v2_st", sizeof(nvmlMemory_v2_t),
        {FIELD(nvmlMemory_v2_t, version), FIELD(nvmlMemory_v2_t, total), FIELD(nvmlMemory_v2_t, reserved),
         FIELD(nvmlMemory_v2_t, free), FIELD(nvmlMemory_v2_t, used)});
  check("nvmlUtilization_st", sizeof(nvmlUtilization_t),
        {FIELD(nvmlUtilization_t, gpu), FIELD(nvmlUtilization_t, memory)});
  check("nvmlProcessInfo_st", sizeof(nvmlProcessInfo_t),
        {FIELD(nvmlProcessInfo_t, pid), FIELD(nvmlProcessInfo_t, usedGpuMemory),
         FIELD(nvmlProcessInfo_t, gpuInstanceId), FIELD(nvmlProcessInfo_t, computeInstanceId)});
  check("nvmlProcessInfo_v1_st", sizeof(nvmlProcessInfo_v1_t),
        {FIELD(nvmlProcessInfo_v1_t, pid), FIELD(nvmlProcessInfo_v1_t, usedGpuMemory)});
  check("nvmlProcessUtilizationSample_st", sizeof(nvmlProcessUtilizationSample_t),
        {FIELD(nvmlProcessUtilizationSample_t, pid), FIELD(nvmlProcessUtilizationSample_t, timeStamp),
         FIELD(nvmlProcessUtilizationSample_t, smUtil), FIELD(nvmlProcessUtilizationSample_t, memUtil),
         FIELD(nvmlProcessUtilizationSample_t, encUtil), FIELD(nvmlProcessUtilizationSample_t, decUtil)});
  check("nvmlPciInfo_st", sizeof(nvmlPciInfo_t),
        {FIELD(nvmlPciInfo_t, busIdLegacy), FIELD(nvmlPciInfo_t, domain), FIELD(nvmlPciInfo_t, bus),
         FIELD(nvmlPciInfo_t, device), FIELD(nvmlPciInfo_t, pciDeviceId), FIELD(nvmlPciInfo_t, pciSubSystemId),
         FIELD(nvmlPciInfo_t, busId)});
  check("nvmlViolationTime_st", sizeof(nvmlViolationTime_t),
        {FIELD(nvmlViolationTime_t, referenceTime), FIELD(nvmlViolationTime_t, violationTime)});
  check("nvmlEventData_st", sizeof(nvmlEventData_t),
        {FIELD(nvmlEventData_t, device), FIELD(nvmlEventData_t, eventType), FIELD(nvmlEventData_t, eventData),
         FIELD(nvmlEventData_t, gpuInstanceId), FIELD(nvmlEventData_t, computeInstanceId)});
  check("nvmlFieldValue_st", sizeof(nvmlFieldValue_t),
        {FIELD(nvmlFieldValue_t, fieldId), FIELD(nvmlFieldValue_t, scopeId), FIELD(nvmlFieldValue_t, timestamp),
         FIELD(nvmlFieldValue_t, latencyUsec), FIELD(nvmlFieldValue_t, valueType),
         FIELD(nvmlFieldValue_t, nvmlReturn), FIELD(nvmlFieldValue_t, value)});
  check("nvmlGpmSupport_t", sizeof(nvmlGpmSupport_t),
        {FIELD(nvmlGpmSupport_t, version), FIELD(nvmlGpmSupport_t, isSupportedDevice)});
  check("nvmlGpmMetric_t", sizeof(nvmlGpmMetric_t),
        {FIELD(nvmlGpmMetric_t, metricId), FIELD(nvmlGpmMetric_t, nvmlReturn), FIELD(nvmlGpmMetric_t, value),
         FIELD(nvmlGpmMetric_t, metricInfo)});
  // 11.8 has room for 98 metrics; header 13 for 333: only the array length differs.
  check("nvmlGpmMetricsGet_t", 24 + 40 * 98,
        {FIELD(nvmlGpmMetricsGet_t, version), FIELD(nvmlGpmMetricsGet_t, numMetrics),
         FIELD(nvmlGpmMetricsGet_t, sample1), FIELD(nvmlGpmMetricsGet_t, sample2),
         FIELD(nvmlGpmMetricsGet_t, metrics)});
#undef FIELD

  const std::pair<const char*, long long> constants[] = {
      {"nvmlReturn_enum_NVML_ERROR_UNINITIALIZED", NVML_ERROR_UNINITIALIZED},
      {"nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE},
      {"nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED},
      {"nvmlReturn_enum_NVML_ERROR_FUNCTION_NOT_FOUND", NVML_ERROR_FUNCTION_NOT_FOUND},
      {"nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST},
      {"nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH", NVML_ERROR_ARGUMENT_VERSION_MISMATCH},
      {"nvmlReturn_enum_NVML_ERROR_UNKNOWN", NVML_ERROR_UNKNOWN},
      {"nvmlEventTypeSingleBitEccError", static_cast<long long>(nvmlEventTypeSingleBitEccError)},
      {"nvmlEventTypeDoubleBitEccError", static_cast<long long>(nvmlEventTypeDoubleBitEccError)},
      {"nvmlEventTypeXidCriticalError", static_cast<long long>(nvmlEventTypeXidCriticalError)},
      {"nvmlClocksThrottleReasonGpuIdle", static_cast<long long>(nvmlClocksEventReasonGpuIdle)},
      {"nvmlClocksThrottleReasonSwPowerCap", static_cast<long long>(nvmlClocksEventReasonSwPowerCap)},
      {"nvmlClocksThrottleReasonHwSlowdown", static_cast<long long>(nvmlClocksThrottleReasonHwSlowdown)},
      {"nvmlClocksThrottleReasonSwThermalSlowdown", static_cast<long long>(nvmlClocksEventReasonSwThermalSlowdown)},
      {"nvmlClocksThrottleReasonHwThermalSlowdown",
       static_cast<long long>(nvmlClocksThrottleReasonHwThermalSlowdown)},
      {"NVML_FI_DEV_ECC_SBE_VOL_TOTAL", NVML_FI_DEV_ECC_SBE_VOL_TOTAL},
      {"NVML_FI_DEV_MEMORY_TEMP", NVML_FI_DEV_MEMORY_TEMP},
      {"NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION", NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION},
      {"NVML_FI_DEV_PCIE_REPLAY_COUNTER", NVML_FI_DEV_PCIE_REPLAY_COUNTER},
      {"NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX", NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX},
      {"NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX", NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX},
      {"nvmlGpmMetricId_t_NVML_GPM_METRIC_SM_UTIL", NVML_GPM_METRIC_SM_UTIL},
      {"nvmlGpmMetricId_t_NVML_GPM_METRIC_ANY_TENSOR_UTIL", NVML_GPM_METRIC_ANY_TENSOR_UTIL},
      {"nvmlGpmMetricId_t_NVML_GPM_METRIC_DRAM_BW_UTIL", NVML_GPM_METRIC_DRAM_BW_UTIL},
      {"nvmlGpmMetricId_t_NVML_GPM_METRIC_PCIE_RX_PER_SEC", NVML_GPM_METRIC_PCIE_RX_PER_SEC},
      {"nvmlGpmMetricId_t_NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC", NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC},
      {"NVML_GPM_SUPPORT_VERSION", NVML_GPM_SUPPORT_VERSION},
  };
  for (const auto& [name, value] : constants) {
    const auto found = b.constant(name);
    ASSERT_TRUE(found.has_value()) << name;
    EXPECT_EQ(*found, value) << name;
  }
}

TEST(Symbols, EveryHeaderFunctionResolvesInTheMainBuild) {
  const auto functions = header_functions();
  ASSERT_GE(functions.size(), 90U);
  for (const std::string& f : functions) EXPECT_NE(SimLibrary::main().symbol(f.c_str()), nullptr) << f;
}

TEST(Symbols, LegacyBuildLacksExactlyWhatAnOldDriverLacks) {
  const std::set<std::string> expected_missing{
      "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3",
      "nvmlDeviceGetMPSComputeRunningProcesses_v3", "nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc",
      "nvmlGpmSampleFree", "nvmlGpmSampleGet", "nvmlGpmMigSampleGet", "nvmlGpmMetricsGet",
      "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetCurrentClocksEventReasons", "nvmlSystemGetCudaDriverVersion_v2"};
  std::set<std::string> missing;
  for (const std::string& f : header_functions()) {
    if (SimLibrary::legacy().symbol(f.c_str()) == nullptr) missing.insert(f);
  }
  EXPECT_EQ(missing, expected_missing);
}

// The dynamic symbol table of a built library, from binutils' nm.
std::optional<std::set<std::string>> exported_symbols(const char* path) {
  const std::string cmd = std::string("nm -D --defined-only '") + path + "' 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::set<std::string> out;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    std::istringstream in(line);
    std::string addr, kind, name;
    if (in >> addr >> kind >> name) out.insert(name);
  }
  if (pclose(pipe) != 0 || out.empty()) return std::nullopt;
  return out;
}

TEST(Symbols, ExportsNothingButTheHeadersFunctions) {
  const auto exported = exported_symbols(GPUSCOPE_SIM_LIB);
  if (!exported) GTEST_SKIP() << "nm (binutils) not available";
  const auto functions = header_functions();
  const std::set<std::string> expected(functions.begin(), functions.end());
  EXPECT_EQ(*exported, expected);
  const auto legacy = exported_symbols(GPUSCOPE_SIM_LEGACY_LIB);
  ASSERT_TRUE(legacy.has_value());
  for (const std::string& s : *legacy) EXPECT_TRUE(expected.contains(s)) << s;
}

TEST(Symbols, FaultsCanNameEveryExportedFunction) {
  std::string yaml = "gpus: {count: 1, model: NVIDIA H100 80GB HBM3}\nfaults:\n";
  for (const std::string& f : header_functions()) {
    yaml += "  - {type: error, function: " + f + ", error: NVML_ERROR_UNKNOWN, at: 100h}\n";
  }
  Session s(yaml);
  EXPECT_EQ(s.init_result(), NVML_SUCCESS) << NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN);
}

}  // namespace
}  // namespace gpuscope::sim::testing
