"""Fire-and-forget delivery of encoded events to the agent's Unix datagram socket.

One non-blocking send() per event on a connected AF_UNIX/SOCK_DGRAM socket: nothing waits on the
agent and nothing is raised. Without an agent an event costs no system call, because the socket paths
are tried again at most once per reconnect interval (1 s): an agent that starts after the job is found
within a second, and one that restarts (a new socket behind the same path) too.

The kernel queues at most net.unix.max_dgram_qlen datagrams (10 by default) on the agent's socket,
whatever its buffer size, so ranks stepping together, or an agent thread briefly off the CPU, find it
full (EAGAIN). Such an event is not dropped at once: it is kept (at most PENDING_MAX_BYTES of whole
lines, the oldest dropped first) and travels with the next event, in one datagram of JSON lines (the
agent reads several events a datagram), or with flush(). Nothing waits or retries for it and no thread
is started: the next send(), flush(), close() or the interpreter's exit is its only chance.
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
import time
import weakref
from typing import Callable, List, Mapping, Optional

from ._wire import MAX_EVENT_BYTES

SYSTEM_SOCKET_PATH = "/run/gpuscope/events.sock"
USER_SOCKET_SUFFIX = "gpuscope/events.sock"  # under $XDG_RUNTIME_DIR
RECONNECT_INTERVAL_S = 1.0
# What a refused event may wait in, counting one newline a line: with the next event (at most
# MAX_EVENT_BYTES) a datagram holds at most 8 KiB, half of what the agent reads at once (16 KiB).
PENDING_MAX_BYTES = 4096


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

    Thread-safe in the sense that matters here: any thread may send and none ever waits for another.
    At most one reconnects at a time; the events kept for the next send are touched only under a lock
    taken with acquire(blocking=False): a thread that cannot have it sends its event alone (and drops
    it, counted, when the queue refuses it). A lost count under a race is acceptable (the counters are
    for people, not for control)."""

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
        # Events the agent's queue refused, oldest first, without their newlines; each takes len + 1 of
        # PENDING_MAX_BYTES. Empty whenever no agent is connected.
        self._pending: List[bytes] = []
        self._pending_bytes = 0
        self._pending_lock = threading.Lock()
        self.path: Optional[str] = None  # where the agent was found
        self.sent = 0  # handed to the kernel for the agent (alone or in a datagram with others)
        self.deferred = 0  # of those: refused once by a full queue, sent later with another event
        self.unreachable = 0  # dropped: no agent listens at any path (or it went away, with what was kept)
        self.buffer_full = 0  # dropped: the agent's queue was full (EAGAIN) and it could not be kept
        self.too_large = 0  # dropped: over the protocol's 4096 bytes
        self.invalid = 0  # dropped: a step number, epoch or duration the protocol does not allow
        self.connect_attempts = 0
        _live_senders.add(self)

    def unreachable_now(self) -> bool:
        """True when no agent is connected and the next try is not yet due: the event would be dropped,
        so the caller need not even encode it (drop_unreachable counts it)."""
        return self._sock is None and self._clock() < self._next_attempt

    def drop_unreachable(self) -> bool:
        self.unreachable += 1
        return False

    def send(self, data: Optional[bytes]) -> bool:
        """Hands one encoded event (None: it was invalid) to the agent, with any events kept from
        before; False when it was dropped (True also when it is kept for the next send)."""
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
        if self._pending:
            return self._send_with_pending(sock, data)
        try:
            sock.send(data)
        except BlockingIOError:
            return self._keep(data)
        except OSError:
            return self._send_elsewhere(sock, data)
        except Exception:  # never into the training loop, whatever the platform throws
            self.unreachable += 1
            return False
        self.sent += 1
        return True

    def flush(self) -> bool:
        """One non-blocking try to send the events kept from refused sends, as one datagram; True when
        none is left kept. Never waits: a full queue keeps them for the next event or flush()."""
        if not self._pending:
            return True
        lock = self._pending_lock
        if not lock.acquire(blocking=False):
            return False  # another thread is sending them right now
        try:
            pending = self._pending
            if not pending:
                return True
            sock = self._sock
            if sock is None:
                self._discard_pending()
                return True
            try:
                sock.send(b"\n".join(pending))
            except BlockingIOError:
                return False
            except Exception:
                self._discard_pending()
                self._forget(sock)
                return True
            self.sent += len(pending)
            self.deferred += len(pending)
            pending.clear()
            self._pending_bytes = 0
            return True
        finally:
            lock.release()

    def stats(self) -> dict:
        return {
            "sent": self.sent,
            "deferred": self.deferred,
            "pending": len(self._pending),
            "unreachable": self.unreachable,
            "buffer_full": self.buffer_full,
            "too_large": self.too_large,
            "invalid": self.invalid,
            "connect_attempts": self.connect_attempts,
            "socket_path": self.path,
        }

    def close(self) -> None:
        """One last non-blocking try for the kept events (those still refused count as buffer_full),
        then the socket is closed."""
        try:
            if not self.flush() and self._pending_lock.acquire(blocking=False):
                try:
                    self.buffer_full += len(self._pending)
                    self._pending.clear()
                    self._pending_bytes = 0
                finally:
                    self._pending_lock.release()
        except Exception:
            pass
        sock = self._sock
        self._sock = None
        if sock is not None:
            sock.close()

    # -- the events a full queue refused --------------------------------------------------------------

    def _keep(self, data: bytes) -> bool:
        """The queue refused `data` sent alone: kept for the next send unless another thread holds the
        kept events (then it is dropped: nothing waits)."""
        lock = self._pending_lock
        if not lock.acquire(blocking=False):
            self.buffer_full += 1
            return False
        try:
            return self._append_pending(data)
        finally:
            lock.release()

    def _send_with_pending(self, sock: socket.socket, data: bytes) -> bool:
        """Sends the kept events and `data` as one datagram of JSON lines, oldest first."""
        lock = self._pending_lock
        if not lock.acquire(blocking=False):
            # Another thread is sending the kept events: this one goes alone, and is not kept if refused.
            try:
                sock.send(data)
            except BlockingIOError:
                self.buffer_full += 1
                return False
            except OSError:
                return self._send_elsewhere(sock, data)
            except Exception:
                self.unreachable += 1
                return False
            self.sent += 1
            return True
        gone = False
        try:
            pending = self._pending
            kept = len(pending)
            pending.append(data)
            try:
                sock.send(b"\n".join(pending))
            except BlockingIOError:
                pending.pop()
                return self._append_pending(data)
            except OSError:
                pending.pop()
                self._discard_pending()  # for an agent that is gone
                gone = True  # `data` is tried below, without the lock
            except Exception:
                pending.pop()
                self.unreachable += 1
                return False
            else:
                self.sent += kept + 1
                self.deferred += kept
                pending.clear()
                self._pending_bytes = 0
                return True
        finally:
            lock.release()
        return self._send_elsewhere(sock, data) if gone else False

    def _append_pending(self, data: bytes) -> bool:
        """With the lock held: keeps `data` as the newest line, dropping the oldest beyond the bound."""
        size = len(data) + 1
        if size > PENDING_MAX_BYTES:  # only an event of the protocol's full 4096 bytes
            self.buffer_full += 1
            return False
        pending = self._pending
        pending.append(data)
        total = self._pending_bytes + size
        while total > PENDING_MAX_BYTES:
            total -= len(pending.pop(0)) + 1
            self.buffer_full += 1
        self._pending_bytes = total
        return True

    def _discard_pending(self) -> None:
        """With the lock held: the agent the kept events were for is gone."""
        self.unreachable += len(self._pending)
        self._pending.clear()
        self._pending_bytes = 0

    def _reset_after_fork(self) -> None:
        """In a forked child: the kept events are the parent's to send, and a lock another thread of the
        parent held would stay held forever."""
        self._pending = []
        self._pending_bytes = 0
        self._pending_lock = threading.Lock()
        self._reconnecting = threading.Lock()

    # -- the agent's socket ---------------------------------------------------------------------------

    def _send_elsewhere(self, sock: socket.socket, data: bytes) -> bool:
        """The agent went away (ECONNREFUSED) or its socket was replaced: what was kept for it is lost,
        and `data` gets one more try if a reconnect is due, so a restarted agent is found by the next
        event within the interval."""
        self._forget(sock)
        sock = self._reconnect_if_due()
        if sock is None:
            self.unreachable += 1
            return False
        try:
            sock.send(data)
        except BlockingIOError:
            return self._keep(data)
        except Exception:
            self._forget(sock)
            self.unreachable += 1
            return False
        self.sent += 1
        return True

    def _forget(self, sock: socket.socket) -> None:
        if self._sock is sock:
            self._sock = None
            if self._pending and self._pending_lock.acquire(blocking=False):
                # (Held by another thread: it is sending them to the same gone agent and discards them.)
                try:
                    self._discard_pending()
                finally:
                    self._pending_lock.release()
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


# Every sender alive, for the last flush at exit and the reset in a forked child.
_live_senders: "weakref.WeakSet[EventSender]" = weakref.WeakSet()


def _flush_all_at_exit() -> None:
    for sender in list(_live_senders):
        try:
            sender.flush()
        except Exception:
            pass


def _reset_all_after_fork() -> None:
    for sender in list(_live_senders):
        try:
            sender._reset_after_fork()
        except Exception:
            pass


atexit.register(_flush_all_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_all_after_fork)


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
