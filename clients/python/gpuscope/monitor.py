"""Monitor: tells the agent on this node about a training loop's steps and epochs.

Fire-and-forget (clients/README.md): each event is one non-blocking datagram; nothing waits on the
agent and nothing is raised into the training loop. An event the agent's full queue refuses is kept
(a few KiB at most) and travels with the next event or flush(); what is lost is counted in stats().
The rank's identity (job, rank, world size, local rank, GPU) is read when the first event is sent and
again, until torch.distributed and the GPU are known, at most once a second, because a script usually
creates its Monitor before init_process_group() and set_device().
"""

from __future__ import annotations

import time
from typing import Any, Dict, Optional, Union

from . import _torch_state
from ._devices import process_gpu
from ._identity import job_name, place
from ._sender import EventSender
from ._wire import EventEncoder
from .health import HealthReport, check

IDENTITY_RECHECK_S = 1.0

_perf_counter = time.perf_counter
_wall = time.time
_monotonic = time.monotonic


class StepTimer:
    """`with monitor.step() as s:` times the block and sends the step when it ends without an exception.
    Set `s.loss` (a float: pass loss.item(), not the tensor, unless a sync here is fine) and
    `s.scalars["lr"] = ...` inside the block."""

    __slots__ = ("_monitor", "step", "loss", "scalars", "duration_s", "_started")

    def __init__(self, monitor: "Monitor", step: int) -> None:
        self._monitor = monitor
        self.step = step
        self.loss: Any = None
        self.scalars: Dict[str, Any] = {}
        self.duration_s: Optional[float] = None
        self._started = 0.0

    def __enter__(self) -> "StepTimer":
        self._started = _perf_counter()
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> bool:
        self.duration_s = _perf_counter() - self._started
        if exc_type is None:
            self._monitor._send_step(self.step, self.duration_s, self.loss, self.scalars)
        return False


class EpochScope:
    """`with monitor.epoch(n) as e:` sends epoch_start now and epoch_end when the block ends without an
    exception; set `e.loss` for the epoch's loss."""

    __slots__ = ("_monitor", "epoch", "loss")

    def __init__(self, monitor: "Monitor", epoch: int) -> None:
        self._monitor = monitor
        self.epoch = epoch
        self.loss: Any = None

    def __enter__(self) -> "EpochScope":
        self._monitor.epoch_start(self.epoch)
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> bool:
        if exc_type is None:
            self._monitor.epoch_end(self.epoch, self.loss)
        return False


class Monitor:
    """One per training process (rank).

    job: the training job's name (default: $GPUSCOPE_JOB, $TORCHELASTIC_RUN_ID, the script's name); it
    must be the same on every rank. rank, world_size, local_rank: default torch.distributed, then $RANK,
    $WORLD_SIZE, $LOCAL_RANK. gpu: the GPU's NVML index or UUID (default: the current CUDA device's UUID
    once the process has initialised CUDA; else the agent finds the GPU the process holds memory on).
    socket_path: that socket only (default: $GPUSCOPE_EVENTS_SOCKET, /run/gpuscope/events.sock,
    $XDG_RUNTIME_DIR/gpuscope/events.sock, the first an agent answers on). url: the agent's HTTP API for
    check() (default $GPUSCOPE_URL, http://127.0.0.1:9400). send_time: each event carries when it
    happened (else the agent stamps its arrival). reset_peak_memory: epoch_start resets torch's peak
    allocated bytes, so each epoch_end's peak_allocated_bytes is that epoch's own peak.
    """

    def __init__(
        self,
        job: Optional[str] = None,
        *,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        local_rank: Optional[int] = None,
        gpu: Union[None, int, str] = None,
        socket_path: Optional[str] = None,
        url: Optional[str] = None,
        send_time: bool = True,
        reset_peak_memory: bool = True,
    ) -> None:
        self.job = job_name(job)
        self._explicit = (rank, world_size, local_rank)
        self._explicit_gpu = gpu
        self._url = url
        self._send_time = send_time
        self._reset_peak_memory = reset_peak_memory
        self._sender = EventSender(socket_path)
        self._encoder: Optional[EventEncoder] = None
        self._settled = False  # identity final: no more rechecks
        self._recheck_at = 0.0
        self._next_step = 0

    # -- steps ---------------------------------------------------------------------------------------

    def step(self, step: Optional[int] = None) -> StepTimer:
        """A context manager that times one step; `step` defaults to the previous step + 1 (from 0)."""
        return StepTimer(self, self._next_step if step is None else step)

    def record_step(self, step: int, duration_s: float, loss: Any = None, **scalars: Any) -> bool:
        """Sends a step timed elsewhere: its number, wall time in seconds, optional loss and up to 32
        more named numbers (lr=3e-4). False when the event was dropped; never raises."""
        return self._send_step(step, duration_s, loss, scalars)

    def _send_step(self, step: Any, duration_s: Any, loss: Any, scalars: Optional[Dict[str, Any]]) -> bool:
        try:
            if type(step) is int and step >= self._next_step:
                self._next_step = step + 1
            sender = self._sender
            if sender.unreachable_now():  # no agent: not even the encoding is paid for
                return sender.drop_unreachable()
            encoder = self._encoder
            if encoder is None or (not self._settled and _monotonic() >= self._recheck_at):
                encoder = self._refresh_identity()
            return sender.send(encoder.step(step, duration_s, loss, scalars, _wall() if self._send_time else None))
        except Exception:
            return False

    # -- epochs --------------------------------------------------------------------------------------

    def epoch(self, epoch: int) -> EpochScope:
        """A context manager: epoch_start on entry, epoch_end (with `.loss`) on a normal exit."""
        return EpochScope(self, epoch)

    def epoch_start(self, epoch: int) -> bool:
        """Sends epoch_start with the allocator's figures, then (reset_peak_memory) resets the peak."""
        try:
            encoder = self._refresh_identity() if not self._settled else self._encoder
            event = encoder.epoch_start(epoch, _torch_state.allocator_bytes(),
                                        _wall() if self._send_time else None)
            if self._reset_peak_memory:
                _torch_state.reset_peak()
            return self._sender.send(event)
        except Exception:
            return False

    def epoch_end(self, epoch: int, loss: Any = None) -> bool:
        """Sends epoch_end with the loss and the allocator's allocated, reserved and peak bytes."""
        try:
            encoder = self._encoder if self._encoder is not None else self._refresh_identity()
            return self._sender.send(encoder.epoch_end(epoch, loss, _torch_state.allocator_bytes(),
                                                       _wall() if self._send_time else None))
        except Exception:
            return False

    # -- the rest ------------------------------------------------------------------------------------

    def check(self, fail_on: Any = None, *, raise_on_failure: bool = False, all_gpus: bool = False) -> HealthReport:
        """gpuscope.check() against this Monitor's agent."""
        return check(fail_on, raise_on_failure=raise_on_failure, url=self._url, all_gpus=all_gpus)

    def stats(self) -> Dict[str, Any]:
        """What became of the events: sent (of these, deferred: refused once by the agent's full queue,
        sent later with another event), pending (kept for the next event), and the dropped ones:
        unreachable, buffer_full, too_large, invalid; connect_attempts, and the socket the agent was
        found at."""
        return self._sender.stats()

    def flush(self) -> bool:
        """One non-blocking try to send the events the agent's full queue refused (they otherwise travel
        with the next event); True when none is left waiting. Never waits."""
        try:
            return self._sender.flush()
        except Exception:
            return False

    @property
    def identity(self) -> Dict[str, Any]:
        """The fields every event carries (job, rank, world_size, local_rank, gpu)."""
        encoder = self._encoder if self._encoder is not None else self._refresh_identity()
        return dict(encoder.identity)

    def close(self) -> None:
        """One last non-blocking try for any refused events, then the socket is closed."""
        self._sender.close()

    def __enter__(self) -> "Monitor":
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.close()
        return False

    def _refresh_identity(self) -> EventEncoder:
        rank, world_size, local_rank = self._explicit
        where = place(rank, world_size, local_rank)
        gpu = self._explicit_gpu if self._explicit_gpu is not None else self._current_gpu()
        encoder = EventEncoder(self.job, where.rank, where.world_size, where.local_rank, gpu)
        if self._encoder is None or encoder.identity != self._encoder.identity:
            self._encoder = encoder
        rank_known = rank is not None or where.from_process_group or _torch_state.torch_module() is None
        self._settled = rank_known and gpu is not None
        self._recheck_at = _monotonic() + IDENTITY_RECHECK_S
        return self._encoder

    @staticmethod
    def _current_gpu() -> Optional[str]:
        ordinals = _torch_state.current_ordinals()
        return process_gpu(ordinals[0]).uuid if ordinals else None
