"""Fire-and-forget delivery of encoded events to the agent's Unix datagram socket.

One non-blocking send() per event on a connected AF_UNIX/SOCK_DGRAM socket: nothing waits on the
agent and nothing is raised. Without an agent an event costs no system call, because the socket paths
are tried again at most once per reconnect interval (1 s): an agent that starts after the job is found
within a second, and one that restarts (a new socket behind the same path) too.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Callable, List, Mapping, Optional

from ._wire import MAX_EVENT_BYTES

SYSTEM_SOCKET_PATH = "/run/gpuscope/events.sock"
USER_SOCKET_SUFFIX = "gpuscope/events.sock"  # under $XDG_RUNTIME_DIR
RECONNECT_INTERVAL_S = 1.0


def socket_paths(environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """Where an agent may listen, in the order clients/README.md gives: $GPUSCOPE_EVENTS_SOCKET, the
    system path, then the user's runtime directory."""
    env = os.environ if environ is None else environ
    paths = []
    explicit = env.get("GPUSCOPE_EVENTS_SOCKET")
    if explicit:
        paths.append(explicit)
    paths.append(SYSTEM_SOCKET_PATH)
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        paths.append(os.path.join(runtime, USER_SOCKET_SUFFIX))
    return paths


class EventSender:
    """Sends datagrams to the first socket path an agent answers on, and counts what became of each.

    Thread-safe in the sense that matters here: any thread may send; at most one reconnects at a time,
    and a lost count under a race is acceptable (the counters are for people, not for control)."""

    def __init__(
        self,
        socket_path: Optional[str] = None,
        reconnect_interval_s: float = RECONNECT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fixed_path = socket_path
        self._reconnect_interval_s = reconnect_interval_s
        self._clock = clock
        self._sock: Optional[socket.socket] = None
        self._next_attempt = 0.0  # the first send tries at once
        self._reconnecting = threading.Lock()
        self.path: Optional[str] = None  # where the agent was found
        self.sent = 0  # handed to the kernel for the agent
        self.unreachable = 0  # dropped: no agent listens at any path (or it went away)
        self.buffer_full = 0  # dropped: the agent's receive queue was full (EAGAIN)
        self.too_large = 0  # dropped: over the protocol's 4096 bytes
        self.invalid = 0  # dropped: a step number, epoch or duration the protocol does not allow
        self.connect_attempts = 0

    def unreachable_now(self) -> bool:
        """True when no agent is connected and the next try is not yet due: the event would be dropped,
        so the caller need not even encode it (drop_unreachable counts it)."""
        return self._sock is None and self._clock() < self._next_attempt

    def drop_unreachable(self) -> bool:
        self.unreachable += 1
        return False

    def send(self, data: Optional[bytes]) -> bool:
        """Hands one encoded event (None: it was invalid) to the agent; False when it was dropped."""
        if data is None:
            self.invalid += 1
            return False
        if len(data) > MAX_EVENT_BYTES:
            self.too_large += 1
            return False
        sock = self._sock
        if sock is None:
            sock = self._reconnect_if_due()
            if sock is None:
                self.unreachable += 1
                return False
        try:
            sock.send(data)
        except BlockingIOError:
            self.buffer_full += 1
            return False
        except OSError:
            # The agent went away (ECONNREFUSED) or its socket was replaced: one more try if a reconnect
            # is due, so a restarted agent is found by the next event within the interval.
            self._forget(sock)
            sock = self._reconnect_if_due()
            if sock is None:
                self.unreachable += 1
                return False
            try:
                sock.send(data)
            except BlockingIOError:
                self.buffer_full += 1
                return False
            except OSError:
                self._forget(sock)
                self.unreachable += 1
                return False
        except Exception:  # never into the training loop, whatever the platform throws
            self.unreachable += 1
            return False
        self.sent += 1
        return True

    def stats(self) -> dict:
        return {
            "sent": self.sent,
            "unreachable": self.unreachable,
            "buffer_full": self.buffer_full,
            "too_large": self.too_large,
            "invalid": self.invalid,
            "connect_attempts": self.connect_attempts,
            "socket_path": self.path,
        }

    def close(self) -> None:
        sock = self._sock
        self._sock = None
        if sock is not None:
            sock.close()

    def _forget(self, sock: socket.socket) -> None:
        if self._sock is sock:
            self._sock = None
        try:
            sock.close()
        except OSError:
            pass

    def _reconnect_if_due(self) -> Optional[socket.socket]:
        now = self._clock()
        if now < self._next_attempt or not self._reconnecting.acquire(blocking=False):
            return None
        try:
            if now < self._next_attempt:  # another thread just tried
                return self._sock
            self._next_attempt = now + self._reconnect_interval_s
            self.connect_attempts += 1
            paths = [self._fixed_path] if self._fixed_path else socket_paths()
            for path in paths:
                sock = _connect(path)
                if sock is not None:
                    self.path = path
                    self._sock = sock
                    return sock
            self.path = None
            return None
        finally:
            self._reconnecting.release()


def _connect(path: str) -> Optional[socket.socket]:
    """A non-blocking datagram socket connected to `path`; None when nothing listens there."""
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # close-on-exec, as Python's are
    except OSError:
        return None
    try:
        sock.setblocking(False)
        sock.connect(path)
    except (OSError, ValueError):  # ENOENT, ECONNREFUSED, EACCES, a path too long (OSError or ValueError)
        sock.close()
        return None
    return sock
