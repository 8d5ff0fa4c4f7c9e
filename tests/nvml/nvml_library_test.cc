#include "nvml/nvml_library.h"

#include <gtest/gtest.h>

#include <map>

#include "nvml/nvml_backend.h"

namespace gpuscope::nvml {
namespace {

std::map<std::string, std::string> resolved_map(const NvmlLibrary& lib) {
  return {lib.resolved().begin(), lib.resolved().end()};
}

TEST(NvmlLibrary, MissingLibraryNamesWhatWasSearchedAndSuggestsSimulate) {
  auto lib = NvmlLibrary::open({"/nonexistent/libnvidia-ml.so.1", "libnvidia-ml-not-here.so"});
  ASSERT_FALSE(lib.has_value());
  EXPECT_EQ(lib.error().kind, BackendErrorKind::kLibraryNotFound);
  EXPECT_NE(lib.error().message.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
  EXPECT_NE(lib.error().message.find("libnvidia-ml-not-here.so"), std::string::npos);
  EXPECT_NE(lib.error().message.find("--simulate"), std::string::npos);
  EXPECT_EQ(lib.error().message.find('\n'), std::string::npos) << "one line";
}

// GPUSCOPE_NVML_LIB=/nowhere said "NVML library not found ...; is the NVIDIA driver installed?": the
// fix is the variable, so the error names it.
TEST(NvmlLibrary, ALibraryNamedOnPurposeNamesWhatNamedIt) {
  auto lib = NvmlLibrary::open({"/nonexistent/libnvidia-ml.so.1"}, "GPUSCOPE_NVML_LIB");
  ASSERT_FALSE(lib.has_value());
  EXPECT_EQ(lib.error().kind, BackendErrorKind::kLibraryNotFound);
  EXPECT_EQ(lib.error().message,
            "cannot load the NVML library named by GPUSCOPE_NVML_LIB (/nonexistent/libnvidia-ml.so.1: cannot open "
            "shared object file: No such file or directory); fix the path, or use --simulate to run on a simulated "
            "GPU node");
}

TEST(NvmlLibrary, ALibraryThatIsNotNvmlIsRejected) {
  auto lib = NvmlLibrary::open({"libm.so.6"});
  ASSERT_FALSE(lib.has_value());
  EXPECT_EQ(lib.error().kind, BackendErrorKind::kSymbolMissing);
}

TEST(NvmlLibrary, CurrentDriverResolvesTheNewestNames) {
  auto lib = NvmlLibrary::open({GPUSCOPE_SIM_LIB});
  ASSERT_TRUE(lib.has_value()) << lib.error().message;
  auto names = resolved_map(**lib);
  EXPECT_EQ(names["nvmlInit_v2"], "nvmlInit_v2");
  EXPECT_EQ(names["nvmlDeviceGetComputeRunningProcesses_v3"], "nvmlDeviceGetComputeRunningProcesses_v3");
  EXPECT_EQ(names["nvmlDeviceGetCurrentClocksEventReasons"], "nvmlDeviceGetCurrentClocksEventReasons");
  EXPECT_EQ(names["nvmlGpmMetricsGet"], "nvmlGpmMetricsGet");
  EXPECT_TRUE((*lib)->is_simulator());
  EXPECT_NE((*lib)->path().find("libnvidia-ml.so"), std::string::npos);
}

TEST(NvmlLibrary, OldDriverFallsBackToOlderNames) {
  auto lib = NvmlLibrary::open({GPUSCOPE_SIM_LEGACY_LIB});
  ASSERT_TRUE(lib.has_value()) << lib.error().message;
  auto names = resolved_map(**lib);
  EXPECT_EQ(names["nvmlDeviceGetComputeRunningProcesses_v3"], "");
  EXPECT_EQ(names["nvmlDeviceGetComputeRunningProcesses_v2"], "nvmlDeviceGetComputeRunningProcesses_v2");
  EXPECT_EQ(names["nvmlDeviceGetCurrentClocksEventReasons"], "nvmlDeviceGetCurrentClocksThrottleReasons");
  EXPECT_EQ(names["nvmlSystemGetCudaDriverVersion_v2"], "nvmlSystemGetCudaDriverVersion");
  EXPECT_EQ(names["nvmlGpmMetricsGet"], "");
  EXPECT_EQ((*lib)->nvmlGpmMetricsGet, nullptr);
  EXPECT_EQ((*lib)->nvmlDeviceGetMemoryInfo_v2, nullptr);
  EXPECT_NE((*lib)->nvmlDeviceGetMemoryInfo, nullptr);
}

}  // namespace
}  // namespace gpuscope::nvml
