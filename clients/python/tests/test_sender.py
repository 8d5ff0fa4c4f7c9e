import json
import socket
import time

from gpuscope._sender import SYSTEM_SOCKET_PATH, EventSender, socket_paths


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
    sender = EventSender(clock=clock)
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


def test_a_full_receive_queue_drops_events_and_never_blocks(event_socket):
    sender = EventSender()
    payload = b'{"event":"step","pad":"' + b"x" * 1000 + b'"}'
    started = time.perf_counter()
    for _ in range(5000):
        sender.send(payload)
    elapsed = time.perf_counter() - started
    assert sender.buffer_full > 0
    assert sender.sent + sender.buffer_full == 5000
    assert elapsed < 5.0
    received = event_socket.pending()
    assert len(received) == sender.sent


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
