// The simulator against the real driver: every answer in shared/reference/real-h100/nvml_answers.json
// (an idle H100 SXM alone in a VM, driver 580.159.04, read through NVIDIA's Python binding) is asked
// of the simulator playing that machine (kRealH100Vm below). Table-driven over the json: an
// entry the table below has no probe for fails, so a new answer in the json gets checked.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

using nlohmann::json;

constexpr double kAnswersAtS = 60.0;  // a minute into the idle scenario: settled, counters running

}  // namespace

// The machine shared/reference/real-h100 was measured on: one H100 80GB HBM3 (SXM) passed through to a
// VM alone (no NVLink, no NVSwitch), driver 580.159.04, idle, nothing holding a context.
extern const char* const kRealH100Vm;
const char* const kRealH100Vm = R"(# the real-h100 reference machine
description: one idle H100 SXM passed through to a VM (the real-h100 reference machine)
seed: 7
node:
  hostname: h100-vm-01
  driver_version: "580.159.04"
  cuda_driver_version: 13000
  virtualization: passthrough
gpus:
  count: 1
  model: NVIDIA H100 80GB HBM3
  overrides:
    - gpu: 0
      nvlink: false
workload:
  profile: idle
)";

namespace {

json answers_load() {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/nvml_answers.json");
  if (!in) return json();
  return json::parse(in);
}

// What one call answered: its return code and, on success, the value shaped as the binding shapes it.
struct Answer {
  nvmlReturn_t ret = NVML_SUCCESS;
  json value;
};

// "nvmlDeviceGetClockInfo(0,)" -> {"nvmlDeviceGetClockInfo", {0}}.
std::pair<std::string, std::vector<int>> answers_split(const std::string& key) {
  const auto open = key.find('(');
  if (open == std::string::npos) return {key, {}};
  std::vector<int> args;
  std::string inner = key.substr(open + 1, key.rfind(')') - open - 1);
  std::smatch m;
  const std::regex number("-?[0-9]+");
  while (std::regex_search(inner, m, number)) {
    args.push_back(std::stoi(m.str()));
    inner = m.suffix();
  }
  return {key.substr(0, open), args};
}

using Call = std::function<Answer(nvmlDevice_t, const std::vector<int>&)>;
// Checks a successful answer against the real value: (real, simulated, the whole json, key).
using Check = std::function<void(const json&, const json&, const json&, const std::string&)>;

struct Probe {
  Call call;
  Check check;
};

// ---- How an answer is compared.
// A static fact: equal.
Check answers_same() {
  return [](const json& real, const json& sim, const json&, const std::string& key) { EXPECT_EQ(sim, real) << key; };
}
// A static struct of which only these members are facts of the board (the rest are the host's).
Check answers_same_members(std::vector<std::string> members) {
  return [members](const json& real, const json& sim, const json&, const std::string& key) {
    for (const std::string& m : members) EXPECT_EQ(sim.at(m), real.at(m)) << key << "." << m;
  };
}
// A reading: within [lo, hi] like the real one.
Check answers_in(double lo, double hi) {
  return [lo, hi](const json& real, const json& sim, const json&, const std::string& key) {
    ASSERT_TRUE(real.is_number()) << key;
    EXPECT_GE(real.get<double>(), lo) << key << ": the range itself does not hold the real value";
    EXPECT_LE(real.get<double>(), hi) << key << ": the range itself does not hold the real value";
    EXPECT_GE(sim.get<double>(), lo) << key;
    EXPECT_LE(sim.get<double>(), hi) << key;
  };
}
// The host's, not the board's (UUID, serial, IRQ, board and module ids): answered, of the same kind.
Check answers_host_specific() {
  return [](const json& real, const json& sim, const json&, const std::string& key) {
    EXPECT_EQ(sim.type(), real.type()) << key;
    if (real.is_string()) {
      EXPECT_EQ(sim.get<std::string>().size(), real.get<std::string>().size()) << key;
    }
  };
}
// A current clock: above zero, at most the real maximum clock of its type.
Check answers_clock() {
  return [](const json&, const json& sim, const json& all, const std::string& key) {
    const std::string max_key = std::regex_replace(key, std::regex("GetClockInfo"), "GetMaxClockInfo");
    EXPECT_GT(sim.get<unsigned>(), 0U) << key;
    EXPECT_LE(sim.get<unsigned>(), all.at(max_key).at("value").get<unsigned>()) << key;
  };
}

// ---- How a function is called and its answer shaped.
template <class T, class F>
Call answers_one(F f) {
  return [f](nvmlDevice_t dev, const std::vector<int>&) {
    T v{};
    Answer a;
    a.ret = f(dev, &v);
    a.value = v;
    return a;
  };
}
template <class T, class F>
Call answers_one_arg(F f) {
  return [f](nvmlDevice_t dev, const std::vector<int>& args) {
    T v{};
    Answer a;
    a.ret = f(dev, args.at(0), &v);
    a.value = v;
    return a;
  };
}
template <class T, class F>
Call answers_pair(F f) {
  return [f](nvmlDevice_t dev, const std::vector<int>&) {
    T x{}, y{};
    Answer a;
    a.ret = f(dev, &x, &y);
    a.value = json::array({x, y});
    return a;
  };
}
template <class F>
Call answers_text(F f) {
  return [f](nvmlDevice_t dev, const std::vector<int>&) {
    char buf[256] = {};
    Answer a;
    a.ret = f(dev, buf, sizeof buf);
    a.value = std::string(buf);
    return a;
  };
}
template <class F>
Call answers_processes(F f) {
  return [f](nvmlDevice_t dev, const std::vector<int>&) {
    nvmlProcessInfo_t infos[16];
    unsigned n = 16;
    Answer a;
    a.ret = f(dev, &n, infos);
    a.value = json::array();
    for (unsigned i = 0; i < n && a.ret == NVML_SUCCESS; ++i) a.value.push_back(infos[i].pid);
    return a;
  };
}
template <class F>
Call answers_node(F f) {
  return [f](nvmlDevice_t, const std::vector<int>&) { return f(); };
}

std::map<std::string, Probe> answers_probes() {
  std::map<std::string, Probe> p;
  p["nvmlDeviceGetName"] = {answers_text(NVML(nvmlDeviceGetName)), answers_same()};
  p["nvmlDeviceGetUUID"] = {answers_text(NVML(nvmlDeviceGetUUID)), answers_host_specific()};
  p["nvmlDeviceGetSerial"] = {answers_text(NVML(nvmlDeviceGetSerial)), answers_host_specific()};
  p["nvmlDeviceGetBoardPartNumber"] = {answers_text(NVML(nvmlDeviceGetBoardPartNumber)), answers_same()};
  p["nvmlDeviceGetVbiosVersion"] = {answers_text(NVML(nvmlDeviceGetVbiosVersion)), answers_same()};
  p["nvmlDeviceGetInforomImageVersion"] = {answers_text(NVML(nvmlDeviceGetInforomImageVersion)), answers_same()};
  p["nvmlDeviceGetMinorNumber"] = {answers_one<unsigned>(NVML(nvmlDeviceGetMinorNumber)), answers_same()};
  p["nvmlDeviceGetIndex"] = {answers_one<unsigned>(NVML(nvmlDeviceGetIndex)), answers_same()};
  p["nvmlDeviceGetPciInfo"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        nvmlPciInfo_t pci{};
        Answer a;
        a.ret = NVML(nvmlDeviceGetPciInfo_v3)(dev, &pci);
        a.value = {{"busIdLegacy", pci.busIdLegacy}, {"domain", pci.domain}, {"bus", pci.bus},
                   {"device", pci.device}, {"pciDeviceId", pci.pciDeviceId},
                   {"pciSubSystemId", pci.pciSubSystemId}, {"busId", pci.busId}};
        return a;
      },
      answers_same_members({"domain", "pciDeviceId", "pciSubSystemId"})};
  p["nvmlDeviceGetArchitecture"] = {answers_one<unsigned>(NVML(nvmlDeviceGetArchitecture)), answers_same()};
  p["nvmlDeviceGetCudaComputeCapability"] = {answers_pair<int>(NVML(nvmlDeviceGetCudaComputeCapability)),
                                             answers_same()};
  p["nvmlDeviceGetNumGpuCores"] = {answers_one<unsigned>(NVML(nvmlDeviceGetNumGpuCores)), answers_same()};
  p["nvmlDeviceGetMemoryBusWidth"] = {answers_one<unsigned>(NVML(nvmlDeviceGetMemoryBusWidth)), answers_same()};
  p["nvmlDeviceGetMemoryInfo"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        nvmlMemory_t m{};
        Answer a;
        a.ret = NVML(nvmlDeviceGetMemoryInfo)(dev, &m);
        a.value = {{"total", m.total}, {"free", m.free}, {"used", m.used}};
        return a;
      },
      [](const json& real, const json& sim, const json&, const std::string& key) {
        EXPECT_EQ(sim.at("total"), real.at("total")) << key;
        EXPECT_EQ(sim.at("free").get<unsigned long long>() + sim.at("used").get<unsigned long long>(),
                  sim.at("total").get<unsigned long long>()) << key;
        // Idle: what is used is the driver's reservation and little more (real: 480 MiB).
        EXPECT_GE(sim.at("used").get<double>(), real.at("used").get<double>()) << key;
        EXPECT_LE(sim.at("used").get<double>(), 2.0 * real.at("used").get<double>()) << key;
      }};
  p["nvmlDeviceGetBAR1MemoryInfo"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        nvmlBAR1Memory_t m{};
        Answer a;
        a.ret = NVML(nvmlDeviceGetBAR1MemoryInfo)(dev, &m);
        a.value = {{"bar1Total", m.bar1Total}, {"bar1Free", m.bar1Free}, {"bar1Used", m.bar1Used}};
        return a;
      },
      answers_same_members({"bar1Total"})};
  p["nvmlDeviceGetUtilizationRates"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        nvmlUtilization_t u{};
        Answer a;
        a.ret = NVML(nvmlDeviceGetUtilizationRates)(dev, &u);
        a.value = {{"gpu", u.gpu}, {"memory", u.memory}};
        return a;
      },
      answers_same()};  // idle on both
  p["nvmlDeviceGetEncoderUtilization"] = {answers_pair<unsigned>(NVML(nvmlDeviceGetEncoderUtilization)),
                                          answers_same()};
  p["nvmlDeviceGetDecoderUtilization"] = {answers_pair<unsigned>(NVML(nvmlDeviceGetDecoderUtilization)),
                                          answers_same()};
  p["nvmlDeviceGetJpgUtilization"] = {answers_pair<unsigned>(NVML(nvmlDeviceGetJpgUtilization)), answers_same()};
  p["nvmlDeviceGetOfaUtilization"] = {answers_pair<unsigned>(NVML(nvmlDeviceGetOfaUtilization)), answers_same()};
  p["nvmlDeviceGetFanSpeed"] = {answers_one<unsigned>(NVML(nvmlDeviceGetFanSpeed)), answers_same()};
  p["nvmlDeviceGetNumFans"] = {answers_one<unsigned>(NVML(nvmlDeviceGetNumFans)), answers_same()};
  // The real H100 reads P0 parked (persistence mode); the simulator parks it in P8: both valid P-states.
  p["nvmlDeviceGetPerformanceState"] = {answers_one<int>(NVML(nvmlDeviceGetPerformanceState)), answers_in(0, 15)};
  p["nvmlDeviceGetPowerState"] = {answers_one<int>(NVML(nvmlDeviceGetPowerState)), answers_in(0, 15)};
  p["nvmlDeviceGetPowerUsage"] = {answers_one<unsigned>(NVML(nvmlDeviceGetPowerUsage)), answers_in(50000, 150000)};
  // Since the driver loaded (real) or the scenario started (simulated): a counter, not a fact.
  p["nvmlDeviceGetTotalEnergyConsumption"] = {
      answers_one<unsigned long long>(NVML(nvmlDeviceGetTotalEnergyConsumption)), answers_in(0, 1e12)};
  p["nvmlDeviceGetPowerManagementLimit"] = {answers_one<unsigned>(NVML(nvmlDeviceGetPowerManagementLimit)),
                                            answers_same()};
  p["nvmlDeviceGetPowerManagementLimitConstraints"] = {
      answers_pair<unsigned>(NVML(nvmlDeviceGetPowerManagementLimitConstraints)), answers_same()};
  p["nvmlDeviceGetPowerManagementDefaultLimit"] = {
      answers_one<unsigned>(NVML(nvmlDeviceGetPowerManagementDefaultLimit)), answers_same()};
  p["nvmlDeviceGetEnforcedPowerLimit"] = {answers_one<unsigned>(NVML(nvmlDeviceGetEnforcedPowerLimit)),
                                          answers_same()};
  p["nvmlDeviceGetPowerManagementMode"] = {answers_one<int>(NVML(nvmlDeviceGetPowerManagementMode)), answers_same()};
  p["nvmlDeviceGetPowerSource"] = {answers_one<unsigned>(NVML(nvmlDeviceGetPowerSource)), answers_same()};
  // Idle and parked on both: GpuIdle alone.
  p["nvmlDeviceGetCurrentClocksEventReasons"] = {
      answers_one<unsigned long long>(NVML(nvmlDeviceGetCurrentClocksEventReasons)), answers_same()};
  p["nvmlDeviceGetCurrentClocksThrottleReasons"] = {
      answers_one<unsigned long long>(NVML(nvmlDeviceGetCurrentClocksThrottleReasons)), answers_same()};
  p["nvmlDeviceGetSupportedClocksEventReasons"] = {
      answers_one<unsigned long long>(NVML(nvmlDeviceGetSupportedClocksEventReasons)), answers_same()};
  p["nvmlDeviceGetComputeMode"] = {answers_one<int>(NVML(nvmlDeviceGetComputeMode)), answers_same()};
  p["nvmlDeviceGetPersistenceMode"] = {answers_one<int>(NVML(nvmlDeviceGetPersistenceMode)), answers_same()};
  p["nvmlDeviceGetMigMode"] = {answers_pair<unsigned>(NVML(nvmlDeviceGetMigMode)), answers_same()};
  p["nvmlDeviceGetDisplayMode"] = {answers_one<int>(NVML(nvmlDeviceGetDisplayMode)), answers_same()};
  p["nvmlDeviceGetDisplayActive"] = {answers_one<int>(NVML(nvmlDeviceGetDisplayActive)), answers_same()};
  p["nvmlDeviceGetAccountingMode"] = {answers_one<int>(NVML(nvmlDeviceGetAccountingMode)), answers_same()};
  p["nvmlDeviceGetAccountingBufferSize"] = {answers_one<unsigned>(NVML(nvmlDeviceGetAccountingBufferSize)),
                                            answers_same()};
  p["nvmlDeviceGetEccMode"] = {answers_pair<int>(NVML(nvmlDeviceGetEccMode)), answers_same()};
  p["nvmlDeviceGetDefaultEccMode"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        int mode = -1;
        Answer a;
        a.ret = NVML(nvmlDeviceGetDefaultEccMode)(dev, &mode);
        a.value = json::array({mode});  // the binding answers a one-element list
        return a;
      },
      answers_same()};
  p["nvmlDeviceGetRetiredPagesPendingStatus"] = {answers_one<int>(NVML(nvmlDeviceGetRetiredPagesPendingStatus)),
                                                 answers_same()};
  p["nvmlDeviceGetRemappedRows"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        unsigned c = 0, u = 0, pending = 0, failed = 0;
        Answer a;
        a.ret = NVML(nvmlDeviceGetRemappedRows)(dev, &c, &u, &pending, &failed);
        a.value = json::array({c, u, pending, failed});
        return a;
      },
      answers_same()};
  p["nvmlDeviceGetRowRemapperHistogram"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        nvmlRowRemapperHistogramValues_t h{};
        Answer a;
        a.ret = NVML(nvmlDeviceGetRowRemapperHistogram)(dev, &h);
        a.value = {{"max", h.max}, {"high", h.high}, {"partial", h.partial}, {"low", h.low}, {"none", h.none}};
        return a;
      },
      answers_same()};
  p["nvmlDeviceGetPcieReplayCounter"] = {answers_one<unsigned>(NVML(nvmlDeviceGetPcieReplayCounter)),
                                         answers_in(0, 1000)};
  // The real link stays at gen 5 parked; the simulator's trains down to gen 1 (ASPM), as older
  // drivers showed: any generation up to the maximum.
  p["nvmlDeviceGetCurrPcieLinkGeneration"] = {answers_one<unsigned>(NVML(nvmlDeviceGetCurrPcieLinkGeneration)),
                                              answers_in(1, 5)};
  p["nvmlDeviceGetMaxPcieLinkGeneration"] = {answers_one<unsigned>(NVML(nvmlDeviceGetMaxPcieLinkGeneration)),
                                             answers_same()};
  p["nvmlDeviceGetGpuMaxPcieLinkGeneration"] = {
      answers_one<unsigned>(NVML(nvmlDeviceGetGpuMaxPcieLinkGeneration)), answers_same()};
  p["nvmlDeviceGetCurrPcieLinkWidth"] = {answers_one<unsigned>(NVML(nvmlDeviceGetCurrPcieLinkWidth)),
                                         answers_same()};
  p["nvmlDeviceGetMaxPcieLinkWidth"] = {answers_one<unsigned>(NVML(nvmlDeviceGetMaxPcieLinkWidth)), answers_same()};
  p["nvmlDeviceGetPcieLinkMaxSpeed"] = {answers_one<unsigned>(NVML(nvmlDeviceGetPcieLinkMaxSpeed)), answers_same()};
  p["nvmlDeviceGetPcieSpeed"] = {answers_one<unsigned>(NVML(nvmlDeviceGetPcieSpeed)), answers_in(2500, 32000)};
  p["nvmlDeviceGetIrqNum"] = {answers_one<unsigned>(NVML(nvmlDeviceGetIrqNum)), answers_host_specific()};
  p["nvmlDeviceGetComputeRunningProcesses"] = {answers_processes(NVML(nvmlDeviceGetComputeRunningProcesses_v3)),
                                               answers_same()};
  p["nvmlDeviceGetGraphicsRunningProcesses"] = {answers_processes(NVML(nvmlDeviceGetGraphicsRunningProcesses_v3)),
                                                answers_same()};
  p["nvmlDeviceGetMPSComputeRunningProcesses"] = {
      answers_processes(NVML(nvmlDeviceGetMPSComputeRunningProcesses_v3)), answers_same()};
  p["nvmlDeviceGetGpuOperationMode"] = {answers_pair<int>(NVML(nvmlDeviceGetGpuOperationMode)), answers_same()};
  p["nvmlDeviceGetSupportedMemoryClocks"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        unsigned clocks[16];
        unsigned n = 16;
        Answer a;
        a.ret = NVML(nvmlDeviceGetSupportedMemoryClocks)(dev, &n, clocks);
        a.value = json::array();
        for (unsigned i = 0; i < n && a.ret == NVML_SUCCESS; ++i) a.value.push_back(clocks[i]);
        return a;
      },
      answers_same()};
  p["nvmlDeviceGetAutoBoostedClocksEnabled"] = {answers_pair<int>(NVML(nvmlDeviceGetAutoBoostedClocksEnabled)),
                                                answers_same()};
  p["nvmlDeviceGetVirtualizationMode"] = {answers_one<int>(NVML(nvmlDeviceGetVirtualizationMode)), answers_same()};
  p["nvmlDeviceGetHostVgpuMode"] = {answers_one<int>(NVML(nvmlDeviceGetHostVgpuMode)), answers_same()};
  p["nvmlDeviceGetBrand"] = {answers_one<int>(NVML(nvmlDeviceGetBrand)), answers_same()};
  p["nvmlDeviceGetDriverModel"] = {answers_pair<int>(NVML(nvmlDeviceGetDriverModel)), answers_same()};
  p["nvmlDeviceGetBoardId"] = {answers_one<unsigned>(NVML(nvmlDeviceGetBoardId)), answers_host_specific()};
  p["nvmlDeviceGetMultiGpuBoard"] = {answers_one<unsigned>(NVML(nvmlDeviceGetMultiGpuBoard)), answers_same()};
  p["nvmlDeviceGetGspFirmwareMode"] = {answers_pair<unsigned>(NVML(nvmlDeviceGetGspFirmwareMode)), answers_same()};
  p["nvmlDeviceGetGspFirmwareVersion"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        char buf[NVML_GSP_FIRMWARE_VERSION_BUF_SIZE] = {};
        Answer a;
        a.ret = NVML(nvmlDeviceGetGspFirmwareVersion)(dev, buf);
        a.value = "b'" + std::string(buf) + "'";  // the binding printed the bytes' repr
        return a;
      },
      answers_same()};
  p["nvmlDeviceGetAdaptiveClockInfoStatus"] = {answers_one<unsigned>(NVML(nvmlDeviceGetAdaptiveClockInfoStatus)),
                                               answers_same()};
  p["nvmlDeviceGetGpcClkVfOffset"] = {answers_one<int>(NVML(nvmlDeviceGetGpcClkVfOffset)), answers_same()};
  p["nvmlDeviceGetMemClkVfOffset"] = {answers_one<int>(NVML(nvmlDeviceGetMemClkVfOffset)), answers_same()};
  p["nvmlDeviceGetClkMonStatus"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        nvmlClkMonStatus_t st{};
        Answer a;
        a.ret = NVML(nvmlDeviceGetClkMonStatus)(dev, &st);
        a.value = {{"bGlobalStatus", st.bGlobalStatus}, {"clkMonListSize", st.clkMonListSize}};
        return a;
      },
      answers_same()};
  p["nvmlDeviceGetModuleId"] = {answers_one<unsigned>(NVML(nvmlDeviceGetModuleId)), answers_in(1, 8)};
  p["nvmlDeviceGetC2cModeInfoV"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        nvmlC2cModeInfo_v1_t c{};
        Answer a;
        a.ret = NVML(nvmlDeviceGetC2cModeInfoV)(dev, &c);
        a.value = {{"isC2cEnabled", c.isC2cEnabled}};
        return a;
      },
      answers_same()};
  p["nvmlDeviceGetDynamicPstatesInfo"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        nvmlGpuDynamicPstatesInfo_t info{};
        Answer a;
        a.ret = NVML(nvmlDeviceGetDynamicPstatesInfo)(dev, &info);
        a.value = {{"flags", info.flags}};
        return a;
      },
      answers_same_members({"flags"})};  // the binding printed the utilization array as an object address
  p["nvmlDeviceGetConfComputeMemSizeInfo"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        nvmlConfComputeMemSizeInfo_t m{};
        Answer a;
        a.ret = NVML(nvmlDeviceGetConfComputeMemSizeInfo)(dev, &m);
        a.value = {{"protectedMemSizeKib", m.protectedMemSizeKib}, {"unprotectedMemSizeKib", m.unprotectedMemSizeKib}};
        return a;
      },
      answers_same()};
  p["nvmlDeviceGetNumaNodeId"] = {answers_one<unsigned>(NVML(nvmlDeviceGetNumaNodeId)), answers_same()};
  p["nvmlGpmQueryDeviceSupport"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        nvmlGpmSupport_t s{.version = NVML_GPM_SUPPORT_VERSION, .isSupportedDevice = 0};
        Answer a;
        a.ret = NVML(nvmlGpmQueryDeviceSupport)(dev, &s);
        a.value = {{"version", s.version}, {"isSupportedDevice", s.isSupportedDevice}};
        return a;
      },
      answers_same()};
  p["nvmlGpmQueryIfStreamingEnabled"] = {answers_one<unsigned>(NVML(nvmlGpmQueryIfStreamingEnabled)), answers_same()};
  p["nvmlDeviceGetCurrentClockFreqs"] = {
      [](nvmlDevice_t dev, const std::vector<int>&) {
        nvmlDeviceCurrentClockFreqs_t f{};
        f.version = nvmlDeviceCurrentClockFreqs_v1;
        Answer a;
        a.ret = NVML(nvmlDeviceGetCurrentClockFreqs)(dev, &f);
        a.value = std::string(f.str);
        return a;
      },
      [](const json& real, const json& sim, const json&, const std::string& key) {
        // The same keys in the same order; the numbers are readings.
        const std::regex digits("[0-9]+");
        EXPECT_EQ(std::regex_replace(sim.get<std::string>(), digits, "N"),
                  std::regex_replace(real.get<std::string>(), digits, "N")) << key;
      }};
  p["nvmlDeviceGetClockInfo"] = {answers_one_arg<unsigned>(NVML(nvmlDeviceGetClockInfo)), answers_clock()};
  p["nvmlDeviceGetMaxClockInfo"] = {answers_one_arg<unsigned>(NVML(nvmlDeviceGetMaxClockInfo)), answers_same()};
  p["nvmlDeviceGetApplicationsClock"] = {answers_one_arg<unsigned>(NVML(nvmlDeviceGetApplicationsClock)),
                                         answers_same()};
  p["nvmlDeviceGetDefaultApplicationsClock"] = {
      answers_one_arg<unsigned>(NVML(nvmlDeviceGetDefaultApplicationsClock)), answers_same()};
  p["nvmlDeviceGetTemperatureThreshold"] = {answers_one_arg<unsigned>(NVML(nvmlDeviceGetTemperatureThreshold)),
                                            answers_same()};
  p["nvmlDeviceGetTemperature"] = {answers_one_arg<unsigned>(NVML(nvmlDeviceGetTemperature)), answers_in(20, 60)};
  p["nvmlDeviceGetTotalEccErrors"] = {
      [](nvmlDevice_t dev, const std::vector<int>& args) {
        unsigned long long n = 0;
        Answer a;
        a.ret = NVML(nvmlDeviceGetTotalEccErrors)(dev, args.at(0), args.at(1), &n);
        a.value = n;
        return a;
      },
      answers_same()};  // no error on either idle GPU
  p["nvmlDeviceGetViolationStatus"] = {
      [](nvmlDevice_t dev, const std::vector<int>& args) {
        nvmlViolationTime_t v{};
        Answer a;
        a.ret = NVML(nvmlDeviceGetViolationStatus)(dev, args.at(0), &v);
        a.value = {{"referenceTime", v.referenceTime}, {"violationTime", v.violationTime}};
        return a;
      },
      [](const json& real, const json& sim, const json&, const std::string& key) {
        // Counters since the driver loaded: the same policies run (idle: low utilization only).
        EXPECT_GT(sim.at("referenceTime").get<unsigned long long>(), 0U) << key;
        EXPECT_EQ(sim.at("violationTime").get<unsigned long long>() > 0,
                  real.at("violationTime").get<unsigned long long>() > 0) << key;
      }};
  p["nvmlDeviceGetRetiredPages"] = {
      [](nvmlDevice_t dev, const std::vector<int>& args) {
        unsigned n = 0;
        Answer a;
        a.ret = NVML(nvmlDeviceGetRetiredPages)(dev, args.at(0), &n, nullptr);
        a.value = n;
        return a;
      },
      answers_same()};
  p["nvmlDeviceGetPcieThroughput"] = {answers_one_arg<unsigned>(NVML(nvmlDeviceGetPcieThroughput)),
                                      answers_in(0, 100000)};
  p["nvmlDeviceGetNvLinkState"] = {answers_one_arg<int>(NVML(nvmlDeviceGetNvLinkState)), answers_same()};
  p["nvmlDeviceGetProcessUtilization"] = {
      [](nvmlDevice_t dev, const std::vector<int>& args) {
        nvmlProcessUtilizationSample_t samples[16];
        unsigned n = 16;
        Answer a;
        a.ret = NVML(nvmlDeviceGetProcessUtilization)(dev, samples, &n, static_cast<unsigned long long>(args.at(0)));
        a.value = n;
        return a;
      },
      answers_same()};
  p["nvmlDeviceGetSamples"] = {
      [](nvmlDevice_t dev, const std::vector<int>& args) {
        nvmlSample_t samples[128];
        unsigned n = 128;
        int type = -1;
        Answer a;
        a.ret = NVML(nvmlDeviceGetSamples)(dev, args.at(0), static_cast<unsigned long long>(args.at(1)), &type, &n,
                                           samples);
        a.value = json::array({type, n});
        return a;
      },
      [](const json& real, const json& sim, const json&, const std::string& key) {
        EXPECT_EQ(sim.at(0), real.at(0)) << key << ": value type";
        EXPECT_GT(sim.at(1).get<unsigned>(), 0U) << key << ": samples";
      }};
  p["nvmlSystemGetDriverVersion"] = {answers_node([] {
                                       char buf[80] = {};
                                       Answer a;
                                       a.ret = NVML(nvmlSystemGetDriverVersion)(buf, sizeof buf);
                                       a.value = std::string(buf);
                                       return a;
                                     }),
                                     answers_same()};
  p["nvmlSystemGetNVMLVersion"] = {answers_node([] {
                                     char buf[80] = {};
                                     Answer a;
                                     a.ret = NVML(nvmlSystemGetNVMLVersion)(buf, sizeof buf);
                                     a.value = std::string(buf);
                                     return a;
                                   }),
                                   answers_same()};
  p["nvmlSystemGetCudaDriverVersion"] = {answers_node([] {
                                           int v = 0;
                                           Answer a;
                                           a.ret = NVML(nvmlSystemGetCudaDriverVersion_v2)(&v);
                                           a.value = v;
                                           return a;
                                         }),
                                         answers_same()};
  return p;
}

class RealH100Answers : public ::testing::Test {
 protected:
  void SetUp() override {
    real_ = answers_load();
    ASSERT_TRUE(real_.is_object()) << "shared/reference/real-h100/nvml_answers.json is missing";
  }
  json real_;
};

TEST_F(RealH100Answers, EveryQueryAnswersLikeTheRealDriver) {
  Session s(kRealH100Vm, kAnswersAtS);
  ASSERT_TRUE(s.ok());
  const nvmlDevice_t dev = s.gpu(0);
  const std::map<std::string, Probe> probes = answers_probes();
  unsigned checked = 0;
  for (const auto& [key, entry] : real_.items()) {
    if (key == "nvmlDeviceGetFieldValues") continue;  // FieldValuesAnswerLikeTheRealDriver
    // The probe script called these without their arguments (TypeError) or its binding lacks them:
    // nothing was measured. Their simulated answers are tested in SimulatorAnswers below.
    if (entry.is_object() && (entry.contains("exception") || entry.contains("missing_in_binding"))) continue;
    const auto [name, args] = answers_split(key);
    const auto probe = probes.find(name);
    if (probe == probes.end()) {
      ADD_FAILURE() << key << ": no probe in nvml_answers_test.cc for this answer of the real driver";
      continue;
    }
    SCOPED_TRACE(key);
    const Answer sim = probe->second.call(dev, args);
    ++checked;
    if (entry.is_object() && entry.contains("error")) {
      EXPECT_EQ(static_cast<int>(sim.ret), entry.at("error").get<int>()) << key;
      continue;
    }
    ASSERT_EQ(sim.ret, NVML_SUCCESS) << key;
    const json& real = entry.is_object() && entry.contains("value") ? entry.at("value") : entry;
    probe->second.check(real, sim.value, real_, key);
  }
  EXPECT_GE(checked, 150U);
}

// Ids whose value is a reading or a counter (power, temperature, energy, violation and PCIe counters):
// the return code and type must match, the value only be plausible.
const std::set<unsigned> kAnswersDynamicFields{74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 94, 169, 173, 174, 175, 176,
                                               177, 178, 179, 180, 181, 182, 183, 185, 186, 191, 197, 198};

json answers_field_value(const nvmlFieldValue_t& f) {
  switch (f.valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return f.value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return f.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return f.value.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return f.value.ullVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return f.value.sllVal;
    // The binding printed signed ints through an unsigned view (-8 as 4294967288).
    case NVML_VALUE_TYPE_SIGNED_INT: return static_cast<unsigned>(f.value.siVal);
    default: return f.value.usVal;
  }
}

TEST_F(RealH100Answers, FieldValuesAnswerLikeTheRealDriver) {
  Session s(kRealH100Vm, kAnswersAtS);
  ASSERT_TRUE(s.ok());
  const nvmlDevice_t dev = s.gpu(0);
  const json& fields = real_.at("nvmlDeviceGetFieldValues");
  std::vector<nvmlFieldValue_t> values;
  for (const auto& [id, entry] : fields.items()) {
    nvmlFieldValue_t f{};
    f.fieldId = static_cast<unsigned>(std::stoul(id));
    values.push_back(f);
  }
  ASSERT_GE(values.size(), 259U);
  ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(dev, static_cast<int>(values.size()), values.data()), NVML_SUCCESS);
  unsigned power_mw = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetPowerUsage)(dev, &power_mw), NVML_SUCCESS);
  for (const nvmlFieldValue_t& f : values) {
    const json& real = fields.at(std::to_string(f.fieldId));
    SCOPED_TRACE("field " + std::to_string(f.fieldId));
    EXPECT_EQ(static_cast<int>(f.nvmlReturn), real.at("ret").get<int>());
    EXPECT_EQ(static_cast<int>(f.valueType), real.at("type").get<int>());
    if (real.at("ret").get<int>() != NVML_SUCCESS || f.nvmlReturn != NVML_SUCCESS) continue;
    const json sim = answers_field_value(f);
    if (!kAnswersDynamicFields.contains(f.fieldId)) {
      EXPECT_EQ(sim, real.at("value"));
    } else {
      EXPECT_GE(sim.get<double>(), 0.0);
    }
  }
  // The power fields are the power reading's (the real ones: 69171 and 69151 mW beside 69171).
  for (const nvmlFieldValue_t& f : values) {
    if (f.fieldId == NVML_FI_DEV_POWER_AVERAGE || f.fieldId == NVML_FI_DEV_POWER_INSTANT) {
      EXPECT_EQ(f.value.uiVal, power_mw) << f.fieldId;
    }
  }
}

}  // namespace
}  // namespace gpuscope::sim::testing
