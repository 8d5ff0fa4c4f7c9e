// A stand-in kubelet for the tests: a gRPC server of the pod-resources v1 List on a Unix socket, built from
// the same generated code the agent's client uses. The test sets what List answers, can make it hang (the
// handler blocks until released), and can stop it and start a new one on the same socket (a kubelet restart).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kubernetes/pod_allocation.h"

namespace gpuscope::kubernetes_test {

class FakeKubelet {
 public:
  // Serves on `socket_path` at once (the test fails when it cannot).
  explicit FakeKubelet(std::string socket_path);
  ~FakeKubelet();  // release() and stop()
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  void set_pods(std::vector<kubernetes::PodAllocation> pods);
  // From now on each List blocks in the handler until release().
  void hang();
  void release();
  // List calls that reached the handler, and those that returned an answer.
  int lists_started() const;
  int lists_answered() const;
  // Waits (real time, bounded by `timeout`) until `n` calls have reached the handler.
  bool wait_for_lists_started(int n, std::chrono::milliseconds timeout) const;

  // Stops serving (calls in flight are released first), and starts again on the same socket.
  void stop();
  void start();

 private:
  struct Service;
  std::string socket_path_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<kubernetes::PodAllocation> pods_;
  bool hung_ = false;
  int started_ = 0;
  int answered_ = 0;
  std::unique_ptr<Service> service_;
};

// One pod with one container holding `device_ids` of `resource`.
kubernetes::PodAllocation gpu_pod(std::string name, std::string namespace_name, std::string container,
                                  std::vector<std::string> device_ids, std::string resource = "nvidia.com/gpu");

}  // namespace gpuscope::kubernetes_test
