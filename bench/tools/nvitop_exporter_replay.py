#!/usr/bin/env python3
"""A replay of nvitop-exporter's NVML calls, for footprint comparisons where it cannot be installed.

What it replays: the NVML calls that nvitop-exporter 1.7.0 (github.com/XuehaiPan/nvitop, commit
3e797b26a0fa7a74557f2eb2732caeb9058e3609, nvitop-exporter/nvitop_exporter/exporter.py with
nvitop/api/device.py and nvitop/api/libnvml.py) makes at start-up and once per collection (default
interval 1 s, the next collection due one interval after the previous one began), in the same order,
with its per-collection caching: inside `Device.oneshot()` utilization, memory, clocks, power, power
limit, PCIe TX/RX and NVLink throughput are each read once; name, UUID, total memory and the NVLink link
count are read once for the life of the process. Per GPU and collection:

  nvmlDeviceGetUtilizationRates, nvmlDeviceGetEncoderUtilization, nvmlDeviceGetDecoderUtilization,
  nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetClockInfo x4 (graphics, SM, memory, video),
  nvmlDeviceGetPowerUsage, nvmlDeviceGetPowerManagementLimit, nvmlDeviceGetTemperatureV (or
  nvmlDeviceGetTemperature where the library has no TemperatureV), nvmlDeviceGetFanSpeed,
  nvmlDeviceGetPcieThroughput x2 (TX, RX: 20 ms each on a real driver), nvmlDeviceGetFieldValues (every
  link's NVLink TX and RX data counters; only where the link-count field answers), then the processes:
  nvmlDeviceGetComputeRunningProcesses_v3 and nvmlDeviceGetGraphicsRunningProcesses_v3 (a count probe
  each, and a second call to fill the array when there are processes), and when there are processes
  nvmlDeviceGetProcessUtilization (a probe, and a second call when the driver has samples).
The first collection also reads the link count (one field) and, with links, the NVLink counters twice
20 ms apart.

How: ctypes, one Python function per NVML function in the manner of NVIDIA's binding (nvidia-ml-py,
"pynvml"): a cached symbol lookup, ctypes arguments, the return code turned into an exception class per
code, results handed back as ctypes structures, lists or Python objects; on top of that one query wrapper
per call that swallows errors into an N/A value, as nvitop does, and named tuples per device reading.
That is roughly the Python a pynvml user pays per reading.

It is NOT nvitop-exporter: no prometheus_client (no gauges: labels()/set() per value, ~22 per GPU plus 2
per NVLink link and 10 per process, each a locked dict lookup), no HTTP server thread and no scrapes (the
text exposition of every sample), no host metrics (nvitop's psutil reads every collection: uptime, CPU
percent, memory, swap, load, per-NIC network and per-disk I/O counters, every mount's usage), no psutil
per-process snapshot (status, command line, CPU, RSS, running time of each GPU process), and not its
imports (nvitop, psutil, prometheus_client: most of the 55 MB RSS measured on the real H100). What
nvitop-exporter costs is this plus those.

Usage: nvitop_exporter_replay.py SECONDS [LIBRARY (default libnvidia-ml.so.1)]
Prints one line like bench/tools/bare_nvml_loop.cc's: GPUs, collections, CPU seconds (user, sys) of the
whole process over the run, of which "setup" came before the first collection (interpreter start-up,
nvmlInit, discovery), wall per collection, CPU as % of one core from the first collection on ("steady":
what a long-running exporter pays), the same over the whole run, and peak RSS.
"""

from __future__ import annotations

import ctypes
import math
import resource
import sys
import threading
import time
from typing import Any, Callable, NamedTuple

# NVML constants (nvml.h).
SUCCESS = 0
ERROR_INSUFFICIENT_SIZE = 7
ERROR_FUNCTION_NOT_FOUND = 13
CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM, CLOCK_VIDEO = 0, 1, 2, 3
TEMPERATURE_GPU = 0
PCIE_UTIL_TX_BYTES, PCIE_UTIL_RX_BYTES = 0, 1
FI_DEV_NVLINK_LINK_COUNT = 91
FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138
FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139
VALUE_TYPE_DOUBLE, VALUE_TYPE_UINT, VALUE_TYPE_ULONG, VALUE_TYPE_ULONGLONG = 0, 1, 2, 3
VALUE_TYPE_SLONGLONG, VALUE_TYPE_SINT = 4, 5
ULONGLONG_MAX = 0xFFFFFFFFFFFFFFFF


class _NotAvailable(str):
    """nvitop-style "N/A": a string that converts to NaN, so float(value) never raises."""

    def __float__(self) -> float:
        return math.nan


NA = _NotAvailable('N/A')


# ---- the binding layer: what NVIDIA's Python binding does around each C call ----------------------


class NVMLError(Exception):
    """One subclass per return code, chosen on construction, as the binding does."""

    _by_code: dict[int, type] = {}

    def __new__(cls, code: int) -> NVMLError:
        if cls is NVMLError:
            cls = NVMLError._by_code.setdefault(code, type(f'NVMLError_{code}', (NVMLError,), {}))
        obj = Exception.__new__(cls)
        obj.value = code
        return obj

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.value = code


class Utilization(ctypes.Structure):
    _fields_ = [('gpu', ctypes.c_uint), ('memory', ctypes.c_uint)]


class MemoryV2(ctypes.Structure):
    _fields_ = [
        ('version', ctypes.c_uint),
        ('total', ctypes.c_ulonglong),
        ('reserved', ctypes.c_ulonglong),
        ('free', ctypes.c_ulonglong),
        ('used', ctypes.c_ulonglong),
    ]


MEMORY_V2 = ctypes.sizeof(MemoryV2) | (2 << 24)


class TemperatureV1(ctypes.Structure):
    _fields_ = [('version', ctypes.c_uint), ('sensorType', ctypes.c_uint), ('temperature', ctypes.c_int)]


TEMPERATURE_V1 = ctypes.sizeof(TemperatureV1) | (1 << 24)


class FieldValueUnion(ctypes.Union):
    _fields_ = [
        ('dVal', ctypes.c_double),
        ('uiVal', ctypes.c_uint),
        ('ulVal', ctypes.c_ulong),
        ('ullVal', ctypes.c_ulonglong),
        ('sllVal', ctypes.c_longlong),
        ('siVal', ctypes.c_int),
    ]


class FieldValue(ctypes.Structure):
    _fields_ = [
        ('fieldId', ctypes.c_uint),
        ('scopeId', ctypes.c_uint),
        ('timestamp', ctypes.c_longlong),
        ('latencyUsec', ctypes.c_longlong),
        ('valueType', ctypes.c_uint),
        ('nvmlReturn', ctypes.c_uint),
        ('value', FieldValueUnion),
    ]


# The layout nvitop 1.7.0 picks on a driver that has nvmlDeviceGetRunningProcessDetailList (550 and
# later, the simulator too): the _v3 functions with the 24-byte entry.
class ProcessInfo(ctypes.Structure):
    _fields_ = [
        ('pid', ctypes.c_uint),
        ('usedGpuMemory', ctypes.c_ulonglong),
        ('gpuInstanceId', ctypes.c_uint),
        ('computeInstanceId', ctypes.c_uint),
    ]


class ProcessUtilizationSample(ctypes.Structure):
    _fields_ = [
        ('pid', ctypes.c_uint),
        ('timeStamp', ctypes.c_ulonglong),
        ('smUtil', ctypes.c_uint),
        ('memUtil', ctypes.c_uint),
        ('encUtil', ctypes.c_uint),
        ('decUtil', ctypes.c_uint),
    ]


class FriendlyObject:
    """A process entry copied into a plain Python object, field by field, as the binding does."""

    def __init__(self, fields: dict[str, Any]) -> None:
        for key, value in fields.items():
            setattr(self, key, value)


class Binding:
    """The binding's per-function wrappers, for the functions this replay needs."""

    def __init__(self, path: str) -> None:
        self._lib = ctypes.CDLL(path)
        self._symbols: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._temperature_v: bool | None = None

    def fn(self, name: str) -> Any:
        cached = self._symbols.get(name)
        if cached is not None:
            return cached
        with self._lock:
            try:
                self._symbols[name] = getattr(self._lib, name)
            except AttributeError:
                raise NVMLError(ERROR_FUNCTION_NOT_FOUND) from None
            return self._symbols[name]

    def has(self, name: str) -> bool:
        try:
            self.fn(name)
        except NVMLError:
            return False
        return True

    @staticmethod
    def check(ret: int) -> None:
        if ret != SUCCESS:
            raise NVMLError(ret)

    def uint_query(self, name: str, handle: Any, *extra: Any) -> int:
        out = ctypes.c_uint()
        self.check(self.fn(name)(handle, *extra, ctypes.byref(out)))
        return out.value

    def string_query(self, name: str, handle: Any, size: int) -> bytes:
        buf = ctypes.create_string_buffer(size)
        args = (buf, ctypes.c_uint(size)) if handle is None else (handle, buf, ctypes.c_uint(size))
        self.check(self.fn(name)(*args))
        return buf.value

    # -- functions, named as in NVML --
    def nvmlInitWithFlags(self, flags: int) -> None:
        self.check(self.fn('nvmlInitWithFlags')(ctypes.c_uint(flags)))

    def nvmlShutdown(self) -> None:
        self.check(self.fn('nvmlShutdown')())

    def nvmlSystemGetDriverVersion(self) -> bytes:
        return self.string_query('nvmlSystemGetDriverVersion', None, 80)

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        out = ctypes.c_int()
        self.check(self.fn('nvmlSystemGetCudaDriverVersion')(ctypes.byref(out)))
        return out.value

    def nvmlDeviceGetCount(self) -> int:
        out = ctypes.c_uint()
        self.check(self.fn('nvmlDeviceGetCount_v2')(ctypes.byref(out)))
        return out.value

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
        handle = ctypes.c_void_p()
        self.check(self.fn('nvmlDeviceGetHandleByIndex_v2')(ctypes.c_uint(index), ctypes.byref(handle)))
        return handle

    def nvmlDeviceGetName(self, handle: Any) -> bytes:
        return self.string_query('nvmlDeviceGetName', handle, 96)

    def nvmlDeviceGetUUID(self, handle: Any) -> bytes:
        return self.string_query('nvmlDeviceGetUUID', handle, 96)

    def nvmlDeviceIsMigDeviceHandle(self, handle: Any) -> int:
        return self.uint_query('nvmlDeviceIsMigDeviceHandle', handle)

    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        current, pending = ctypes.c_uint(), ctypes.c_uint()
        self.check(self.fn('nvmlDeviceGetMigMode')(handle, ctypes.byref(current), ctypes.byref(pending)))
        return [current.value, pending.value]

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Utilization:
        out = Utilization()
        self.check(self.fn('nvmlDeviceGetUtilizationRates')(handle, ctypes.byref(out)))
        return out

    def _codec(self, name: str, handle: Any) -> list[int]:
        util, period = ctypes.c_uint(), ctypes.c_uint()
        self.check(self.fn(name)(handle, ctypes.byref(util), ctypes.byref(period)))
        return [util.value, period.value]

    def nvmlDeviceGetEncoderUtilization(self, handle: Any) -> list[int]:
        return self._codec('nvmlDeviceGetEncoderUtilization', handle)

    def nvmlDeviceGetDecoderUtilization(self, handle: Any) -> list[int]:
        return self._codec('nvmlDeviceGetDecoderUtilization', handle)

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> MemoryV2:
        out = MemoryV2()
        out.version = MEMORY_V2
        self.check(self.fn('nvmlDeviceGetMemoryInfo_v2')(handle, ctypes.byref(out)))
        return out

    def nvmlDeviceGetClockInfo(self, handle: Any, clock: int) -> int:
        return self.uint_query('nvmlDeviceGetClockInfo', handle, ctypes.c_uint(clock))

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        return self.uint_query('nvmlDeviceGetPowerUsage', handle)

    def nvmlDeviceGetPowerManagementLimit(self, handle: Any) -> int:
        return self.uint_query('nvmlDeviceGetPowerManagementLimit', handle)

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        # nvitop prefers the versioned call where the library has it (driver 580 does); it looks once.
        if self._temperature_v is None:
            self._temperature_v = self.has('nvmlDeviceGetTemperatureV')
        if self._temperature_v:
            out = TemperatureV1()
            out.version = TEMPERATURE_V1
            out.sensorType = sensor
            self.check(self.fn('nvmlDeviceGetTemperatureV')(handle, ctypes.byref(out)))
            return int(out.temperature)
        return self.uint_query('nvmlDeviceGetTemperature', handle, ctypes.c_uint(sensor))

    def nvmlDeviceGetFanSpeed(self, handle: Any) -> int:
        return self.uint_query('nvmlDeviceGetFanSpeed', handle)

    def nvmlDeviceGetPcieThroughput(self, handle: Any, counter: int) -> int:
        return self.uint_query('nvmlDeviceGetPcieThroughput', handle, ctypes.c_uint(counter))

    def nvmlDeviceGetFieldValues(self, handle: Any, ids: list[Any]) -> Any:
        values = (FieldValue * len(ids))()
        for i, field in enumerate(ids):
            if isinstance(field, tuple):
                values[i].fieldId, values[i].scopeId = field
            else:
                values[i].fieldId = field
        self.check(self.fn('nvmlDeviceGetFieldValues')(handle, ctypes.c_int32(len(ids)), ctypes.byref(values)))
        return values

    def _running_processes(self, name: str, handle: Any) -> list[FriendlyObject]:
        fn = self.fn(name)
        count = ctypes.c_uint(0)
        ret = fn(handle, ctypes.byref(count), None)
        if ret == SUCCESS:
            return []
        if ret != ERROR_INSUFFICIENT_SIZE:
            raise NVMLError(ret)
        count.value = count.value * 2 + 5
        entries = (ProcessInfo * count.value)()
        self.check(fn(handle, ctypes.byref(count), entries))
        out = []
        for i in range(count.value):
            entry = entries[i]
            obj = FriendlyObject({key: getattr(entry, key) for key, _ in entry._fields_})
            if obj.usedGpuMemory == ULONGLONG_MAX:
                obj.usedGpuMemory = None
            out.append(obj)
        return out

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[FriendlyObject]:
        return self._running_processes('nvmlDeviceGetComputeRunningProcesses_v3', handle)

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: Any) -> list[FriendlyObject]:
        return self._running_processes('nvmlDeviceGetGraphicsRunningProcesses_v3', handle)

    def nvmlDeviceGetProcessUtilization(self, handle: Any, since_us: int) -> list[ProcessUtilizationSample]:
        fn = self.fn('nvmlDeviceGetProcessUtilization')
        count = ctypes.c_uint(0)
        since = ctypes.c_ulonglong(since_us)
        ret = fn(handle, None, ctypes.byref(count), since)
        if ret != ERROR_INSUFFICIENT_SIZE:
            raise NVMLError(ret)
        samples = (ProcessUtilizationSample * count.value)()
        self.check(fn(handle, samples, ctypes.byref(count), since))
        return samples[0 : count.value]


# ---- nvitop's layer: one query wrapper per call, N/A on error, per-collection caching ---------------

_nvml: Binding


def query(name: str, *args: Any, default: Any = NA) -> Any:
    """nvitop's query: look the function up by name, call it, N/A (or default) on any NVML error."""
    try:
        value = getattr(_nvml, name)(*args)
    except NVMLError:
        return default
    if isinstance(value, bytes):
        value = value.decode('utf-8', errors='replace')
    return value


def field_values(handle: Any, ids: list[Any]) -> list[tuple[Any, int]]:
    values = query('nvmlDeviceGetFieldValues', handle, ids)
    if values is NA:
        now = time.time_ns() // 1000
        return [(NA, now) for _ in ids]
    out = []
    for v in values:
        if v.nvmlReturn != SUCCESS:
            out.append((NA, time.time_ns() // 1000))
        elif v.valueType == VALUE_TYPE_DOUBLE:
            out.append((v.value.dVal, v.timestamp))
        elif v.valueType == VALUE_TYPE_UINT:
            out.append((v.value.uiVal, v.timestamp))
        elif v.valueType == VALUE_TYPE_ULONG:
            out.append((v.value.ulVal, v.timestamp))
        elif v.valueType == VALUE_TYPE_ULONGLONG:
            out.append((v.value.ullVal, v.timestamp))
        elif v.valueType == VALUE_TYPE_SLONGLONG:
            out.append((v.value.sllVal, v.timestamp))
        elif v.valueType == VALUE_TYPE_SINT:
            out.append((v.value.siVal, v.timestamp))
        else:
            out.append((NA, v.timestamp))
    return out


class MemoryInfo(NamedTuple):
    total: Any
    free: Any
    used: Any
    reserved: Any


class ClockInfos(NamedTuple):
    graphics: Any
    sm: Any
    memory: Any
    video: Any


class UtilizationRates(NamedTuple):
    gpu: Any
    memory: Any
    encoder: Any
    decoder: Any


class Throughput(NamedTuple):
    tx: Any
    rx: Any


class GpuProcess:
    def __init__(self, pid: int, gpu_memory: Any, device: Device) -> None:
        self.pid = pid
        self.gpu_memory = gpu_memory
        total = device.memory_total()
        ok = isinstance(gpu_memory, int) and isinstance(total, int) and total > 0
        self.gpu_memory_percent = round(100.0 * gpu_memory / total, 1) if ok else NA
        self.kind = ''
        self.utilization: tuple[Any, Any, Any, Any] = (NA, NA, NA, NA)


def cached(method: Callable[[Device], Any]) -> Callable[[Device], Any]:
    """Read once per collection: the value is kept while a collection's cache is open."""
    key = method.__name__

    def wrapper(self: Device) -> Any:
        if self.cache is None:
            return method(self)
        if key not in self.cache:
            self.cache[key] = method(self)
        return self.cache[key]

    return wrapper


class Device:
    def __init__(self, index: int) -> None:
        self.index = index
        self.handle = _nvml.nvmlDeviceGetHandleByIndex(index)
        self._name: Any = NA
        self._uuid: Any = NA
        self._memory_total: Any = NA
        self._link_count: int | None = None
        self._nvlink_counters: list[tuple[Any, int]] | None = None
        self.cache: dict[str, Any] | None = None
        self.uuid()

    def name(self) -> Any:
        if self._name is NA:
            self._name = query('nvmlDeviceGetName', self.handle)
        return self._name

    def uuid(self) -> Any:
        if self._uuid is NA:
            self._uuid = query('nvmlDeviceGetUUID', self.handle)
        return self._uuid

    def is_mig_mode_enabled(self) -> bool:
        if query('nvmlDeviceIsMigDeviceHandle', self.handle, default=False):
            return False
        mode, _ = query('nvmlDeviceGetMigMode', self.handle, default=(NA, NA))
        return mode == 1

    @cached
    def memory_info(self) -> MemoryInfo:
        m = query('nvmlDeviceGetMemoryInfo', self.handle)
        if m is NA:
            return MemoryInfo(NA, NA, NA, NA)
        return MemoryInfo(m.total, m.free, m.used, m.reserved)

    def memory_total(self) -> Any:
        if self._memory_total is NA:
            self._memory_total = self.memory_info().total
        return self._memory_total

    def memory_percent(self) -> Any:
        total, _, used, _ = self.memory_info()
        if isinstance(total, int) and isinstance(used, int) and total > 0:
            return round(100.0 * used / total, 1)
        return NA

    @cached
    def utilization_rates(self) -> UtilizationRates:
        gpu = memory = encoder = decoder = NA
        u = query('nvmlDeviceGetUtilizationRates', self.handle)
        if u is not NA:
            gpu, memory = u.gpu, u.memory
        enc = query('nvmlDeviceGetEncoderUtilization', self.handle)
        if isinstance(enc, list) and enc:
            encoder = enc[0]
        dec = query('nvmlDeviceGetDecoderUtilization', self.handle)
        if isinstance(dec, list) and dec:
            decoder = dec[0]
        return UtilizationRates(gpu, memory, encoder, decoder)

    @cached
    def clock_infos(self) -> ClockInfos:
        kinds = (CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM, CLOCK_VIDEO)
        return ClockInfos(*(query('nvmlDeviceGetClockInfo', self.handle, c) for c in kinds))

    @cached
    def power_usage(self) -> Any:
        return query('nvmlDeviceGetPowerUsage', self.handle)

    @cached
    def power_limit(self) -> Any:
        return query('nvmlDeviceGetPowerManagementLimit', self.handle)

    def temperature(self) -> Any:
        return query('nvmlDeviceGetTemperature', self.handle, TEMPERATURE_GPU)

    def fan_speed(self) -> Any:
        return query('nvmlDeviceGetFanSpeed', self.handle)

    @cached
    def pcie_tx(self) -> Any:
        return query('nvmlDeviceGetPcieThroughput', self.handle, PCIE_UTIL_TX_BYTES)

    @cached
    def pcie_rx(self) -> Any:
        return query('nvmlDeviceGetPcieThroughput', self.handle, PCIE_UTIL_RX_BYTES)

    def link_count(self) -> int:
        if self._link_count is None:
            ((count, _),) = field_values(self.handle, [FI_DEV_NVLINK_LINK_COUNT])
            self._link_count = count if isinstance(count, int) else 0
        return self._link_count

    @cached
    def nvlink_throughput(self) -> list[Throughput]:
        links = self.link_count()
        if links == 0:
            return []

        def counters() -> list[tuple[Any, int]]:
            ids = [(FI_DEV_NVLINK_THROUGHPUT_DATA_TX, i) for i in range(links)]
            ids += [(FI_DEV_NVLINK_THROUGHPUT_DATA_RX, i) for i in range(links)]
            return field_values(self.handle, ids)

        if self._nvlink_counters is None:  # the first reading waits 20 ms for a difference
            self._nvlink_counters = counters()
            time.sleep(0.02)
        old, new = self._nvlink_counters, counters()
        rates = []
        for (a, ta), (b, tb) in zip(old, new):
            ok = isinstance(a, int) and isinstance(b, int) and tb > ta
            rates.append(round(1_000_000 * (b - a) / (tb - ta)) if ok else NA)
        self._nvlink_counters = new
        return [Throughput(tx, rx) for tx, rx in zip(rates[:links], rates[links:])]

    def nvlink_sum(self, which: int, mean: bool) -> Any:
        values = [t[which] for t in self.nvlink_throughput() if isinstance(t[which], int)]
        if not values:
            return NA
        return round(sum(values) / len(values)) if mean else sum(values)

    def processes(self) -> dict[int, GpuProcess]:
        found: dict[int, GpuProcess] = {}
        missing_memory = False
        kinds = (('C', 'nvmlDeviceGetComputeRunningProcesses'), ('G', 'nvmlDeviceGetGraphicsRunningProcesses'))
        for kind, name in kinds:
            for p in query(name, self.handle, default=()):
                memory = p.usedGpuMemory if isinstance(p.usedGpuMemory, int) else NA
                missing_memory = missing_memory or memory is NA
                proc = found.setdefault(p.pid, GpuProcess(p.pid, memory, self))
                proc.kind += kind
        if found:
            since = time.time_ns() // 1000 - 1_000_000
            samples = query('nvmlDeviceGetProcessUtilization', self.handle, since, default=())
            for s in sorted(samples, key=lambda s: s.timeStamp):
                if s.pid in found:
                    found[s.pid].utilization = (s.smUtil, s.memUtil, s.encUtil, s.decUtil)
            if not missing_memory:
                for pid in set(found).difference(s.pid for s in samples):
                    found[pid].utilization = (0, 0, 0, 0)
        return found


def collect(device: Device, store: dict[tuple[Any, ...], Any]) -> None:
    """One collection of one GPU: the exporter's values in its order; `store` stands in for the gauges."""
    labels = (str(device.index), device.name(), device.uuid())
    device.cache = {}
    try:
        util = device.utilization_rates
        clocks = device.clock_infos
        values = (
            ('gpu_utilization', float(util().gpu)),
            ('gpu_memory_utilization', float(util().memory)),
            ('gpu_encoder_utilization', float(util().encoder)),
            ('gpu_decoder_utilization', float(util().decoder)),
            ('gpu_memory_total', float(device.memory_total()) / 1048576),
            ('gpu_memory_used', float(device.memory_info().used) / 1048576),
            ('gpu_memory_free', float(device.memory_info().free) / 1048576),
            ('gpu_memory_percent', float(device.memory_percent())),
            ('gpu_clock_sm', float(clocks().sm)),
            ('gpu_clock_memory', float(clocks().memory)),
            ('gpu_clock_graphics', float(clocks().graphics)),
            ('gpu_clock_video', float(clocks().video)),
            ('gpu_power_usage', float(device.power_usage()) / 1000.0),
            ('gpu_power_limit', float(device.power_limit()) / 1000.0),
            ('gpu_temperature', float(device.temperature())),
            ('gpu_fan_speed', float(device.fan_speed())),
            ('gpu_pcie_tx_throughput', float(device.pcie_tx()) / 1024.0),
            ('gpu_pcie_rx_throughput', float(device.pcie_rx()) / 1024.0),
            ('gpu_nvlink_total_tx_throughput', float(device.nvlink_sum(0, False)) / 1024.0),
            ('gpu_nvlink_total_rx_throughput', float(device.nvlink_sum(1, False)) / 1024.0),
            ('gpu_nvlink_mean_tx_throughput', float(device.nvlink_sum(0, True)) / 1024.0),
            ('gpu_nvlink_mean_rx_throughput', float(device.nvlink_sum(1, True)) / 1024.0),
        )
        for metric, value in values:
            store[(metric, *labels)] = value
        for which, metric in ((0, 'gpu_nvlink_tx_throughput'), (1, 'gpu_nvlink_rx_throughput')):
            for link, t in enumerate(device.nvlink_throughput()):
                store[(metric, *labels, link)] = float(t[which]) / 1024.0
    finally:
        device.cache = None
    for pid, p in device.processes().items():
        store[('process_gpu_memory', *labels, pid)] = float(p.gpu_memory) / 1048576
        for metric, value in zip(('sm', 'memory', 'encoder', 'decoder'), p.utilization):
            store[(f'process_gpu_{metric}_utilization', *labels, pid)] = float(value)


def cpu_seconds() -> tuple[float, float]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime, ru.ru_stime


def main(argv: list[str]) -> int:
    global _nvml
    if len(argv) < 2 or not argv[1].isdigit() or int(argv[1]) <= 0:
        print('usage: nvitop_exporter_replay.py SECONDS [LIBRARY]', file=sys.stderr)
        return 2
    seconds = int(argv[1])
    path = argv[2] if len(argv) > 2 else 'libnvidia-ml.so.1'
    try:
        _nvml = Binding(path)
    except OSError as e:
        print(f'nvitop_exporter_replay: cannot load {path}: {e}', file=sys.stderr)
        return 1
    try:
        _nvml.nvmlInitWithFlags(0)
    except NVMLError as e:
        print(f'nvitop_exporter_replay: nvmlInitWithFlags failed ({e.value})', file=sys.stderr)
        return 1
    # Start-up as the exporter's command line does it: count, one Device per index (handle, UUID), MIG
    # children (none without MIG mode), names for the banner, then the info metric's three values.
    count = query('nvmlDeviceGetCount', default=0)
    devices = [Device(i) for i in range(count)]
    for d in devices:
        if d.is_mig_mode_enabled():
            print('nvitop_exporter_replay: GPU in MIG mode: its MIG devices are not replayed', file=sys.stderr)
        d.name()
    info = {
        'device_count': str(query('nvmlDeviceGetCount', default=0)),
        'driver_version': query('nvmlSystemGetDriverVersion'),
        'cuda_driver_version': query('nvmlSystemGetCudaDriverVersion'),
    }
    store: dict[tuple[Any, ...], Any] = {('nvitop_info',): info}

    setup_user, setup_sys = cpu_seconds()
    setup = setup_user + setup_sys
    interval = 1.0
    busy = 0.0
    readings = 0
    began = time.monotonic()
    end = began + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        for d in devices:
            collect(d, store)
        busy += time.monotonic() - start
        readings += 1
        time.sleep(max(0.0, start + interval - time.monotonic()))
    user, system = cpu_seconds()
    elapsed = time.monotonic() - began
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu = user + system
    print(
        f'nvitop_exporter_replay: gpus {count}, readings {readings}, cpu {cpu:.3f} s (user {user:.3f} sys {system:.3f}) '
        f'over {seconds} s, setup {setup:.3f} s, wall per reading {busy / max(readings, 1) * 1e3:.2f} ms, '
        f'steady {(cpu - setup) / elapsed * 100.0:.3f} % of one core, whole run {cpu / seconds * 100.0:.3f} %, '
        f'maxrss {rss_kib} KiB'
    )
    sys.stdout.flush()
    try:
        _nvml.nvmlShutdown()
    except NVMLError:
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
