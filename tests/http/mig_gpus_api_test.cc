// /api/v1/gpus on a node with a GPU in MIG mode: the reading's MIG mode, each MIG device with its
// identity, the values it has of its own and its container, and each process's GPU instance; a GPU not
// in MIG mode as before.
#include <gtest/gtest.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "export/sample_mig_gpus.h"
#include "http/agent_routes.h"

namespace gpuscope::http {
namespace {

using namespace std::chrono_literals;

// GPU 0 in MIG mode (a 3g.40gb in ml/trainer-0 with a process, an idle 1g.10gb), GPU 1 not.
model::Snapshot mig_api_snapshot() {
  model::Snapshot s;
  s.time = testing::sample_time();
  s.gpus = {testing::h100_mig_sample(0), testing::h100_sample(1)};
  model::ProcessSample p;
  p.pid = 4242;
  p.identity.name = "python3";
  p.used_memory_bytes = 1ULL << 30;
  p.gpu_instance_id = 1;
  p.compute_instance_id = 0;
  s.gpus[0].processes = {p};
  s.gpus[0].mig_instances[0].kubernetes_shared = true;
  return s;
}

struct MigApiRoutes {
  sampler::Sampler sampler{mig_api_snapshot, 100ms};
  AgentRoutes routes{sampler, {testing::h100_mig_info(0), testing::h100_info(1)}, testing::sample_system(), {}, "9.9.9"};

  nlohmann::json gpus() {
    sampler.start();
    EXPECT_NE(sampler.wait_for(1, 2s), nullptr);
    auto r = routes.handle(HttpRequest("GET", "/api/v1/gpus"));
    EXPECT_EQ(r.status, 200);
    return nlohmann::json::parse(std::string(r.content()));
  }
};

TEST(MigGpusApi, AMigGpuListsItsMigDevicesWithTheirOwnValuesAndContainer) {
  MigApiRoutes r;
  const auto j = r.gpus();
  ASSERT_EQ(j["gpus"].size(), 2u);
  const auto& g0 = j["gpus"][0];
  EXPECT_EQ(g0["mig_enabled"], true);
  ASSERT_EQ(g0["mig_instances"].size(), 2u) << g0.dump();
  const auto& a = g0["mig_instances"][0];
  const auto want_a = testing::mig_3g(0);
  EXPECT_EQ(a["device_index"], want_a.device_index);
  EXPECT_EQ(a["gpu_instance_id"], want_a.gpu_instance_id);
  EXPECT_EQ(a["compute_instance_id"], want_a.compute_instance_id);
  EXPECT_EQ(a["profile"], want_a.profile);
  EXPECT_EQ(a["uuid"], want_a.uuid);
  EXPECT_EQ(a["sm_count"], *want_a.sm_count);
  EXPECT_EQ(a["slices"], *want_a.gpu_instance_slices);
  // Exactly the instance's valid fields, under the keys the GPU's values use.
  std::size_t valid = 0;
  for (const auto& f : model::FieldCatalog::all()) {
    if (!want_a[f.id].valid()) {
      EXPECT_FALSE(a["values"].contains(std::string(f.key))) << f.key;
      continue;
    }
    ++valid;
    EXPECT_EQ(a["values"][std::string(f.key)].get<double>(), want_a[f.id].value) << f.key;
  }
  EXPECT_EQ(a["values"].size(), valid);
  EXPECT_GT(valid, 8u);
  EXPECT_EQ(a["pod"], "trainer-0");
  EXPECT_EQ(a["namespace"], "ml");
  EXPECT_EQ(a["container"], "pytorch");
  EXPECT_EQ(a["kubernetes_shared"], true);
  // The idle 1g.10gb: memory only (no GPM ratio yet), no container.
  const auto& b = g0["mig_instances"][1];
  EXPECT_EQ(b["gpu_instance_id"], 13);
  EXPECT_EQ(b["values"]["fb_free_mib"], 9728);
  EXPECT_FALSE(b["values"].contains("sm_active_ratio"));
  EXPECT_FALSE(b.contains("pod"));
  EXPECT_FALSE(b.contains("kubernetes_shared"));
  // The process names its GPU and compute instance.
  ASSERT_EQ(g0["processes"].size(), 1u);
  EXPECT_EQ(g0["processes"][0]["gpu_instance_id"], 1);
  EXPECT_EQ(g0["processes"][0]["compute_instance_id"], 0);
  // GPU 1: MIG-capable, not in MIG mode: no instances.
  EXPECT_EQ(j["gpus"][1]["mig_enabled"], false);
  EXPECT_FALSE(j["gpus"][1].contains("mig_instances"));
}

TEST(MigGpusApi, TheModeIsTheReadingsNotDiscoverys) {
  // Discovery saw GPU 0 out of MIG mode; the reading has it in MIG mode with its instances.
  sampler::Sampler sampler{mig_api_snapshot, 100ms};
  AgentRoutes routes{sampler, {testing::h100_info(0), testing::h100_info(1)}, testing::sample_system(), {}, "9.9.9"};
  sampler.start();
  ASSERT_NE(sampler.wait_for(1, 2s), nullptr);
  const auto r = routes.handle(HttpRequest("GET", "/api/v1/gpus"));
  const auto j = nlohmann::json::parse(std::string(r.content()));
  EXPECT_EQ(j["gpus"][0]["mig_enabled"], true);
  EXPECT_EQ(j["gpus"][0]["mig_instances"].size(), 2u);
}

}  // namespace
}  // namespace gpuscope::http
