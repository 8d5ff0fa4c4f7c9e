"""Which GPUs this process uses, as NVML devices.

CUDA numbers the GPUs a process may see 0, 1, ... (cuda:N); CUDA_VISIBLE_DEVICES says which physical
GPU each number is (NVML indices, or UUIDs and unique UUID prefixes, MIG UUIDs too). Without the
variable cuda:N is NVML's index N, which assumes CUDA_DEVICE_ORDER=PCI_BUS_ID or GPUs of one model (CUDA
orders by speed first, then by PCI address); torch ≥ 2.1 reports the device's UUID, which settles it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import List, Mapping, Optional

from . import _torch_state
from ._nvml import Nvml, nvml

_ENTRY = re.compile(r"(\d+|(?:GPU|MIG)-[0-9A-Za-z/-]+)\Z")


@dataclass(frozen=True)
class ProcessGpu:
    ordinal: int  # cuda:N, as the process numbers it
    uuid: Optional[str] = None  # the GPU's UUID, when NVML or torch could tell
    handle: Optional[int] = None  # its NVML handle, when NVML is there


def visible_devices(environ: Optional[Mapping[str, str]] = None) -> Optional[List[str]]:
    """CUDA_VISIBLE_DEVICES as CUDA reads it: None when unset (every GPU); otherwise the entries up to
    the first one that is not an index or a UUID (CUDA ignores the rest), so "" and "-1" are []."""
    env = os.environ if environ is None else environ
    raw = env.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return None
    entries = []
    for entry in raw.split(","):
        entry = entry.strip()
        if not _ENTRY.match(entry):
            break
        entries.append(entry)
    return entries


def nvml_handle_for_ordinal(library: Nvml, ordinal: int,
                            environ: Optional[Mapping[str, str]] = None) -> Optional[int]:
    visible = visible_devices(environ)
    if visible is None:
        return library.handle_by_index(ordinal)
    if not 0 <= ordinal < len(visible):
        return None
    entry = visible[ordinal]
    return library.handle_by_index(int(entry)) if entry.isdigit() else library.handle_by_uuid(entry)


def process_gpu(ordinal: int, library: Optional[Nvml] = None,
                environ: Optional[Mapping[str, str]] = None) -> ProcessGpu:
    """cuda:`ordinal` with its UUID and NVML handle where they can be found."""
    library = library if library is not None else nvml()
    torch_uuid = _torch_state.device_uuid(ordinal)
    if library is None:
        return ProcessGpu(ordinal, torch_uuid, None)
    handle = library.handle_by_uuid(torch_uuid) if torch_uuid else None
    if handle is None:
        handle = nvml_handle_for_ordinal(library, ordinal, environ)
    uuid = library.uuid(handle) if handle is not None else None
    return ProcessGpu(ordinal, uuid or torch_uuid, handle)


def process_gpus(ordinals: Optional[List[int]] = None) -> List[ProcessGpu]:
    """The given CUDA ordinals, else the process's current CUDA device when it has initialised CUDA,
    else none."""
    chosen = list(ordinals) if ordinals is not None else _torch_state.current_ordinals()
    return [process_gpu(ordinal) for ordinal in chosen]


def visible_handles(library: Nvml, environ: Optional[Mapping[str, str]] = None) -> List[ProcessGpu]:
    """Every GPU the process could use (CUDA_VISIBLE_DEVICES applied), for a check before CUDA starts."""
    visible = visible_devices(environ)
    count = len(visible) if visible is not None else (library.device_count() or 0)
    gpus = []
    for ordinal in range(count):
        handle = nvml_handle_for_ordinal(library, ordinal, environ)
        if handle is not None:
            gpus.append(ProcessGpu(ordinal, library.uuid(handle), handle))
    return gpus
