#include "export/nvml_error_text.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "nvml/nvml_abi.h"

namespace gpuscope::exporter {
namespace {

TEST(NvmlErrorText, UsesNvmlsWording) {
  EXPECT_EQ(nvml_error_text(1), "Uninitialized");
  EXPECT_EQ(nvml_error_text(2), "Invalid Argument");
  EXPECT_EQ(nvml_error_text(3), "Not Supported");
  EXPECT_EQ(nvml_error_text(4), "Insufficient Permissions");
  EXPECT_EQ(nvml_error_text(9), "Driver Not Loaded");
  EXPECT_EQ(nvml_error_text(10), "Timeout");
  EXPECT_EQ(nvml_error_text(13), "Function Not Found");
  EXPECT_EQ(nvml_error_text(15), "GPU is lost");
  EXPECT_EQ(nvml_error_text(16), "GPU requires restart");
  // nvidia-smi 580's display_mode on the real H100 (query_gpu_all.tsv, nvidia-smi-q.txt).
  EXPECT_EQ(nvml_error_text(26), "Requested functionality has been deprecated");
  EXPECT_EQ(nvml_error_text(999), "Unknown Error");
}

TEST(NvmlErrorText, UndocumentedCodeNamesTheNumber) { EXPECT_EQ(nvml_error_text(4242), "NVML error 4242"); }

}  // namespace
}  // namespace gpuscope::exporter

namespace gpuscope::exporter {
namespace {

// Our table must say what a driver's nvmlErrorString says; the simulated driver is checked to.
TEST(NvmlErrorText, AgreesWithTheDriversErrorStrings) {
  void* lib = dlopen(GPUSCOPE_SIM_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto error_string = reinterpret_cast<decltype(&::nvmlErrorString)>(dlsym(lib, "nvmlErrorString"));
  ASSERT_NE(error_string, nullptr);
  for (int code = 0; code <= 27; ++code) {
    EXPECT_EQ(nvml_error_text(code), error_string(static_cast<nvmlReturn_t>(code))) << "code " << code;
  }
  EXPECT_EQ(nvml_error_text(999), error_string(NVML_ERROR_UNKNOWN));
  dlclose(lib);
}

}  // namespace
}  // namespace gpuscope::exporter
