"""The events' wire format (clients/README.md): one JSON object a line, at most 4096 bytes.

Events are formatted by hand rather than by json.dumps: the fields every event of a rank repeats are
encoded once (with json.dumps), and the per-event numbers are validated first, so Python's float repr
is exactly what json.dumps would write. tests/test_wire.py checks the bytes against json.dumps(
separators=(",", ":"), allow_nan=False); formatting this way costs about a third of json.dumps.
"""

from __future__ import annotations

import json
import math
import operator
import re
from typing import Any, Mapping, Optional, Union

# The protocol's bounds (the agent's src/analysis/training_event.h holds the same numbers).
MAX_EVENT_BYTES = 4096
MAX_JOB_NAME_BYTES = 128
MAX_RANK = 65535
MAX_SCALARS = 32
MAX_STEP_DURATION_S = 86400.0  # a longer step is a clock or unit mistake, not a step
MAX_GPU_INDEX = 1023
# Counters past this are not numbers anyone means; the agent reads steps and epochs as unsigned 64-bit.
_MAX_COUNTER = 2**63 - 1

_SCALAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")

_isfinite = math.isfinite
_index = operator.index


def finite_or_none(value: Any) -> Optional[float]:
    """float(value) when that is a finite number (a Python or NumPy number, a one-element tensor)."""
    if value is None or isinstance(value, (str, bytes)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError, RuntimeError):
        return None
    return number if _isfinite(number) else None


def counter_or_none(value: Any) -> Optional[int]:
    """A step or epoch number: a whole number (not a bool) from 0 on, else None."""
    if isinstance(value, bool):
        return None
    try:
        number = _index(value)
    except TypeError:
        return None
    return number if 0 <= number <= _MAX_COUNTER else None


def clean_job_name(name: Any) -> Optional[str]:
    """The job's name as the agent accepts it: control characters removed, at most 128 bytes of UTF-8
    (cut at a character boundary), surrounding blanks trimmed; None when nothing is left."""
    if name is None:
        return None
    text = _CONTROL_CHARACTERS.sub("", str(name)).strip()
    encoded = text.encode("utf-8", "replace")
    if len(encoded) > MAX_JOB_NAME_BYTES:
        text = encoded[:MAX_JOB_NAME_BYTES].decode("utf-8", "ignore").rstrip()
    return text or None


def clean_gpu(gpu: Any) -> Optional[Union[int, str]]:
    """A GPU as the wire names it: an index 0 to 1023, or a UUID-like string; None otherwise."""
    if gpu is None or isinstance(gpu, bool):
        return None
    if isinstance(gpu, str):
        text = gpu.strip()
        if text.isdigit():
            return clean_gpu(int(text))
        return text if text and len(text) <= 96 and not _CONTROL_CHARACTERS.search(text) else None
    try:
        index = _index(gpu)
    except TypeError:
        return None
    return index if 0 <= index <= MAX_GPU_INDEX else None


def _rank_or_none(value: Any, upper: int) -> Optional[int]:
    number = counter_or_none(value)
    return number if number is not None and number <= upper else None


class EventEncoder:
    """Encodes the events of one rank. The identity (job, rank, world size, local rank, GPU) is fixed at
    construction; make a new encoder when it changes."""

    def __init__(
        self,
        job: str,
        rank: Any = 0,
        world_size: Any = None,
        local_rank: Any = None,
        gpu: Any = None,
    ) -> None:
        name = clean_job_name(job)
        if name is None:
            raise ValueError("job: needs 1 to 128 bytes of printable text")
        identity = {"job": name, "rank": _rank_or_none(rank, MAX_RANK) or 0}
        world = _rank_or_none(world_size, MAX_RANK + 1)
        if world:
            identity["world_size"] = world
        local = _rank_or_none(local_rank, MAX_RANK)
        if local is not None:
            identity["local_rank"] = local
        gpu_id = clean_gpu(gpu)
        if gpu_id is not None:
            identity["gpu"] = gpu_id
        self.identity = identity
        # `{"event":"step","job":…,"rank":…` without the closing brace.
        encoded = json.dumps(identity, separators=(",", ":"), allow_nan=False)[1:-1]
        self._step_prefix = '{"event":"step",' + encoded
        self._epoch_start_prefix = '{"event":"epoch_start",' + encoded
        self._epoch_end_prefix = '{"event":"epoch_end",' + encoded

    def step(
        self,
        step: Any,
        duration_s: Any,
        loss: Any = None,
        scalars: Optional[Mapping[str, Any]] = None,
        time_s: Optional[float] = None,
    ) -> Optional[bytes]:
        """One step event; None when the step number or the duration is not one the agent accepts.
        A non-finite loss or scalar, or a scalar with a name the protocol forbids, is left out."""
        # Fast paths for what training loops pass (an int step, float seconds and loss): comparisons
        # with NaN are false, so the range check also turns away NaN and infinities.
        if type(step) is not int:
            step = counter_or_none(step)
            if step is None:
                return None
        elif not 0 <= step <= _MAX_COUNTER:
            return None
        if type(duration_s) is not float:
            duration_s = finite_or_none(duration_s)
            if duration_s is None:
                return None
        if not 0.0 < duration_s <= MAX_STEP_DURATION_S:
            return None
        line = f'{self._step_prefix}{_time_field(time_s)},"step":{step},"duration_s":{duration_s!r}'
        if loss is not None:
            if type(loss) is not float:
                loss = finite_or_none(loss)
            elif not _isfinite(loss):
                loss = None
            if loss is not None:
                line += f',"loss":{loss!r}'
        if scalars:
            line += _scalars_field(scalars)
        return (line + "}").encode("utf-8")

    def epoch_start(self, epoch: Any, allocator: Optional[Mapping[str, Any]] = None,
                    time_s: Optional[float] = None) -> Optional[bytes]:
        return self._epoch(self._epoch_start_prefix, epoch, None, allocator, time_s)

    def epoch_end(self, epoch: Any, loss: Any = None, allocator: Optional[Mapping[str, Any]] = None,
                  time_s: Optional[float] = None) -> Optional[bytes]:
        return self._epoch(self._epoch_end_prefix, epoch, loss, allocator, time_s)

    @staticmethod
    def _epoch(prefix: str, epoch: Any, loss: Any, allocator: Optional[Mapping[str, Any]],
               time_s: Optional[float]) -> Optional[bytes]:
        number = counter_or_none(epoch)
        if number is None:
            return None
        line = f'{prefix}{_time_field(time_s)},"epoch":{number}'
        if loss is not None:
            value = finite_or_none(loss)
            if value is not None:
                line += f',"loss":{value!r}'
        if allocator:
            for key in ("allocated_bytes", "reserved_bytes", "peak_allocated_bytes"):
                count = counter_or_none(allocator.get(key))
                if count is not None:
                    line += f',"{key}":{count}'
        return (line + "}").encode("utf-8")


def _time_field(time_s: Optional[float]) -> str:
    if time_s is None:
        return ""
    if type(time_s) is float and 0.0 < time_s < math.inf:  # time.time()
        return f',"time":{time_s!r}'
    value = finite_or_none(time_s)
    return f',"time":{value!r}' if value is not None and value > 0 else ""


def _scalars_field(scalars: Mapping[str, Any]) -> str:
    """`,"scalars":{…}` with the valid names and finite values (the first 32), or "" when none is."""
    parts = []
    for name, raw in scalars.items():
        if not isinstance(name, str) or _SCALAR_NAME.match(name) is None:
            continue
        value = finite_or_none(raw)
        if value is None:
            continue
        parts.append(f'"{name}":{value!r}')
        if len(parts) == MAX_SCALARS:
            break
    return ',"scalars":{' + ",".join(parts) + "}" if parts else ""
