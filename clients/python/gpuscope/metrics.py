"""log_gpu_metrics(tracker, step): the GPU's figures in an experiment tracker, one call per epoch.

What is logged (numbers, except the verdict):

- `gpu/memory_allocated_mb`, `gpu/memory_reserved_mb`: PyTorch's caching allocator on the current
  device, in MiB (bytes / 1024², the `torch.cuda.memory_allocated() / 1024**2` idiom the keys have
  always meant);
- `gpu/utilization_percent`, `gpu/temperature_celsius`: NVML's reading of that GPU at the call;
- with an agent, per GPU the process uses, the time-weighted mean, min and max over the span since the
  previous call (the first call: since the process started) of utilization_percent, sm_active,
  tensor_active (ratios 0-1), memory_used_mib, power_watts and temperature_celsius, as
  `gpu0/sm_active_mean`, `gpu0/sm_active_min`, ...; a quantity the GPU does not report is left out;
- `gpu0/verdict`: the agent's diagnosis of the span ("compute_bound", "input_starved", ...), as text,
  to trackers that take text (W&B, TensorBoard's add_text); others get the numbers only.

`gpuN` is the process's CUDA device number (cuda:N), or the agent's GPU index for a process without
torch. Without CUDA (no torch, a CPU build, a process that has not touched its GPU) and without an
agent that knows the pid, nothing is logged and nothing is raised.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from . import _torch_state
from ._agent_http import AgentHttp
from ._devices import ProcessGpu, process_gpus
from ._nvml import nvml
from ._trackers import sinks_for

MIB = 1024 * 1024
SUMMARY_QUANTITIES = ("utilization_percent", "sm_active", "tensor_active", "memory_used_mib", "power_watts",
                      "temperature_celsius")
SUMMARY_STATISTICS = ("mean", "min", "max")
MAX_SUMMARY_SPAN_S = 86400.0  # the agent summarises at most a day (kMaxSummarySpan): a longer span is cut to its last day

_IMPORTED_AT = time.time()


def process_start_time() -> float:
    """When this process started (Unix seconds), from /proc; when gpuscope was imported elsewhere."""
    try:
        with open("/proc/self/stat") as stat_file:
            stat = stat_file.read()
        start_ticks = int(stat[stat.rindex(")") + 2:].split()[19])  # field 22, starttime
        with open("/proc/stat") as system_stat:
            boot = next(int(line.split()[1]) for line in system_stat if line.startswith("btime "))
        return boot + start_ticks / os.sysconf("SC_CLK_TCK")
    except Exception:
        return _IMPORTED_AT


class GpuMetricsLogger:
    """Remembers where the previous span ended; `log_gpu_metrics` uses one per process."""

    def __init__(self, url: Optional[str] = None, gpus: Optional[List[int]] = None) -> None:
        self._agent = AgentHttp(url)
        self._ordinals = gpus  # None: the current CUDA device
        self._span_start: Optional[float] = None
        self._lock = threading.Lock()

    def log(self, tracker: Any, step: int) -> Dict[str, Any]:
        """Logs the figures to `tracker` (or to each of a list of trackers) at `step` and returns them.
        Raises TypeError for something that is not a tracker; what the tracker itself raises is its own;
        reading the GPU raises nothing."""
        sinks = sinks_for(tracker)
        numbers, texts = self.collect()
        if numbers or texts:
            for sink in sinks:
                sink.log(numbers, texts, step)
        return {**numbers, **texts}

    def collect(self) -> Tuple[Dict[str, float], Dict[str, str]]:
        """The figures since the previous call, and moves the span on. Never raises."""
        with self._lock:
            end = time.time()
            start = self._span_start if self._span_start is not None else process_start_time()
            self._span_start = end
        numbers: Dict[str, float] = {}
        texts: Dict[str, str] = {}
        try:
            state = _torch_state.cuda_state()
            if state in (_torch_state.CPU_ONLY, _torch_state.CUDA_UNUSED):
                return numbers, texts  # a process that uses no GPU has nothing to say about one
            gpus = process_gpus(self._ordinals) if state == _torch_state.CUDA_IN_USE else []
            if gpus:
                numbers.update(_current_device_figures(gpus[0]))
            _add_summary(numbers, texts, self._summary(start, end, gpus), gpus)
        except Exception:
            pass
        return numbers, texts

    def _summary(self, start: float, end: float, gpus: List[ProcessGpu]) -> Optional[dict]:
        if not self._agent.available() or end <= start:
            return None
        start = max(start, end - MAX_SUMMARY_SPAN_S)
        params: List[Tuple[str, Any]] = [("start", f"{start:.3f}"), ("end", f"{end:.3f}")]
        params += [("gpu", gpu.uuid) for gpu in gpus if gpu.uuid]
        params.append(("pid", os.getpid()))
        return self._agent.get("/api/v1/summary", params)


def _current_device_figures(gpu: ProcessGpu) -> Dict[str, float]:
    figures: Dict[str, float] = {}
    allocator = _torch_state.allocator_bytes(gpu.ordinal)
    if allocator:
        figures["gpu/memory_allocated_mb"] = allocator["allocated_bytes"] / MIB
        figures["gpu/memory_reserved_mb"] = allocator["reserved_bytes"] / MIB
    library = nvml()
    if library is not None and gpu.handle is not None:
        utilization = library.utilization(gpu.handle)
        if utilization is not None:
            figures["gpu/utilization_percent"] = float(utilization[0])
        temperature = library.temperature(gpu.handle)
        if temperature is not None:
            figures["gpu/temperature_celsius"] = float(temperature)
    return figures


def _add_summary(numbers: Dict[str, float], texts: Dict[str, str], summary: Optional[dict],
                 gpus: List[ProcessGpu]) -> None:
    if not summary or not isinstance(summary.get("gpus"), list):
        return
    ordinal_of = {gpu.uuid: gpu.ordinal for gpu in gpus if gpu.uuid}
    for entry in summary["gpus"]:
        if not isinstance(entry, dict):
            continue
        label = ordinal_of.get(entry.get("uuid"), entry.get("gpu"))
        if isinstance(label, bool) or not isinstance(label, int):
            continue
        for quantity in SUMMARY_QUANTITIES:
            statistics = entry.get(quantity)
            if not isinstance(statistics, dict):
                continue
            for statistic in SUMMARY_STATISTICS:
                value = statistics.get(statistic)
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    numbers[f"gpu{label}/{quantity}_{statistic}"] = float(value)
        verdict = entry.get("verdict")
        if isinstance(verdict, dict) and isinstance(verdict.get("verdict"), str):
            texts[f"gpu{label}/verdict"] = verdict["verdict"]


_default: Optional[GpuMetricsLogger] = None
_default_lock = threading.Lock()


def log_gpu_metrics(tracker: Any, step: int) -> Dict[str, Any]:
    """Logs this process's GPU figures to `tracker` at `step` (see the module's doc) and returns them."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = GpuMetricsLogger()
    return _default.log(tracker, step)
