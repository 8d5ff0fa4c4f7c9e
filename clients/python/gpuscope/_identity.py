"""A rank's place in its job: the job's name, rank, world size and local rank.

The job: an explicit name, else $GPUSCOPE_JOB, else torchrun's $TORCHELASTIC_RUN_ID (its default
"none" is not a name), else the script's name. The place: torch.distributed once a process group is
initialised, else torchrun's (and most launchers') $RANK, $WORLD_SIZE and $LOCAL_RANK, else rank 0 of
an unknown world.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from . import _torch_state
from ._wire import clean_job_name

_FALLBACK_JOB = "python"


def job_name(explicit: Optional[str] = None, environ: Optional[Mapping[str, str]] = None,
             argv: Optional[Sequence[str]] = None) -> str:
    env = os.environ if environ is None else environ
    elastic = env.get("TORCHELASTIC_RUN_ID")
    for candidate in (explicit, env.get("GPUSCOPE_JOB"), None if elastic == "none" else elastic,
                      script_name(sys.argv if argv is None else argv)):
        name = clean_job_name(candidate)
        if name:
            return name
    return _FALLBACK_JOB


def script_name(argv: Sequence[str]) -> Optional[str]:
    """train.py → "train"; `python -m pkg` (argv[0] is pkg/__main__.py) → "pkg"; `python -c` → None."""
    first = argv[0] if argv else ""
    if first in ("", "-c", "-m", "-"):
        return None
    base = os.path.basename(first)
    stem = base[:-3] if base.endswith(".py") else base
    if stem == "__main__":
        stem = os.path.basename(os.path.dirname(os.path.abspath(first)))
    return stem or None


def _whole(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.isdigit() else None


@dataclass(frozen=True)
class Place:
    rank: int = 0
    world_size: Optional[int] = None
    local_rank: Optional[int] = None
    from_process_group: bool = False  # torch.distributed said so: it will not change


def place(rank: Optional[int] = None, world_size: Optional[int] = None, local_rank: Optional[int] = None,
          environ: Optional[Mapping[str, str]] = None) -> Place:
    """Explicit values win over torch.distributed, which wins over the environment."""
    env = os.environ if environ is None else environ
    group = _torch_state.distributed_place()
    env_rank, env_world, env_local = _whole(env.get("RANK")), _whole(env.get("WORLD_SIZE")), _whole(
        env.get("LOCAL_RANK"))
    return Place(
        rank=next(v for v in (rank, group and group["rank"], env_rank, 0) if v is not None),
        world_size=next((v for v in (world_size, group and group["world_size"], env_world) if v is not None), None),
        local_rank=local_rank if local_rank is not None else env_local,
        from_process_group=group is not None,
    )
