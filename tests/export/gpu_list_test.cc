#include "export/gpu_list.h"

#include <gtest/gtest.h>

#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

TEST(GpuList, TextIsNvidiaSmiDashL) {
  std::vector<model::GpuInfo> gpus{testing::h100_info(0), testing::h100_info(1)};
  EXPECT_EQ(gpu_list_text(gpus),
            "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5e5c1a8a-1111-2222-3333-444455556666)\n"
            "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-77777777-1111-2222-3333-444455556666)\n");
}

TEST(GpuList, GpuWithoutIdentityIsStillListed) {
  model::GpuInfo broken;
  broken.index = 3;
  std::vector<model::GpuInfo> gpus{broken};
  EXPECT_EQ(gpu_list_text(gpus), "GPU 3: [Unknown] (UUID: [Unknown])\n");
  EXPECT_EQ(gpu_list_json(gpus).dump(), R"({"gpus":[{"index":3}]})");
}

TEST(GpuList, GpuLostAtDiscoverySaysSo) {
  model::GpuInfo lost;
  lost.index = 1;
  lost.discovery_error = 15;  // NVML_ERROR_GPU_IS_LOST from nvmlDeviceGetHandleByIndex
  std::vector<model::GpuInfo> gpus{testing::h100_info(0), lost};
  EXPECT_EQ(gpu_list_text(gpus),
            "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5e5c1a8a-1111-2222-3333-444455556666)\n"
            "GPU 1: [GPU is lost] (UUID: [GPU is lost])\n");
  EXPECT_EQ(gpu_list_json(std::span(gpus).subspan(1)).dump(),
            R"({"gpus":[{"index":1,"error":"GPU is lost","error_code":15}]})");
}

TEST(GpuList, Json) {
  std::vector<model::GpuInfo> gpus{testing::h100_info(0)};
  EXPECT_EQ(gpu_list_json(gpus).dump(),
            R"({"gpus":[{"index":0,"name":"NVIDIA H100 80GB HBM3",)"
            R"("uuid":"GPU-5e5c1a8a-1111-2222-3333-444455556666","pci_bus_id":"00000000:18:00.0"}]})");
}

}  // namespace
}  // namespace gpuscope::exporter
