import json
import os
import socket
import threading
import time
from pathlib import Path

import gpuscope

from gpuscope._sender import PENDING_MAX_BYTES, SYSTEM_SOCKET_PATH, EventSender, socket_paths


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_event_is_one_datagram_on_the_agents_socket(event_socket):
    sender = EventSender()
    assert sender.send(b'{"event":"step","job":"j","rank":0,"step":1,"duration_s":0.5}')
    assert sender.send(b'{"event":"step","job":"j","rank":0,"step":2,"duration_s":0.5}')
    assert event_socket.receive()["step"] == 1
    assert event_socket.receive()["step"] == 2
    assert sender.stats()["sent"] == 2 and sender.stats()["socket_path"] == str(event_socket.path)


def test_without_an_agent_events_are_dropped_counted_and_cost_no_system_call_until_the_interval_passes(tmp_path):
    clock = FakeClock()
    sender = EventSender(socket_path=str(tmp_path / "absent.sock"), clock=clock)
    for _ in range(1000):
        assert sender.send(b"{}") is False
    assert sender.unreachable == 1000
    assert sender.connect_attempts == 1  # one try, then nothing for a second
    clock.now += 1.0
    sender.send(b"{}")
    assert sender.connect_attempts == 2


def test_an_agent_started_after_the_job_is_found_within_the_reconnect_interval(event_socket):
    event_socket.close()
    clock = FakeClock()
    # Only this socket: an agent on this host may be listening at the default path.
    sender = EventSender(socket_path=str(event_socket.path), clock=clock)
    assert not sender.send(b'{"n":1}')
    rebound = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    rebound.bind(str(event_socket.path))
    event_socket.sock = rebound
    rebound.settimeout(2)
    assert not sender.send(b'{"n":2}')  # still within the second
    clock.now += 1.0
    assert sender.send(b'{"n":3}')
    assert event_socket.receive() == {"n": 3}


def test_an_agent_that_restarts_is_found_again_by_the_next_event_once_a_reconnect_is_due(event_socket):
    clock = FakeClock()
    sender = EventSender(clock=clock)
    assert sender.send(b'{"n":1}')
    assert event_socket.receive() == {"n": 1}
    # The agent restarts: a new socket behind the same path.
    event_socket.sock.close()
    event_socket.path.unlink()
    restarted = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    restarted.bind(str(event_socket.path))
    restarted.settimeout(2)
    event_socket.sock = restarted
    clock.now += 1.0
    assert sender.send(b'{"n":2}')  # ECONNREFUSED on the old socket, reconnect, resend
    assert event_socket.receive() == {"n": 2}
    assert sender.unreachable == 0


def test_a_full_receive_queue_never_blocks_and_loses_only_what_the_pending_bound_cannot_hold(event_socket):
    # Before events were kept for the next send, every refused event was dropped (sent + buffer_full
    # == 5000). Now a refused event waits (at most PENDING_MAX_BYTES of whole lines) for the next one,
    # so an unread socket ends with some kept (pending), the oldest of the rest dropped as buffer_full:
    # still nothing waits, and every event is accounted for exactly once.
    sender = EventSender()
    payload = b'{"event":"step","pad":"' + b"x" * 1000 + b'"}'
    started = time.perf_counter()
    for _ in range(5000):
        sender.send(payload)
    elapsed = time.perf_counter() - started
    stats = sender.stats()
    assert stats["buffer_full"] > 0 and stats["pending"] == PENDING_MAX_BYTES // (len(payload) + 1)
    assert stats["sent"] + stats["buffer_full"] + stats["pending"] == 5000
    assert elapsed < 5.0
    received = event_socket.pending()
    assert sum(len(datagram.split(b"\n")) for datagram in received) == sender.sent


def test_a_stale_socket_file_without_an_agent_is_passed_over_for_the_next_path(monkeypatch):
    import tempfile
    from pathlib import Path

    from gpuscope import _sender

    directory = Path(tempfile.mkdtemp(prefix="gpuscope-"))
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(str(directory / "stale.sock"))
    stale.close()  # the file stays, nothing listens: connect() is refused
    runtime = directory / "run"
    (runtime / "gpuscope").mkdir(parents=True)
    live = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    live.bind(str(runtime / "gpuscope" / "events.sock"))
    live.settimeout(2)
    monkeypatch.setenv("GPUSCOPE_EVENTS_SOCKET", str(directory / "stale.sock"))
    monkeypatch.setattr(_sender, "SYSTEM_SOCKET_PATH", str(directory / "no-system.sock"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    try:
        sender = EventSender()
        assert sender.send(b'{"n":1}')
        assert json.loads(live.recv(100)) == {"n": 1}
        assert sender.path == str(runtime / "gpuscope" / "events.sock")
    finally:
        live.close()
        for leftover in (directory / "stale.sock", runtime / "gpuscope" / "events.sock"):
            leftover.unlink()
        (runtime / "gpuscope").rmdir()
        runtime.rmdir()
        directory.rmdir()


def test_socket_paths_follow_the_readme_order():
    assert socket_paths({}) == [SYSTEM_SOCKET_PATH]
    assert socket_paths({"GPUSCOPE_EVENTS_SOCKET": "/tmp/a.sock", "XDG_RUNTIME_DIR": "/run/user/1000"}) == [
        "/tmp/a.sock", SYSTEM_SOCKET_PATH, "/run/user/1000/gpuscope/events.sock"]


def test_an_explicit_socket_path_is_the_only_one_tried(event_socket, tmp_path):
    sender = EventSender(socket_path=str(tmp_path / "elsewhere.sock"))
    assert not sender.send(b"{}")
    assert event_socket.pending() == []


def test_invalid_events_are_counted_not_sent(event_socket):
    sender = EventSender()
    assert not sender.send(None)
    assert sender.invalid == 1 and sender.connect_attempts == 0


# -- events the agent's full queue refused: kept, and sent with the next event ---------------------------


def max_dgram_qlen() -> int:
    return int(Path("/proc/sys/net/unix/max_dgram_qlen").read_text())


def event(n: int, pad: int = 0) -> bytes:
    return b'{"event":"step","job":"j","rank":0,"step":%d,"duration_s":0.5,"pad":"%s"}' % (n, b"x" * pad)


def lines_of(datagrams):
    """Every line of every datagram, each checked to be one JSON object."""
    lines = []
    for datagram in datagrams:
        for line in datagram.split(b"\n"):
            value = json.loads(line)
            assert isinstance(value, dict), line
            lines.append(value)
    return lines


def fill_until_refused(sender: EventSender, first: int = 0) -> int:
    """Sends numbered events until the agent's queue refuses one (it is then kept): the next number."""
    n = first
    while sender.stats()["pending"] == 0:
        assert sender.send(event(n))
        n += 1
        assert n < 100_000, "the queue never filled"
    return n


def test_events_a_full_queue_refuses_travel_with_later_events_each_exactly_once_and_in_order(event_socket):
    qlen = max_dgram_qlen()
    sender = EventSender()
    n = fill_until_refused(sender)
    # The kernel queues max_dgram_qlen + 1 datagrams however large the buffer (fewer if the sender's
    # SO_SNDBUF runs out first); the refused event is kept rather than dropped.
    assert n - 1 == sender.sent <= qlen + 1
    for _ in range(10):  # the queue stays full: these are kept too
        assert sender.send(event(n))
        n += 1
    assert sender.stats()["pending"] == 11 and sender.sent == n - 11
    received = []
    for _ in range(5):  # the agent reads a little; the next event takes everything kept with it
        received += [event_socket.sock.recv(65536) for _ in range(2)]
        for _ in range(4):
            assert sender.send(event(n))
            n += 1
    received += event_socket.pending()
    assert sender.flush()
    received += event_socket.pending()

    lines = lines_of(received)
    assert [line["step"] for line in lines] == list(range(n))  # each once, in the order sent
    several = [datagram.count(b"\n") + 1 for datagram in received if b"\n" in datagram]
    assert several and several[0] == 12  # the 11 kept, then the event that carried them
    assert len(received) < n
    stats = sender.stats()
    assert stats["sent"] == n and stats["pending"] == 0
    assert stats["deferred"] > 0 and stats["buffer_full"] == 0 and stats["unreachable"] == 0
    assert all(len(datagram) <= 8192 for datagram in received)


def test_beyond_the_pending_bound_the_oldest_kept_events_are_dropped_and_counted(event_socket):
    sender = EventSender()
    n = fill_until_refused(sender)
    queued = sender.sent
    pad = 500
    size = len(event(n, pad)) + 1
    room = PENDING_MAX_BYTES // size
    first_big = n
    for _ in range(room + 5):
        sender.send(event(n, pad))
        n += 1
    stats = sender.stats()
    # The one small refused event plus 5 of the big ones fell out, oldest first.
    assert stats["pending"] == room and stats["buffer_full"] == 6
    received = event_socket.pending()
    assert sender.flush()
    received += event_socket.pending()
    assert len(received[-1]) <= PENDING_MAX_BYTES
    steps = [line["step"] for line in lines_of(received)]
    assert steps == list(range(queued)) + list(range(first_big + 5, n))
    stats = sender.stats()
    assert stats["sent"] + stats["buffer_full"] == n and stats["deferred"] == room


def test_a_datagram_with_kept_events_holds_at_most_8_kib(event_socket):
    sender = EventSender()
    n = fill_until_refused(sender)
    for _ in range(20):
        sender.send(event(n, 1900))
        n += 1
    assert sender._pending_bytes <= PENDING_MAX_BYTES
    event_socket.pending()
    assert sender.send(event(n, 4096 - len(event(n)) - 20))  # near the protocol's largest
    datagrams = event_socket.pending()
    assert len(datagrams) == 1 and 4096 < len(datagrams[0]) <= 8192
    assert sender.stats()["pending"] == 0


def test_flush_sends_what_is_kept_and_keeps_it_while_the_queue_is_still_full(event_socket):
    sender = EventSender()
    assert sender.flush()  # nothing kept
    n = fill_until_refused(sender)
    assert not sender.flush()  # still full: kept, not dropped
    assert sender.stats()["pending"] == 1 and sender.buffer_full == 0
    queued = event_socket.pending()
    assert sender.flush()
    flushed = event_socket.pending()
    assert len(flushed) == 1 and [line["step"] for line in lines_of(flushed)] == [n - 1]
    assert [line["step"] for line in lines_of(queued)] == list(range(n - 1))
    assert sender.stats()["deferred"] == 1 and sender.stats()["pending"] == 0


def test_monitor_flush_and_close_send_what_is_kept(event_socket):
    monitor = gpuscope.Monitor("flushing", rank=0, gpu=0, socket_path=str(event_socket.path))
    step = 0
    while monitor.stats()["pending"] == 0:
        assert monitor.record_step(step, 0.1)  # kept counts as not dropped
        step += 1
    assert monitor.record_step(step, 0.1)
    step += 1
    assert not monitor.flush()
    received = event_socket.pending()
    assert monitor.flush()
    received += event_socket.pending()
    assert [line["step"] for line in lines_of(received)] == list(range(step))

    while monitor.stats()["pending"] == 0:
        monitor.record_step(step, 0.1)
        step += 1
    received = event_socket.pending()
    monitor.close()  # one non-blocking try: the queue was just read, so it goes
    received += event_socket.pending()
    assert lines_of(received)[-1]["step"] == step - 1
    stats = monitor.stats()
    assert stats["pending"] == 0 and stats["buffer_full"] == 0


def test_close_counts_what_a_still_full_queue_refuses_as_buffer_full(event_socket):
    sender = EventSender()
    n = fill_until_refused(sender)
    sender.send(event(n))
    sender.close()
    stats = sender.stats()
    assert stats["pending"] == 0 and stats["buffer_full"] == 2 and stats["sent"] == n - 1


def test_kept_events_are_discarded_as_unreachable_when_the_agent_goes_away(event_socket):
    clock = FakeClock()
    sender = EventSender(clock=clock)
    n = fill_until_refused(sender)
    sender.send(event(n))
    assert sender.stats()["pending"] == 2
    event_socket.close()  # the agent stops: its socket is gone (ECONNREFUSED on the connected socket)
    assert not sender.send(event(n + 1))
    stats = sender.stats()
    assert stats["pending"] == 0 and stats["unreachable"] == 3 and stats["buffer_full"] == 0
    assert stats["sent"] == n - 1 and stats["deferred"] == 0


def test_flush_discards_kept_events_as_unreachable_when_the_agent_is_gone(event_socket):
    sender = EventSender(clock=FakeClock())
    fill_until_refused(sender)
    event_socket.close()
    assert sender.flush()
    assert sender.stats()["pending"] == 0 and sender.unreachable == 1


def test_an_agent_that_restarts_gets_no_events_kept_for_the_old_one(event_socket):
    clock = FakeClock()
    sender = EventSender(clock=clock)
    n = fill_until_refused(sender)
    event_socket.sock.close()
    event_socket.path.unlink()
    restarted = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    restarted.bind(str(event_socket.path))
    event_socket.sock = restarted
    clock.now += 1.0
    assert sender.send(event(n))  # ECONNREFUSED, the kept event discarded, reconnect, sent alone
    assert [line["step"] for line in lines_of(event_socket.pending())] == [n]
    assert sender.unreachable == 1 and sender.stats()["pending"] == 0


def test_a_thread_that_cannot_take_the_pending_lock_sends_alone_and_never_waits(event_socket):
    sender = EventSender()
    n = fill_until_refused(sender)
    assert sender._pending_lock.acquire(blocking=False)  # another thread is busy with the kept events
    try:
        started = time.perf_counter()
        assert not sender.send(event(n))  # queue full, and it cannot be kept: dropped, counted
        assert time.perf_counter() - started < 0.5
        assert sender.buffer_full == 1 and sender.stats()["pending"] == 1
        event_socket.pending()
        assert sender.send(event(n + 1))  # alone, past the kept one
        assert [line["step"] for line in lines_of(event_socket.pending())] == [n + 1]
        assert not sender.flush()
    finally:
        sender._pending_lock.release()
    assert sender.send(event(n + 2))
    assert [line["step"] for line in lines_of(event_socket.pending())] == [n - 1, n + 2]


def test_several_threads_sending_account_for_every_event_once(event_socket):
    sender = EventSender()
    threads, per_thread = 4, 3000
    stop = threading.Event()
    received = []

    def read_slowly() -> None:  # an agent that falls behind now and then
        while not stop.is_set():
            time.sleep(0.001)
            received.extend(event_socket.pending())

    def send(worker: int) -> None:
        for i in range(per_thread):
            sender.send(event(worker * per_thread + i))

    # Connected first: threads that find another one connecting drop their events as unreachable, and
    # while it is in connect() (without the GIL) one of them can run through all of its sends.
    assert sender.send(event(-1))
    reader = threading.Thread(target=read_slowly)
    reader.start()
    workers = [threading.Thread(target=send, args=(w,)) for w in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=30)
    stop.set()
    reader.join(timeout=5)
    received.extend(event_socket.pending())
    sender.flush()
    received.extend(event_socket.pending())
    stats = sender.stats()
    steps = [line["step"] for line in lines_of(received)]
    assert steps[0] == -1 and steps.count(-1) == 1
    steps = steps[1:]
    assert len(steps) == len(set(steps)) == stats["sent"] - 1
    # (Not asserted: each thread's order. An event a thread sends alone, because another thread holds
    # the kept ones, can overtake its own kept event in that other thread's datagram.)
    assert stats["sent"] + stats["buffer_full"] + stats["pending"] == threads * per_thread + 1
    assert stats["unreachable"] == 0 and stats["deferred"] > 0


def test_a_forked_child_starts_without_the_parents_kept_events(event_socket):
    sender = EventSender()
    n = fill_until_refused(sender)
    sender._reconnecting.acquire()  # as if another thread were reconnecting at the fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            report = {"pending": sender.stats()["pending"],
                      "lock_free": sender._pending_lock.acquire(blocking=False),
                      "reconnect_free": sender._reconnecting.acquire(blocking=False),
                      "flushed": sender.flush()}
            os.write(write_end, json.dumps(report).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    report = json.loads(os.read(read_end, 1000))
    os.close(read_end)
    sender._reconnecting.release()
    assert os.WEXITSTATUS(status) == 0
    assert report == {"pending": 0, "lock_free": True, "reconnect_free": True, "flushed": True}
    assert sender.stats()["pending"] == 1  # the parent still has its own
    event_socket.pending()
    assert sender.flush()
    assert [line["step"] for line in lines_of(event_socket.pending())] == [n - 1]  # sent once, by the parent
