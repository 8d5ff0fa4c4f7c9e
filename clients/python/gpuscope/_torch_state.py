"""What PyTorch knows about this process's GPU use, without importing torch and without creating a
CUDA context.

gpuscope never imports torch: a training loop that uses it has imported it already (found in
sys.modules), and one that does not has no allocator to report. Nothing here calls a torch.cuda
function that initialises CUDA (current_device(), memory_allocated() do): before the process has
initialised CUDA itself, the answer is "no GPU in use", so a rank that later calls set_device(3) never
gets a stray context on GPU 0 from its monitoring.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional

# What the process's torch says about CUDA.
TORCH_ABSENT = "absent"  # torch is not imported: ask the agent which GPUs the pid uses
CPU_ONLY = "cpu_only"  # torch without CUDA (a CPU build, or no GPU): nothing to report
CUDA_UNUSED = "cuda_unused"  # CUDA is there but this process has not initialised it yet
CUDA_IN_USE = "cuda_in_use"


def torch_module() -> Optional[Any]:
    return sys.modules.get("torch")


def cuda_state() -> str:
    torch = torch_module()
    if torch is None:
        return TORCH_ABSENT
    try:
        cuda = torch.cuda
        if not cuda.is_available():
            return CPU_ONLY
        return CUDA_IN_USE if cuda.is_initialized() else CUDA_UNUSED
    except Exception:
        return CPU_ONLY


def current_ordinals() -> List[int]:
    """[the current CUDA device ordinal] when CUDA is in use, else []."""
    if cuda_state() != CUDA_IN_USE:
        return []
    try:
        return [int(torch_module().cuda.current_device())]
    except Exception:
        return []


def device_uuid(ordinal: int) -> Optional[str]:
    """The device's UUID as torch ≥ 2.1 reports it ("GPU-…"), when CUDA is in use; else None."""
    if cuda_state() != CUDA_IN_USE:
        return None
    try:
        raw = getattr(torch_module().cuda.get_device_properties(ordinal), "uuid", None)
    except Exception:
        return None
    if raw is None:
        return None
    text = str(raw).strip()
    if not text:
        return None
    return text if text.startswith(("GPU-", "MIG-")) else "GPU-" + text


def allocator_bytes(ordinal: Optional[int] = None) -> Dict[str, int]:
    """The caching allocator's allocated, reserved and peak-allocated bytes on the device (the current
    one when None); {} when CUDA is not in use."""
    if cuda_state() != CUDA_IN_USE:
        return {}
    try:
        cuda = torch_module().cuda
        device = cuda.current_device() if ordinal is None else ordinal
        return {
            "allocated_bytes": int(cuda.memory_allocated(device)),
            "reserved_bytes": int(cuda.memory_reserved(device)),
            "peak_allocated_bytes": int(cuda.max_memory_allocated(device)),
        }
    except Exception:
        return {}


def reset_peak(ordinal: Optional[int] = None) -> None:
    if cuda_state() != CUDA_IN_USE:
        return
    try:
        cuda = torch_module().cuda
        cuda.reset_peak_memory_stats(cuda.current_device() if ordinal is None else ordinal)
    except Exception:
        pass


def cuda_runtime_version() -> Optional[str]:
    """The CUDA runtime torch was built with ("12.4"), None for a CPU build or without torch."""
    torch = torch_module()
    try:
        version = getattr(getattr(torch, "version", None), "cuda", None)
    except Exception:
        return None
    return version if isinstance(version, str) and version else None


def distributed_place() -> Optional[Dict[str, int]]:
    """{"rank", "world_size"} from torch.distributed once a process group is initialised, else None."""
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return None
    try:
        if not dist.is_available() or not dist.is_initialized():
            return None
        return {"rank": int(dist.get_rank()), "world_size": int(dist.get_world_size())}
    except Exception:
        return None
