#include "kubernetes/pod_resources_client.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>

#include <fmt/format.h>

namespace gpuscope::kubernetes {
namespace {

std::string pod_resources_exe_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string{} : exe.parent_path().string();
}

}  // namespace

std::string pod_resources_plugin_path() {
  if (const char* env = std::getenv("GPUSCOPE_POD_RESOURCES_LIB"); env != nullptr && *env != '\0') return env;
  const std::string dir = pod_resources_exe_dir();
  if (dir.empty()) return {};
  for (const char* rel : {"/kubernetes/", "/../kubernetes/", "/../lib/gpuscope/"}) {
    std::error_code ec;
    const auto p = std::filesystem::weakly_canonical(dir + rel + kPodResourcesPluginName, ec);
    if (!ec && std::filesystem::exists(p, ec)) return p.string();
  }
  return {};
}

std::expected<MakePodResourcesBackend, std::string> load_pod_resources_plugin() {
  // Once per process, and never unloaded: gRPC keeps threads of its own.
  static const std::expected<MakePodResourcesBackend, std::string> loaded =
      []() -> std::expected<MakePodResourcesBackend, std::string> {
    const std::string path = pod_resources_plugin_path();
    if (path.empty()) {
      return std::unexpected(fmt::format("the pod-resources plugin {} is not installed next to gpuscope "
                                         "(lib/gpuscope/) and GPUSCOPE_POD_RESOURCES_LIB is not set",
                                         kPodResourcesPluginName));
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      return std::unexpected(fmt::format("cannot load {}: {}", path, why != nullptr ? why : "unknown error"));
    }
    auto make = reinterpret_cast<MakePodResourcesBackend>(dlsym(handle, kMakePodResourcesBackendSymbol));
    if (make == nullptr) return std::unexpected(fmt::format("{} lacks {}", path, kMakePodResourcesBackendSymbol));
    return make;
  }();
  return loaded;
}

struct PodResourcesClient::State {
  std::string socket_path;
  std::unique_ptr<PodResourcesBackend> backend;  // set once, by the first list()
  std::string load_error;
  std::mutex mutex;  // guards `cancelled` and the backend's publication against cancel()
  bool cancelled = false;
};

PodResourcesClient::PodResourcesClient(std::string socket_path) : state_(std::make_unique<State>()) {
  state_->socket_path = std::move(socket_path);
}

PodResourcesClient::~PodResourcesClient() = default;

std::expected<std::vector<PodAllocation>, std::string> PodResourcesClient::list(std::chrono::milliseconds deadline) {
  State& s = *state_;
  PodResourcesBackend* backend = nullptr;
  {
    std::lock_guard lock(s.mutex);
    if (s.cancelled) return std::unexpected(std::string(kListCancelled));
    if (!s.backend && s.load_error.empty()) {
      auto make = load_pod_resources_plugin();
      if (make) {
        s.backend.reset((*make)(s.socket_path.c_str()));
      } else {
        s.load_error = make.error();
      }
    }
    if (!s.backend) return std::unexpected(s.load_error);
    backend = s.backend.get();
  }
  auto pods = backend->list(deadline);
  if (!pods) return pods;
  // The kubelet lists every device plugin's devices (CPUs, NICs): the GPUs are ours to keep.
  for (PodAllocation& pod : *pods) {
    for (ContainerAllocation& c : pod.containers) {
      std::erase_if(c.devices, [](const ContainerDevices& d) { return !is_nvidia_gpu_resource(d.resource_name); });
    }
  }
  return pods;
}

void PodResourcesClient::cancel() {
  std::lock_guard lock(state_->mutex);
  state_->cancelled = true;
  if (state_->backend) state_->backend->cancel();
}

}  // namespace gpuscope::kubernetes
