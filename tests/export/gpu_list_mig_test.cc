// `gpuscope list` on a GPU in MIG mode: nvidia-smi -L's indented MIG device lines.
#include <gtest/gtest.h>

#include "export/gpu_list.h"
#include "export/sample_mig_gpus.h"

namespace gpuscope::exporter {
namespace {

TEST(GpuListMig, MigDevicesAreIndentedUnderTheirGpuWithNvidiaSmisSpacing) {
  std::vector<model::GpuInfo> gpus{testing::h100_mig_info(0), testing::h100_info(1)};
  auto plus_me = testing::mig_1g(2);
  plus_me.profile = "1g.10gb+me";
  std::vector<std::vector<model::MigInstanceSample>> migs{{testing::mig_3g(0), testing::mig_1g(1), plus_me}, {}};
  // Spacing as nvidia-smi prints it: "3g.40gb" then 5 spaces, "1g.10gb+me" then 2; the index in 2 columns.
  EXPECT_EQ(gpu_list_text(gpus, migs),
            "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5e5c1a8a-1111-2222-3333-444455556666)\n"
            "  MIG 3g.40gb     Device  0: (UUID: MIG-11111111-aaaa-5bbb-8ccc-000000000001)\n"
            "  MIG 1g.10gb     Device  1: (UUID: MIG-22222222-aaaa-5bbb-8ccc-000000000002)\n"
            "  MIG 1g.10gb+me  Device  2: (UUID: MIG-22222222-aaaa-5bbb-8ccc-000000000002)\n"
            "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-77777777-1111-2222-3333-444455556666)\n");
}

TEST(GpuListMig, ALongProfileKeepsASpaceSoTheUuidIsStillTheSixthWord) {
  std::vector<model::GpuInfo> gpus{testing::h100_mig_info(0)};
  auto m = testing::mig_3g(0);
  m.profile = "1c.3g.40gb+gfx";
  std::vector<std::vector<model::MigInstanceSample>> migs{{m}};
  EXPECT_EQ(gpu_list_text(gpus, migs).substr(gpu_list_text(gpus).size()),
            "  MIG 1c.3g.40gb+gfx Device  0: (UUID: MIG-11111111-aaaa-5bbb-8ccc-000000000001)\n");
}

TEST(GpuListMig, FewerMigListsThanGpusLeavesTheRestPlain) {
  std::vector<model::GpuInfo> gpus{testing::h100_info(0), testing::h100_info(1)};
  std::vector<std::vector<model::MigInstanceSample>> migs{{}};
  EXPECT_EQ(gpu_list_text(gpus, migs), gpu_list_text(gpus));
}

TEST(GpuListMig, JsonListsMigDevicesWithTheirIds) {
  std::vector<model::GpuInfo> gpus{testing::h100_mig_info(0)};
  std::vector<std::vector<model::MigInstanceSample>> migs{{testing::mig_3g(0), testing::mig_1g(1)}};
  EXPECT_EQ(gpu_list_json(gpus, migs).dump(),
            R"({"gpus":[{"index":0,"name":"NVIDIA H100 80GB HBM3",)"
            R"("uuid":"GPU-5e5c1a8a-1111-2222-3333-444455556666","pci_bus_id":"00000000:18:00.0",)"
            R"("mig_devices":[{"index":0,"profile":"3g.40gb","uuid":"MIG-11111111-aaaa-5bbb-8ccc-000000000001",)"
            R"("gpu_instance_id":1,"compute_instance_id":0},)"
            R"({"index":1,"profile":"1g.10gb","uuid":"MIG-22222222-aaaa-5bbb-8ccc-000000000002",)"
            R"("gpu_instance_id":13,"compute_instance_id":0}]}]})");
}

}  // namespace
}  // namespace gpuscope::exporter
