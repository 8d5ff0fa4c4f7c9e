#include "kubernetes/pod_resources_client.h"

#include <mutex>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

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
    case grpc::StatusCode::CANCELLED: return std::string(kListCancelled);
    case grpc::StatusCode::UNIMPLEMENTED: return "the kubelet has no v1 pod-resources List (Kubernetes 1.20 or newer)";
    default: return fmt::format("gRPC code {}: {}", static_cast<int>(status.error_code()), status.error_message());
  }
}

}  // namespace

struct PodResourcesClient::State {
  std::string socket_path;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;
  std::mutex mutex;  // guards `active` and `cancelled` against cancel() on another thread
  grpc::ClientContext* active = nullptr;
  bool cancelled = false;
};

PodResourcesClient::PodResourcesClient(std::string socket_path) : state_(std::make_unique<State>()) {
  state_->socket_path = std::move(socket_path);
}

PodResourcesClient::~PodResourcesClient() = default;

std::expected<std::vector<PodAllocation>, std::string> PodResourcesClient::list(std::chrono::milliseconds deadline) {
  State& s = *state_;
  if (!s.stub) {
    s.channel = make_pod_resources_channel(s.socket_path);
    s.stub = v1::PodResourcesLister::NewStub(s.channel);
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  {
    std::lock_guard lock(s.mutex);
    if (s.cancelled) return std::unexpected(std::string(kListCancelled));
    s.active = &context;
  }
  v1::ListPodResourcesRequest request;
  v1::ListPodResourcesResponse response;
  const grpc::Status status = s.stub->List(&context, request, &response);
  {
    std::lock_guard lock(s.mutex);
    s.active = nullptr;
  }
  if (!status.ok()) {
    s.stub.reset();
    s.channel.reset();
    return std::unexpected(status_text(status));
  }
  std::vector<PodAllocation> pods;
  pods.reserve(static_cast<std::size_t>(response.pod_resources_size()));
  for (const auto& p : response.pod_resources()) {
    PodAllocation pod{p.name(), p.namespace_(), {}};
    for (const auto& c : p.containers()) {
      ContainerAllocation container{c.name(), {}};
      for (const auto& d : c.devices()) {
        if (!is_nvidia_gpu_resource(d.resource_name())) continue;  // CPUs, NICs: not ours to keep
        container.devices.push_back({d.resource_name(), {d.device_ids().begin(), d.device_ids().end()}});
      }
      pod.containers.push_back(std::move(container));
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

void PodResourcesClient::cancel() {
  std::lock_guard lock(state_->mutex);
  state_->cancelled = true;
  if (state_->active != nullptr) state_->active->TryCancel();
}

}  // namespace gpuscope::kubernetes
