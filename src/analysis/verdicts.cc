// The verdicts' names and the decision tree that picks one from a segment's statistics.
#include "analysis/verdicts.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analysis/evidence_text.h"

namespace gpuscope::analysis {
namespace {

struct VerdictText {
  Verdict verdict;
  std::string_view id;
  std::string_view title;
};

constexpr VerdictText kVerdicts[] = {
    {Verdict::kIdle, "idle", "idle"},
    {Verdict::kTransferBound, "transfer_bound", "transfer bound"},
    {Verdict::kLaunchBound, "launch_bound", "launch bound / kernels too small"},
    {Verdict::kInputStarved, "input_starved", "starved by the input pipeline"},
    {Verdict::kNoTensorCores, "no_tensor_cores", "no tensor cores"},
    {Verdict::kMemoryBound, "memory_bound", "memory bound"},
    {Verdict::kComputeBound, "compute_bound", "compute bound"},
    {Verdict::kNetworkBound, "network_bound", "waiting on the network"},
    {Verdict::kUnhealthy, "unhealthy", "unhealthy"},
    {Verdict::kUnknown, "unknown", "unknown"},
};

constexpr std::string_view kIdleFix =
    "Nothing runs on it. If memory is still allocated, a finished job or a notebook kept its CUDA context: end "
    "the process (or restart the kernel) so the GPU goes back to the scheduler.";
constexpr std::string_view kTransferFix =
    "Keep data on the GPU between steps; copy from pinned memory (DataLoader pin_memory=True) with "
    "non_blocking=True on a side stream so copies overlap compute; fewer, larger transfers; move "
    "preprocessing onto the GPU.";
constexpr std::string_view kLaunchFix =
    "Fewer, larger kernels: capture the step in a CUDA graph (torch.compile(mode=\"reduce-overhead\")), fuse "
    "element-wise ops (torch.compile), raise the batch size; `gpuscope trace` shows the launch gaps.";
constexpr std::string_view kStarvedCpuFix =
    "The host cannot prepare batches fast enough: more DataLoader workers (num_workers), persistent_workers=True, "
    "a higher prefetch_factor, cheaper decoding and augmentation (or on the GPU, e.g. DALI), cache preprocessed "
    "data. (An inference server here waits for requests: batch them, or share the GPU.)";
constexpr std::string_view kStarvedLoadingFix =
    "Batches stream in over PCIe while the SMs wait: pin_memory=True and non_blocking copies of the next batch "
    "on a side stream while this one computes, smaller input dtypes, or keep the dataset on the GPU if it fits.";
constexpr std::string_view kNoTensorFix =
    "The math runs on the CUDA cores: enable TF32 (torch.backends.cuda.matmul.allow_tf32 = True, "
    "torch.set_float32_matmul_precision(\"high\")) or mixed precision (torch.autocast with bf16/fp16); keep "
    "matrix dimensions multiples of 8.";
constexpr std::string_view kMemoryFix =
    "The kernels wait on device memory: fuse element-wise ops (torch.compile), fused attention "
    "(scaled_dot_product_attention), bf16 activations, avoid needless copies (.contiguous(), .clone()); a larger "
    "batch raises the FLOPs per byte of GEMMs.";
constexpr std::string_view kComputeFix =
    "The GPU does useful math near its limit. Faster means less work (algorithm, FP8), or more GPUs.";
constexpr std::string_view kUnknownFix =
    "Record the profiling fields (DCGM_FI_PROF_*: gpuscope exports them where the GPU supports GPM, Hopper and "
    "later) to tell why the GPU is slow.";

// NVLink traffic that means collectives are running: a tenth of one H100 link direction (450 GB/s)
// and more than a host's PCIe copies ever reach, so it is GPU-to-GPU data, not noise.
constexpr double kCollectiveNvlinkBytes = 45e9;

// Memory an idle GPU holds worth naming: a CUDA context alone takes ~500 MiB; less is the driver's own.
constexpr double kHeldMemoryMiB = 100;

Decision make(Verdict v, std::string summary, std::string_view fix) {
  Decision d;
  d.verdict = v;
  d.summary = std::move(summary);
  d.fix = std::string(fix);
  return d;
}

void add(Decision& d, std::string name, double value, std::string text) {
  d.evidence.push_back({std::move(name), value, std::move(text)});
}

// PCIe's share of the link and its text ("50.8 GB/s, 81 % of the Gen5 x16 link").
std::string pcie_text(double bytes, std::optional<double> link, const Segment& seg) {
  if (!link) return text::rate(bytes);
  const auto gen = seg.last(Signal::kPcieLinkGen);
  const auto width = seg.last(Signal::kPcieLinkWidth);
  std::string what = gen && width ? fmt::format("the Gen{:.0f} x{:.0f} link", *gen, *width) : "the link";
  return fmt::format("{}, {} of {}", text::rate(bytes), text::share(bytes / *link), what);
}

Decision transfer_bound(const Segment& seg, double gr, std::optional<double> util,
                        std::optional<double> rx, std::optional<double> tx, std::optional<double> link) {
  const bool inbound = rx.value_or(0) >= tx.value_or(0);
  const std::string direction = !rx && !tx ? "" : inbound ? "host→device" : "device→host";
  std::string summary = fmt::format("copies, not kernels: GR engine active {}", text::ratio(gr));
  if (util) summary += fmt::format(" while utilization.gpu reads {}", text::percent(*util));
  const auto bytes = inbound ? rx : tx;
  if (bytes) summary += fmt::format(", PCIe {} {}", inbound ? "RX" : "TX", pcie_text(*bytes, link, seg));
  Decision d = make(Verdict::kTransferBound, summary, kTransferFix);
  d.detail = direction;
  add(d, "gr_engine_active", gr, text::ratio(gr));
  if (const auto sm = seg.mean(Signal::kSmActive)) add(d, "sm_active", *sm, text::ratio(*sm));
  if (util) add(d, "utilization_gpu", *util, text::percent(*util));
  if (rx) add(d, "pcie_rx_bytes_per_second", *rx, pcie_text(*rx, link, seg));
  if (tx) add(d, "pcie_tx_bytes_per_second", *tx, pcie_text(*tx, link, seg));
  return d;
}

Decision idle(const Segment& seg, std::optional<double> gr, std::optional<double> util) {
  std::string summary = gr ? fmt::format("no kernels ran (GR engine active {})", text::ratio(*gr))
                           : fmt::format("no kernels ran (utilization.gpu {})", text::percent(util.value_or(0)));
  Decision d = make(Verdict::kIdle, "", kIdleFix);
  if (gr) add(d, "gr_engine_active", *gr, text::ratio(*gr));
  if (util) add(d, "utilization_gpu", *util, text::percent(*util));
  if (const auto used = seg.last(Signal::kFbUsed); used && *used >= kHeldMemoryMiB) {
    summary += fmt::format(", {} still allocated", text::gib(*used));
    add(d, "memory_used_mib", *used, text::gib(*used));
  }
  d.summary = std::move(summary);
  return d;
}

}  // namespace

std::string_view verdict_id(Verdict v) {
  for (const auto& t : kVerdicts) {
    if (t.verdict == v) return t.id;
  }
  return "unknown";
}

std::string_view verdict_title(Verdict v) {
  for (const auto& t : kVerdicts) {
    if (t.verdict == v) return t.title;
  }
  return "unknown";
}

bool is_critical_xid(int xid) {
  // 48 double-bit ECC, 64 row-remap failure, 74 NVLink error, 79 fallen off the bus, 92 high single-bit
  // ECC rate, 95 uncontained ECC error, 119/120 GSP errors, 140 unrecovered ECC: the GPU needs a reset
  // or service. Others (13, 31, 43, 45, 63, 94 ...) are an application's error or already contained.
  switch (xid) {
    case 48: case 64: case 74: case 79: case 92: case 95: case 119: case 120: case 140:
      return true;
    default:
      return false;
  }
}

Decision classify(const Segment& seg, const Thresholds& t) {
  const auto gr = seg.mean(Signal::kGrActive);
  const auto sm = seg.mean(Signal::kSmActive);
  const auto util = seg.mean(Signal::kUtilization);
  const auto tensor = seg.mean(Signal::kTensorActive);
  const auto dram = seg.mean(Signal::kDramActive);
  const auto rx = seg.mean(Signal::kPcieRxBytes);
  const auto tx = seg.mean(Signal::kPcieTxBytes);
  const auto link = seg.link_bytes_per_second();
  const auto fp = seg.float_pipes();

  if (!gr && !sm && !util) {
    return make(Verdict::kUnknown, "no readings of the GPU's activity in the window", kUnknownFix);
  }

  if (gr) {
    if (*gr < t.idle_gr_active) {
      const bool copies = util && *util >= t.transfer_utilization_percent;
      const double pcie = std::max(rx.value_or(0), tx.value_or(0));
      const bool busy_link = link && pcie >= t.transfer_link_share * *link;
      if (copies || busy_link) return transfer_bound(seg, *gr, util, rx, tx, link);
      return idle(seg, gr, util);
    }
    if (dram && *dram >= t.memory_bound_dram_active && (!tensor || *tensor < t.memory_bound_tensor_max)) {
      Decision d = make(Verdict::kMemoryBound,
                        fmt::format("DRAM active {}: the memory interface is busy most cycles{}", text::ratio(*dram),
                                    tensor ? fmt::format(", tensor pipes {}", text::ratio(*tensor)) : ""),
                        kMemoryFix);
      add(d, "dram_active", *dram, text::ratio(*dram));
      if (sm) add(d, "sm_active", *sm, text::ratio(*sm));
      if (tensor) add(d, "tensor_active", *tensor, text::ratio(*tensor));
      if (const auto occ = seg.mean(Signal::kSmOccupancy)) add(d, "sm_occupancy", *occ, text::ratio(*occ));
      return d;
    }
  }

  if (gr && sm) {
    const double fill = *sm / *gr;
    // Few SMs busy while batches stream in over PCIe: the GPU waits on its input, whatever kernels run
    // meanwhile (the waits of a loading-bound job), so the starved branch below says so.
    const bool loading = link && rx && *rx >= t.loading_link_share * *link;
    if (fill < t.launch_bound_fill && !loading) {
      Decision d = make(Verdict::kLaunchBound,
                        fmt::format("kernels ran {} of the time but kept only {} of the SMs busy while they ran "
                                    "(SM active {} vs GR engine active {})",
                                    text::share(*gr), text::share(fill), text::ratio(*sm), text::ratio(*gr)),
                        kLaunchFix);
      add(d, "gr_engine_active", *gr, text::ratio(*gr));
      add(d, "sm_active", *sm, text::ratio(*sm));
      add(d, "sm_fill", fill, text::share(fill));
      if (util) add(d, "utilization_gpu", *util, text::percent(*util));
      // Collectives (NCCL) run on a few SMs while NVLink carries the data: such a job waits on
      // communication, and fewer, larger launches would not help.
      const double nvlink = seg.mean(Signal::kNvlinkRxBytes).value_or(0) + seg.mean(Signal::kNvlinkTxBytes).value_or(0);
      if (nvlink >= kCollectiveNvlinkBytes) {
        d.summary += fmt::format("; NVLink carries {}: if these kernels are collectives (NCCL), the job waits on "
                                 "communication instead",
                                 text::rate(nvlink));
        add(d, "nvlink_bytes_per_second", nvlink, text::rate(nvlink));
      }
      return d;
    }
    const bool sawtooth = seg.sawtooth(t.sawtooth_peak_sm_active, t.sawtooth_low_share);
    if (*gr < t.starved_busy_share || sawtooth || (fill < t.launch_bound_fill && loading)) {
      const std::string side = !rx || !link ? "" : loading ? "data loading over PCIe" : "CPU side";
      std::string summary =
          sawtooth ? fmt::format("SM active swings between {} and {} (a sawtooth): the GPU computes in bursts and "
                                 "waits between them",
                                 text::ratio(seg.stat(Signal::kSmActive)->min),
                                 text::ratio(seg.stat(Signal::kSmActive)->max))
          : *gr >= t.starved_busy_share
              ? fmt::format("the kernels keep only {} of the SMs busy while batches stream in: the GPU waits on its "
                            "input",
                            text::share(fill))
              : fmt::format("kernels ran only {} of the time, and filled {} of the SMs while they ran: the GPU "
                            "waits for the host between them",
                            text::share(*gr), text::share(fill));
      if (!side.empty()) {
        summary += loading ? fmt::format("; PCIe RX {} while it waits (data loading)", pcie_text(*rx, link, seg))
                           : fmt::format("; PCIe RX only {} (the CPU side: preprocessing)", text::rate(*rx));
      }
      Decision d = make(Verdict::kInputStarved, summary, loading ? kStarvedLoadingFix : kStarvedCpuFix);
      d.detail = side;
      add(d, "gr_engine_active", *gr, text::ratio(*gr));
      add(d, "sm_active", *sm, text::ratio(*sm));
      add(d, "sm_fill", fill, text::share(fill));
      if (rx) add(d, "pcie_rx_bytes_per_second", *rx, pcie_text(*rx, link, seg));
      if (const auto p = seg.stat(Signal::kPower)) {
        add(d, "power_watts", p->mean, fmt::format("{} ({} to {})", text::watts(p->mean), text::watts(p->min),
                                                   text::watts(p->max)));
      }
      if (!rx || !link) {
        d.undecided.push_back("input_starved: CPU side or data loading not told apart (PCIe RX or the link's "
                              "generation and width not recorded)");
      }
      return d;
    }
    if (!tensor) {
      Decision d = make(Verdict::kUnknown,
                        fmt::format("the SMs are busy (SM active {}); whether the tensor cores do the work is not "
                                    "recorded",
                                    text::ratio(*sm)),
                        kUnknownFix);
      add(d, "sm_active", *sm, text::ratio(*sm));
      d.undecided.push_back("no_tensor_cores, compute_bound: DCGM_FI_PROF_PIPE_TENSOR_ACTIVE not recorded");
      return d;
    }
    if (*tensor < t.tensor_unused && !fp) {
      // Tensor cores idle, but whether the work is floating-point math they would take is not recorded:
      // integer or gather-heavy kernels read the same. Said, not guessed.
      Decision d = make(Verdict::kUnknown,
                        fmt::format("the SMs are busy (SM active {}) with the tensor pipes at {}; whether the work is "
                                    "floating-point math tensor cores would take is not recorded",
                                    text::ratio(*sm), text::ratio(*tensor)),
                        kUnknownFix);
      add(d, "sm_active", *sm, text::ratio(*sm));
      add(d, "tensor_active", *tensor, text::ratio(*tensor));
      d.undecided.push_back("no_tensor_cores, compute_bound: the FP32/FP16/FP64 pipes "
                            "(DCGM_FI_PROF_PIPE_FP*_ACTIVE) are not recorded");
      return d;
    }
    if (*tensor < t.tensor_unused && *fp >= t.float_pipes_busy) {
      const std::string summary =
          fmt::format("the SMs are busy (SM active {}) with the tensor pipes at {}: the math runs on the "
                      "FP32/FP16/FP64 pipes ({})",
                      text::ratio(*sm), text::ratio(*tensor), text::ratio(*fp));
      Decision d = make(Verdict::kNoTensorCores, summary, kNoTensorFix);
      add(d, "sm_active", *sm, text::ratio(*sm));
      add(d, "tensor_active", *tensor, text::ratio(*tensor));
      for (Signal s : {Signal::kFp32Active, Signal::kFp16Active, Signal::kFp64Active}) {
        if (const auto m = seg.mean(s)) {
          const std::string name = s == Signal::kFp32Active ? "fp32_active" : s == Signal::kFp16Active ? "fp16_active"
                                                                                                        : "fp64_active";
          add(d, name, *m, text::ratio(*m));
        }
      }
      return d;
    }
    std::string summary = fmt::format("the SMs are busy (SM active {}) and the tensor pipes at {}", text::ratio(*sm),
                                      text::ratio(*tensor));
    if (dram) summary += fmt::format(", DRAM {}", text::ratio(*dram));
    if (const auto occ = seg.mean(Signal::kSmOccupancy)) {
      summary += fmt::format("; occupancy {} is no problem while the pipes are this busy", text::ratio(*occ));
    }
    Decision d = make(Verdict::kComputeBound, summary, kComputeFix);
    add(d, "sm_active", *sm, text::ratio(*sm));
    add(d, "tensor_active", *tensor, text::ratio(*tensor));
    if (dram) add(d, "dram_active", *dram, text::ratio(*dram));
    if (const auto occ = seg.mean(Signal::kSmOccupancy)) add(d, "sm_occupancy", *occ, text::ratio(*occ));
    if (fp) add(d, "float_pipes_active", *fp, text::ratio(*fp));
    return d;
  }

  // Without the profiling ratios only utilization.gpu (and memory utilization) speak.
  const std::string missing = gr   ? "DCGM_FI_PROF_SM_ACTIVE not recorded"
                              : sm ? "DCGM_FI_PROF_GR_ENGINE_ACTIVE not recorded"
                                   : "SM and GR engine activity not recorded (no GPM on this GPU, or the profiling "
                                     "fields not collected)";
  std::vector<std::string> undecided;
  for (Verdict v : {Verdict::kTransferBound, Verdict::kLaunchBound, Verdict::kInputStarved, Verdict::kNoTensorCores,
                    Verdict::kComputeBound}) {
    if (gr && v == Verdict::kTransferBound) continue;
    undecided.push_back(fmt::format("{}: {}", verdict_id(v), missing));
  }
  Decision d;
  if (!gr && util && *util < t.idle_utilization_percent) {
    d = idle(seg, std::nullopt, util);
  } else if (const auto mem = seg.mean(Signal::kMemoryUtilization);
             !dram && mem && *mem >= t.memory_bound_memory_utilization_percent) {
    d = make(Verdict::kMemoryBound,
             fmt::format("device memory busy {} of the time (utilization.memory)", text::percent(*mem)), kMemoryFix);
    add(d, "utilization_memory", *mem, text::percent(*mem));
  } else {
    d = make(Verdict::kUnknown,
             gr ? fmt::format("kernels ran {} of the time (GR engine active); how much of the GPU they used is not "
                              "recorded",
                              text::share(*gr))
                : fmt::format("utilization.gpu {} says kernels or copies ran, not how much of the GPU they used",
                              text::percent(util.value_or(0))),
             kUnknownFix);
    if (gr) add(d, "gr_engine_active", *gr, text::ratio(*gr));
  }
  if (util) add(d, "utilization_gpu", *util, text::percent(*util));
  d.undecided = std::move(undecided);
  return d;
}

}  // namespace gpuscope::analysis
