#include "analysis/findings.h"

#include <fmt/format.h>

#include "analysis/evidence_text.h"

namespace gpuscope::analysis {
namespace {

bool working(Verdict v) { return v != Verdict::kIdle && v != Verdict::kUnknown && v != Verdict::kUnhealthy; }

void clocks_evidence(const Segment& seg, Finding& f) {
  const auto clock = seg.mean(Signal::kSmClock);
  const auto max = seg.last(Signal::kMaxSmClock);
  if (clock) {
    f.evidence.push_back({"sm_clock_mhz", *clock,
                          max ? fmt::format("{} of {}", text::mhz(*clock), text::mhz(*max)) : text::mhz(*clock)});
  }
}

std::optional<Finding> power_capped(const Segment& seg, const Thresholds& t) {
  const auto share = seg.throttle_share(kThrottleSwPowerCap | kThrottleHwPowerBrake);
  const auto power = seg.mean(Signal::kPower);
  const auto limit = seg.last(Signal::kPowerLimit);
  const bool at_limit = power && limit && *limit > 0 && *power >= t.power_cap_share * *limit;
  if (!(share && *share >= t.throttle_share) && !at_limit) return std::nullopt;
  Finding f;
  f.id = "power_capped";
  if (at_limit) {
    f.summary = fmt::format("power-capped: {} against a {} limit", text::watts(*power), text::watts(*limit));
    if (share) f.summary += fmt::format(", power-cap throttling in {} of the readings", text::share(*share));
  } else {
    // The reason is on while the mean is far below the limit: bursts run into the cap between waits.
    f.summary = fmt::format("power-capped in bursts: power-cap throttling in {} of the readings", text::share(*share));
    if (power && limit) {
      f.summary += fmt::format(" while the mean power is {} of a {} limit", text::watts(*power), text::watts(*limit));
    }
  }
  if (const auto clock = seg.mean(Signal::kSmClock)) {
    f.summary += fmt::format("; SM clock {}", text::mhz(*clock));
    if (const auto max = seg.last(Signal::kMaxSmClock)) f.summary += fmt::format(" of {}", text::mhz(*max));
  }
  if (power) f.evidence.push_back({"power_watts", *power, text::watts(*power)});
  if (limit) f.evidence.push_back({"power_limit_watts", *limit, text::watts(*limit)});
  if (share) f.evidence.push_back({"power_cap_share", *share, text::share(*share)});
  clocks_evidence(seg, f);
  f.fix = "Expected of dense math at full speed: the board trades clock for power. A higher limit (nvidia-smi -pl, "
          "where the board allows) buys some speed; otherwise nothing is wrong.";
  return f;
}

std::optional<Finding> thermal(const Segment& seg, const Thresholds& t) {
  const auto share = seg.throttle_share(kThrottleSwThermal | kThrottleHwThermal);
  if (!share || *share < t.throttle_share) return std::nullopt;
  Finding f;
  f.id = "thermal_slowdown";
  f.summary = fmt::format("thermal slowdown in {} of the readings", text::share(*share));
  const auto temp = seg.mean(Signal::kGpuTemp);
  const auto mem = seg.mean(Signal::kMemoryTemp);
  const auto slowdown = seg.last(Signal::kSlowdownTemp);
  if (temp) f.summary += fmt::format(", GPU at {}", text::celsius(*temp));
  if (mem) f.summary += fmt::format(", memory at {}", text::celsius(*mem));
  if (slowdown) f.summary += fmt::format(" (slowdown from {})", text::celsius(*slowdown));
  f.evidence.push_back({"thermal_throttle_share", *share, text::share(*share)});
  if (temp) f.evidence.push_back({"gpu_temp_celsius", *temp, text::celsius(*temp)});
  if (mem) f.evidence.push_back({"memory_temp_celsius", *mem, text::celsius(*mem)});
  clocks_evidence(seg, f);
  f.fix = "Check the cooling: airflow and fans, inlet temperature, blocked or failed neighbours in the chassis.";
  return f;
}

// NVML's "hardware slowdown" halves the clocks or more for heat, an external power brake or a power
// spike; with the thermal reasons off, it is the board or its power, not the cooling.
std::optional<Finding> hardware_slowdown(const Segment& seg, const Thresholds& t) {
  const auto share = seg.throttle_share(kThrottleHwSlowdown);
  if (!share || *share < t.throttle_share) return std::nullopt;
  if (const auto thermal_share = seg.throttle_share(kThrottleSwThermal | kThrottleHwThermal);
      thermal_share && *thermal_share >= t.throttle_share) {
    return std::nullopt;  // the thermal finding says it
  }
  Finding f;
  f.id = "hardware_slowdown";
  f.summary = fmt::format("hardware slowdown in {} of the readings", text::share(*share));
  if (const auto clock = seg.mean(Signal::kSmClock)) {
    f.summary += fmt::format(": SM clock {}", text::mhz(*clock));
    if (const auto max = seg.last(Signal::kMaxSmClock)) f.summary += fmt::format(" of {}", text::mhz(*max));
  }
  if (const auto temp = seg.mean(Signal::kGpuTemp)) {
    f.summary += fmt::format(" at {}", text::celsius(*temp));
    if (const auto slowdown = seg.last(Signal::kSlowdownTemp); slowdown && *temp < *slowdown) {
      f.summary += fmt::format(", below the {} thermal slowdown: not the cooling", text::celsius(*slowdown));
    }
  }
  f.evidence.push_back({"hw_slowdown_share", *share, text::share(*share)});
  clocks_evidence(seg, f);
  f.fix = "The board cuts its clocks on an external power brake or a power spike: check its power supply and "
          "cables, the chassis' power-brake signal, and nvidia-smi -q's clocks event reasons; a board that keeps "
          "doing it is due for service.";
  return f;
}

std::optional<Finding> memory_full(const Segment& seg, const Thresholds& t) {
  const auto used = seg.last(Signal::kFbUsed);
  const auto free = seg.last(Signal::kFbFree);
  if (!used || !free) return std::nullopt;
  const double total = *used + *free + seg.last(Signal::kFbReserved).value_or(0);
  if (total <= 0 || *used / total < t.memory_full_share) return std::nullopt;
  return Finding{"memory_nearly_full",
                 fmt::format("memory nearly full: {} of {} used", text::gib(*used), text::gib(total)),
                 {{"memory_used_mib", *used, text::gib(*used)}, {"memory_free_mib", *free, text::gib(*free)}},
                 "The next allocation may fail (CUDA out of memory): smaller batch or activation checkpointing, or "
                 "find what grows (a leak: memory that rises step after step)."};
}

std::optional<Finding> utilization_lies(const Segment& seg, const Thresholds& t) {
  const auto util = seg.mean(Signal::kUtilization);
  const auto sm = seg.mean(Signal::kSmActive);
  if (!util || !sm || *util - 100 * *sm < t.utilization_lie_points) return std::nullopt;
  return Finding{"utilization_lies",
                 fmt::format("utilization lies: utilization.gpu {} but SM active {}; \"utilization\" only says "
                             "something ran, not how much of the GPU it used",
                             text::percent(*util), text::ratio(*sm)),
                 {{"utilization_gpu", *util, text::percent(*util)}, {"sm_active", *sm, text::ratio(*sm)}},
                 "Judge the GPU by SM active (DCGM_FI_PROF_SM_ACTIVE), not utilization.gpu."};
}

std::optional<Finding> slow_transfers(const Segment& seg, Verdict v, const Thresholds& t) {
  if (v != Verdict::kTransferBound) return std::nullopt;
  const auto link = seg.link_bytes_per_second();
  const auto rx = seg.mean(Signal::kPcieRxBytes);
  const auto tx = seg.mean(Signal::kPcieTxBytes);
  if (!link || (!rx && !tx)) return std::nullopt;
  const double bytes = std::max(rx.value_or(0), tx.value_or(0));
  if (bytes >= t.transfer_link_share * *link) return std::nullopt;
  return Finding{"slow_transfers",
                 fmt::format("copies reach only {} of the link's {}: pageable (not pinned) host memory or many small "
                             "copies",
                             text::rate(bytes), text::rate(*link)),
                 {{"pcie_bytes_per_second", bytes, text::rate(bytes)}, {"link_bytes_per_second", *link, text::rate(*link)}},
                 "Copy from pinned memory (pin_memory=True, tensor.pin_memory()) in larger pieces."};
}

std::optional<Finding> link_degraded(const Segment& seg, Verdict v) {
  if (v != Verdict::kTransferBound && v != Verdict::kInputStarved) return std::nullopt;
  const auto gen = seg.last(Signal::kPcieLinkGen);
  const auto width = seg.last(Signal::kPcieLinkWidth);
  const auto gen_max = seg.last(Signal::kPcieLinkGenMax);
  const auto width_max = seg.last(Signal::kPcieLinkWidthMax);
  if (!gen || !width || !gen_max || !width_max) return std::nullopt;
  if (*gen >= *gen_max && *width >= *width_max) return std::nullopt;
  return Finding{"pcie_link_degraded",
                 fmt::format("the PCIe link runs at Gen{:.0f} x{:.0f}, below its Gen{:.0f} x{:.0f}: transfers get "
                             "a fraction of the bandwidth",
                             *gen, *width, *gen_max, *width_max),
                 {{"pcie_link_gen", *gen, fmt::format("{:.0f}", *gen)},
                  {"pcie_link_width", *width, fmt::format("x{:.0f}", *width)}},
                 "Reseat the card or its riser, check the slot and BIOS settings; a link that trains down under load "
                 "is failing."};
}

std::optional<Finding> row_remap_pending(const Segment& seg) {
  const auto pending = seg.last(Signal::kRowRemapPending);
  if (!pending || *pending <= 0) return std::nullopt;
  return Finding{"row_remap_pending", "a memory row remap is pending: it takes effect at the next GPU reset",
                 {{"row_remap_pending", *pending, "yes"}},
                 "Reset the GPU (nvidia-smi -r) when the job ends."};
}

std::optional<Finding> correctable_errors(const Segment& window) {
  const auto sbe = window.stat(Signal::kEccSbeVolatile);
  if (!sbe || sbe->last <= sbe->first) return std::nullopt;
  const double rise = sbe->last - sbe->first;
  return Finding{"ecc_correctable_rising",
                 fmt::format("{:.0f} correctable ECC errors in the window: memory is wearing", rise),
                 {{"ecc_sbe_increase", rise, fmt::format("{:.0f}", rise)}},
                 "Watch the rate; a GPU whose correctable errors keep rising is due for service."};
}

}  // namespace

std::vector<Finding> findings(const Segment& segment, const Segment& window, Verdict verdict, const Thresholds& t) {
  std::vector<Finding> out;
  auto keep = [&](std::optional<Finding> f) {
    if (f) out.push_back(std::move(*f));
  };
  if (working(verdict)) {
    keep(power_capped(segment, t));
    keep(thermal(segment, t));
    keep(hardware_slowdown(segment, t));
  }
  keep(memory_full(segment, t));
  keep(utilization_lies(segment, t));
  keep(slow_transfers(segment, verdict, t));
  keep(link_degraded(segment, verdict));
  keep(row_remap_pending(window));
  keep(correctable_errors(window));
  return out;
}

}  // namespace gpuscope::analysis
