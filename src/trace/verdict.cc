#include "trace/verdict.h"

#include <fmt/format.h>

namespace gpuscope::trace {
namespace {

// Below this idle share the GPU is considered fed; idle causes are not worth a verdict.
constexpr double kIdleWorthExplaining = 0.10;
// A cause that explains at least half of the idle time is "the" cause.
constexpr double kMainCause = 0.50;
// Communication not hidden behind computation, as a share of the device window.
constexpr double kExposedCommunication = 0.15;
// memcpy/memset time as a share of busy time.
constexpr double kMemoryCopyShare = 0.20;

std::string percent(double r) { return fmt::format("{:.1f}%", 100 * r); }

std::string microseconds_or_ms(std::int64_t ns) {
  return ns >= 1'000'000 ? fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6)
                         : fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
}

}  // namespace

std::string verdict_name(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kDataLoadingBound: return "data-loading bound";
    case VerdictKind::kLaunchBound: return "launch bound";
    case VerdictKind::kCommunicationBound: return "communication bound";
    case VerdictKind::kMemoryCopyBound: return "memory-copy bound";
    case VerdictKind::kComputeBound: return "compute bound";
    case VerdictKind::kNoGpuWork: return "no GPU work";
  }
  return "unknown";
}

std::string verdict_key(VerdictKind kind) {
  std::string key = verdict_name(kind);
  for (char& c : key) {
    if (c == ' ' || c == '-') c = '_';
  }
  return key;
}

Verdict decide_verdict(const DeviceReport& d) {
  Verdict v;
  const std::int64_t window = d.window_ns();
  if (window <= 0 || d.busy_ns <= 0) {
    v.kind = VerdictKind::kNoGpuWork;
    v.evidence = "no kernel, memcpy or memset on this device";
    v.fix = "check that the profiler recorded CUDA activity (activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])";
    return v;
  }
  const double idle = ratio(d.idle_ns(), window);
  const double loading = ratio(d.data_loading_idle_ns, d.idle_ns());
  const double host_wait = ratio(d.idle.host_wait_ns, d.idle_ns());
  const std::int64_t exposed_ns = d.communication_union_ns - d.overlap_ns;
  const double exposed = ratio(exposed_ns, window);
  const double memory = ratio(d.memory_ns, d.busy_ns);
  const double short_share = d.launch.kernels > 0 ? static_cast<double>(d.launch.short_kernels) / static_cast<double>(d.launch.kernels) : 0;

  if (idle >= kIdleWorthExplaining && loading >= kMainCause) {
    v.kind = VerdictKind::kDataLoadingBound;
    v.evidence = fmt::format("the GPU is idle {} of the time and {} of that idle time falls inside DataLoader annotations",
                             percent(idle), percent(loading));
    v.fix = "feed the GPU faster: raise DataLoader num_workers, set pin_memory=True, prefetch_factor and "
            "persistent_workers=True, and move decoding/augmentation off the training loop";
  } else if (idle >= kIdleWorthExplaining && host_wait >= kMainCause) {
    v.kind = VerdictKind::kLaunchBound;
    v.evidence = fmt::format(
        "the GPU is idle {} of the time and {} of that is host wait (the CPU had not launched the next kernel); "
        "{} of kernels run under 10 us, mean launch delay {}",
        percent(idle), percent(host_wait), percent(short_share), microseconds_or_ms(d.launch.delay_mean_ns));
    v.fix = "launch less often: capture the step in CUDA graphs (torch.compile(mode=\"reduce-overhead\") or "
            "torch.cuda.graphs), fuse small ops, use a larger batch, and remove host syncs (.item(), .cpu(), print) from the loop";
  } else if (exposed >= kExposedCommunication) {
    v.kind = VerdictKind::kCommunicationBound;
    v.evidence = fmt::format(
        "NCCL kernels run {} of the time and only {} of that overlaps computation: {} of the time is exposed communication",
        percent(ratio(d.communication_union_ns, window)), percent(ratio(d.overlap_ns, d.communication_union_ns)),
        percent(exposed));
    v.fix = "hide or shrink communication: overlap it with compute (DDP bucket_cap_mb, no_sync() with gradient "
            "accumulation, FSDP forward/backward prefetch), send less (bf16 gradients, compression), and check the "
            "interconnect (nvidia-smi topo -m, NCCL_DEBUG=INFO)";
  } else if (memory >= kMemoryCopyShare) {
    v.kind = VerdictKind::kMemoryCopyBound;
    v.evidence = fmt::format("memcpy and memset take {} of the GPU's busy time", percent(memory));
    v.fix = "copy less and asynchronously: keep tensors on the GPU between steps, use pinned host memory "
            "(pin_memory=True) with .to(device, non_blocking=True), and batch small copies";
  } else {
    v.kind = VerdictKind::kComputeBound;
    const std::string top = d.top_kernels.empty() ? std::string()
                                                  : fmt::format("; the top kernel takes {} of kernel time",
                                                                percent(d.top_kernels.front().share));
    v.evidence = fmt::format("the GPU is busy {} of the time{}{}", percent(1 - idle), top,
                             idle >= kIdleWorthExplaining
                                 ? fmt::format(" (idle {}, mostly waiting on syncs or other streams)", percent(idle))
                                 : std::string());
    v.fix = "make the kernels faster: mixed precision (torch.autocast with bf16/fp16), TF32 matmuls, fused or flash "
            "attention, channels_last; then check SM activity and tensor-pipe use with gpuscope dmon";
  }
  return v;
}

}  // namespace gpuscope::trace
