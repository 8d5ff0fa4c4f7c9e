#include "fake_kubelet.h"

#include <filesystem>
#include <stdexcept>

#include <grpcpp/grpcpp.h>

#include "src/kubernetes/pod_resources.grpc.pb.h"

namespace gpuscope::kubernetes_test {

struct FakeKubelet::Service final : v1::PodResourcesLister::Service {
  FakeKubelet* owner = nullptr;
  std::unique_ptr<grpc::Server> server;

  grpc::Status List(grpc::ServerContext* context, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    std::unique_lock lock(owner->mutex_);
    ++owner->started_;
    owner->changed_.notify_all();
    owner->changed_.wait(lock, [&] { return !owner->hung_ || context->IsCancelled(); });
    for (const auto& pod : owner->pods_) {
      auto* p = response->add_pod_resources();
      p->set_name(pod.name);
      p->set_namespace_(pod.namespace_name);
      for (const auto& container : pod.containers) {
        auto* c = p->add_containers();
        c->set_name(container.name);
        for (const auto& devices : container.devices) {
          auto* d = c->add_devices();
          d->set_resource_name(devices.resource_name);
          for (const auto& id : devices.device_ids) d->add_device_ids(id);
        }
      }
    }
    ++owner->answered_;
    owner->changed_.notify_all();
    return grpc::Status::OK;
  }
};

FakeKubelet::FakeKubelet(std::string socket_path) : socket_path_(std::move(socket_path)) { start(); }

FakeKubelet::~FakeKubelet() { stop(); }

void FakeKubelet::start() {
  if (service_) return;
  auto service = std::make_unique<Service>();
  service->owner = this;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
  builder.RegisterService(service.get());
  service->server = builder.BuildAndStart();
  if (!service->server) throw std::runtime_error("fake kubelet: cannot serve on " + socket_path_);
  service_ = std::move(service);
}

void FakeKubelet::stop() {
  if (!service_) return;
  release();
  // A hung handler wakes on release(); a waiting client is cut at once.
  service_->server->Shutdown(std::chrono::system_clock::now());
  service_->server->Wait();
  service_.reset();
  std::error_code ignored;
  std::filesystem::remove(socket_path_, ignored);  // as a kubelet that is gone leaves no listener
}

void FakeKubelet::set_pods(std::vector<kubernetes::PodAllocation> pods) {
  std::lock_guard lock(mutex_);
  pods_ = std::move(pods);
}

void FakeKubelet::hang() {
  std::lock_guard lock(mutex_);
  hung_ = true;
}

void FakeKubelet::release() {
  {
    std::lock_guard lock(mutex_);
    hung_ = false;
  }
  changed_.notify_all();
}

int FakeKubelet::lists_started() const {
  std::lock_guard lock(mutex_);
  return started_;
}

int FakeKubelet::lists_answered() const {
  std::lock_guard lock(mutex_);
  return answered_;
}

bool FakeKubelet::wait_for_lists_started(int n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return started_ >= n; });
}

kubernetes::PodAllocation gpu_pod(std::string name, std::string namespace_name, std::string container,
                                  std::vector<std::string> device_ids, std::string resource) {
  kubernetes::PodAllocation pod;
  pod.name = std::move(name);
  pod.namespace_name = std::move(namespace_name);
  pod.containers.push_back({std::move(container), {{std::move(resource), std::move(device_ids)}}});
  return pod;
}

}  // namespace gpuscope::kubernetes_test
