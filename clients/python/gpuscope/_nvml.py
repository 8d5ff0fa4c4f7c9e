"""NVML through ctypes: the few readings the client takes itself when no agent answers.

Declarations follow /work/shared/reference/nvml-abi.md (NVML's C ABI on x86-64); no NVIDIA package is
needed. The library is $GPUSCOPE_NVML_LIB when set (the agent reads the same variable; tests point it
at gpuscope's simulated libnvidia-ml.so.1), else libnvidia-ml.so.1, else libnvidia-ml.so. Loading and
nvmlInit happen once per process; a failure is remembered and never retried (a driver does not appear
while a job runs), and every reading answers None rather than raising.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, List, Optional, Tuple

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15

NVML_TEMPERATURE_GPU = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0  # since the driver loaded (aggregate = 1: over the GPU's life)

_UUID_BUFFER = 96
_NAME_BUFFER = 96


class NvmlUtilization(ctypes.Structure):  # nvmlUtilization_t: 8 bytes
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class NvmlMemory(ctypes.Structure):  # nvmlMemory_t: 24 bytes, all in bytes
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


assert ctypes.sizeof(NvmlUtilization) == 8 and ctypes.sizeof(NvmlMemory) == 24

_Handle = ctypes.c_void_p  # nvmlDevice_t: an opaque pointer


class Nvml:
    """One loaded and initialised libnvidia-ml. Use `nvml()` rather than constructing one."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self._lib = library
        self._functions: dict = {}

    def _function(self, *names: str) -> Any:
        """The first of `names` the library exports (newest version first), prototyped to return an int."""
        for name in names:
            if name in self._functions:
                return self._functions[name]
            function = getattr(self._lib, name, None)
            if function is not None:
                function.restype = ctypes.c_int
                self._functions[name] = function
                return function
        return None

    def _call(self, names: Tuple[str, ...], *args: Any) -> int:
        function = self._function(*names)
        if function is None:
            return NVML_ERROR_FUNCTION_NOT_FOUND
        try:
            return int(function(*args))
        except Exception:  # a ctypes argument error, or a library that misbehaves
            return NVML_ERROR_FUNCTION_NOT_FOUND

    def init(self) -> bool:
        return self._call(("nvmlInit_v2", "nvmlInit")) == NVML_SUCCESS

    def device_count(self) -> Optional[int]:
        count = ctypes.c_uint(0)
        rc = self._call(("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"), ctypes.byref(count))
        return count.value if rc == NVML_SUCCESS else None

    def handle_by_index(self, index: int) -> Optional[int]:
        handle = _Handle()
        rc = self._call(("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"), ctypes.c_uint(index),
                        ctypes.byref(handle))
        return handle.value if rc == NVML_SUCCESS and handle.value else None

    def handle_by_uuid(self, uuid: str) -> Optional[int]:
        """By full UUID, or by a unique prefix of one as CUDA_VISIBLE_DEVICES allows ("GPU-8f3a")."""
        handle = _Handle()
        rc = self._call(("nvmlDeviceGetHandleByUUID",), ctypes.c_char_p(uuid.encode()), ctypes.byref(handle))
        if rc == NVML_SUCCESS and handle.value:
            return handle.value
        matches = []
        for index in range(self.device_count() or 0):
            candidate = self.handle_by_index(index)
            if candidate is not None and (self.uuid(candidate) or "").startswith(uuid):
                matches.append(candidate)
        return matches[0] if len(matches) == 1 else None

    def all_handles(self) -> List[int]:
        handles = []
        for index in range(self.device_count() or 0):
            handle = self.handle_by_index(index)
            if handle is not None:
                handles.append(handle)
        return handles

    def _text(self, name: str, handle: int, size: int) -> Optional[str]:
        buffer = ctypes.create_string_buffer(size)
        rc = self._call((name,), _Handle(handle), buffer, ctypes.c_uint(size))
        return buffer.value.decode("utf-8", "replace") if rc == NVML_SUCCESS else None

    def uuid(self, handle: int) -> Optional[str]:
        return self._text("nvmlDeviceGetUUID", handle, _UUID_BUFFER)

    def name(self, handle: int) -> Optional[str]:
        return self._text("nvmlDeviceGetName", handle, _NAME_BUFFER)

    def index(self, handle: int) -> Optional[int]:
        value = ctypes.c_uint(0)
        rc = self._call(("nvmlDeviceGetIndex",), _Handle(handle), ctypes.byref(value))
        return value.value if rc == NVML_SUCCESS else None

    def utilization(self, handle: int) -> Optional[Tuple[int, int]]:
        """(GPU, memory) percent over the driver's last sample period."""
        rates = NvmlUtilization()
        rc = self._call(("nvmlDeviceGetUtilizationRates",), _Handle(handle), ctypes.byref(rates))
        return (rates.gpu, rates.memory) if rc == NVML_SUCCESS else None

    def temperature(self, handle: int) -> Optional[int]:
        """The GPU die's temperature in °C."""
        value = ctypes.c_uint(0)
        rc = self._call(("nvmlDeviceGetTemperature",), _Handle(handle), ctypes.c_int(NVML_TEMPERATURE_GPU),
                        ctypes.byref(value))
        return value.value if rc == NVML_SUCCESS else None

    def memory(self, handle: int) -> Optional[Tuple[int, int, int]]:
        """(total, free, used) frame buffer bytes."""
        info = NvmlMemory()
        rc = self._call(("nvmlDeviceGetMemoryInfo",), _Handle(handle), ctypes.byref(info))
        return (info.total, info.free, info.used) if rc == NVML_SUCCESS else None

    def uncorrected_ecc_errors(self, handle: int) -> Tuple[int, Optional[int]]:
        """(NVML's return code, the volatile double-bit ECC count: errors since the driver loaded)."""
        count = ctypes.c_ulonglong(0)
        rc = self._call(("nvmlDeviceGetTotalEccErrors",), _Handle(handle),
                        ctypes.c_int(NVML_MEMORY_ERROR_TYPE_UNCORRECTED), ctypes.c_int(NVML_VOLATILE_ECC),
                        ctypes.byref(count))
        return rc, (count.value if rc == NVML_SUCCESS else None)


_lock = threading.Lock()
_loaded: Optional[Nvml] = None
_tried = False


def library_candidates() -> List[str]:
    explicit = os.environ.get("GPUSCOPE_NVML_LIB")
    return [explicit] if explicit else ["libnvidia-ml.so.1", "libnvidia-ml.so"]


def nvml() -> Optional[Nvml]:
    """The process's initialised NVML, or None when there is no driver library or it would not start."""
    global _loaded, _tried
    if _tried:
        return _loaded
    with _lock:
        if not _tried:
            _loaded = _load()
            _tried = True
    return _loaded


def _load() -> Optional[Nvml]:
    for name in library_candidates():
        try:
            library = ctypes.CDLL(name)
        except OSError:
            continue
        candidate = Nvml(library)
        return candidate if candidate.init() else None
    return None


def _forget_for_tests() -> None:
    """Lets a test load another library; the old one stays mapped (ctypes cannot unload it)."""
    global _loaded, _tried
    with _lock:
        _loaded, _tried = None, False
