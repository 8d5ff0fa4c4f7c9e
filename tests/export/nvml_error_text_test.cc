#include "export/nvml_error_text.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(nvml_error_text(16), "GPU requires reset");
  EXPECT_EQ(nvml_error_text(999), "Unknown Error");
}

TEST(NvmlErrorText, UndocumentedCodeNamesTheNumber) { EXPECT_EQ(nvml_error_text(4242), "NVML error 4242"); }

}  // namespace
}  // namespace gpuscope::exporter
