// The pod-resources plugin (libgpuscope_pod_resources.so): the kubelet's List over gRPC. The only code that
// sees gRPC; the agent loads it through pod_resources_backend.h when --kubernetes is given.
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include "kubernetes/pod_resources_backend.h"
#include "src/kubernetes/pod_resources.grpc.pb.h"  // generated (build/generated/kubernetes)

namespace gpuscope::kubernetes {
namespace {

// gRPC's own reconnect backoff grows to 2 minutes; a channel that failed is made anew at the next refresh
// instead, so a kubelet back from a restart is seen at the next refresh, not minutes later.
std::shared_ptr<grpc::Channel> make_pod_resources_channel(const std::string& socket_path) {
  grpc::ChannelArguments args;
  // What the kubelet's own pod-resources client allows (podresources.DefaultMaxMsgSize, 16 MiB), not gRPC's 4 MiB: a
  // node with hundreds of pods must not fail on size alone.
  args.SetMaxReceiveMessageSize(16 * 1024 * 1024);
  return grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), args);
}

std::string status_text(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "deadline exceeded (kubelet slow or hung)";
    case grpc::StatusCode::UNAVAILABLE: return fmt::format("unavailable (kubelet gone?): {}", status.error_message());
    case grpc::StatusCode::CANCELLED: return "cancelled";  // kListCancelled
    case grpc::StatusCode::UNIMPLEMENTED: return "the kubelet has no v1 pod-resources List (Kubernetes 1.20 or newer)";
    default: return fmt::format("gRPC code {}: {}", static_cast<int>(status.error_code()), status.error_message());
  }
}

class GrpcPodResources final : public PodResourcesBackend {
 public:
  explicit GrpcPodResources(std::string socket_path) : socket_path_(std::move(socket_path)) {}

  std::expected<std::vector<PodAllocation>, std::string> list(std::chrono::milliseconds deadline) override {
    if (!stub_) {
      channel_ = make_pod_resources_channel(socket_path_);
      stub_ = v1::PodResourcesLister::NewStub(channel_);
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    {
      std::lock_guard lock(mutex_);
      if (cancelled_) return std::unexpected(std::string("cancelled"));
      active_ = &context;
    }
    v1::ListPodResourcesRequest request;
    v1::ListPodResourcesResponse response;
    const grpc::Status status = stub_->List(&context, request, &response);
    {
      std::lock_guard lock(mutex_);
      active_ = nullptr;
    }
    if (!status.ok()) {
      stub_.reset();
      channel_.reset();
      return std::unexpected(status_text(status));
    }
    std::vector<PodAllocation> pods;
    pods.reserve(static_cast<std::size_t>(response.pod_resources_size()));
    for (const auto& p : response.pod_resources()) {
      PodAllocation pod{p.name(), p.namespace_(), {}};
      for (const auto& c : p.containers()) {
        ContainerAllocation container{c.name(), {}};
        for (const auto& d : c.devices()) {
          container.devices.push_back({d.resource_name(), {d.device_ids().begin(), d.device_ids().end()}});
        }
        pod.containers.push_back(std::move(container));
      }
      pods.push_back(std::move(pod));
    }
    return pods;
  }

  void cancel() override {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    if (active_ != nullptr) active_->TryCancel();
  }

 private:
  std::string socket_path_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub_;
  std::mutex mutex_;  // guards `active_` and `cancelled_` against cancel() on another thread
  grpc::ClientContext* active_ = nullptr;
  bool cancelled_ = false;
};

}  // namespace
}  // namespace gpuscope::kubernetes

extern "C" __attribute__((visibility("default"))) gpuscope::kubernetes::PodResourcesBackend*
gpuscope_make_pod_resources_backend(const char* socket_path) {
  return new gpuscope::kubernetes::GrpcPodResources(socket_path);
}
