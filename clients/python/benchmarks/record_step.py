"""What one event costs the training loop: Monitor.record_step and `with monitor.step()`, with an agent
draining the socket (another process), with no agent at all, and with the agent's queue full (each event
kept and sent again with the next: one datagram of up to 8 KiB refused a call, the oldest dropped).

    /usr/bin/python3 clients/python/benchmarks/record_step.py [--calls 200000]

Prints the best of five runs per case in microseconds per call (timeit's convention: the minimum is the
cost with the least interference from the rest of the machine), as wall time and as CPU time.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import timeit
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpuscope  # noqa: E402
from gpuscope._wire import EventEncoder  # noqa: E402

DRAIN = """
import socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
sock.bind(sys.argv[1])
print("ready", flush=True)
while True:
    sock.recv(16384)
"""


def best_us(statement, calls: int) -> str:
    """Wall time and this process's CPU time (user + system: what the training loop's thread pays even on
    a busy machine, where the wall time also holds waits for a CPU), µs per call, best of five."""
    wall = min(timeit.repeat(statement, number=calls, repeat=5)) / calls * 1e6
    cpu = min(timeit.repeat(statement, number=calls, repeat=5, timer=time.process_time)) / calls * 1e6
    return f"{wall:6.2f} µs wall {cpu:6.2f} µs CPU"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    calls = parser.parse_args().calls
    directory = Path(tempfile.mkdtemp(prefix="gpuscope-bench-"))
    path = directory / "events.sock"
    drain = subprocess.Popen([sys.executable, "-c", DRAIN, str(path)], stdout=subprocess.PIPE, text=True)
    assert drain.stdout.readline().strip() == "ready"
    results = {}
    try:
        encoder = EventEncoder("llama-ft", rank=3, world_size=4, local_rank=3, gpu="GPU-8f3a0000-1111-2222-3333-444444444444")
        counter = iter(range(10**9))
        results["encode only (step, duration, loss, lr)"] = best_us(
            lambda: encoder.step(next(counter), 0.512, 2.31, {"lr": 3e-4}, time.time()), calls)

        raw = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        raw.connect(str(path))
        raw.setblocking(False)
        line = encoder.step(1, 0.512, 2.31, None, time.time())

        def raw_send() -> None:
            try:
                raw.send(line)
            except BlockingIOError:
                pass
        results["baseline: socket.send of an encoded event, agent draining"] = best_us(raw_send, calls)
        raw.close()

        # The sender's own work, without the kernel's: a socket whose send() does nothing, and one that
        # refuses every other datagram (each refused event kept, then sent with the next one).
        from gpuscope._sender import EventSender

        quiet = EventSender(socket_path=str(directory / "stub.sock"))
        quiet._sock = types.SimpleNamespace(send=len)
        results["EventSender.send, its own work (a send() that does nothing)"] = best_us(
            lambda: quiet.send(line), calls)

        class EveryOtherRefused:
            refuse = False

            def send(self, data: bytes) -> int:
                self.refuse = not self.refuse
                if self.refuse:
                    raise BlockingIOError
                return len(data)

        halting = EventSender(socket_path=str(directory / "stub.sock"))
        halting._sock = EveryOtherRefused()
        results["EventSender.send, its own work, every other send() refused"] = best_us(
            lambda: halting.send(line), calls)
        results["  (of these: sent / deferred / buffer_full) "] = (
            f"{halting.sent} / {halting.deferred} / {halting.buffer_full}")

        monitor = gpuscope.Monitor("llama-ft", rank=3, world_size=4, local_rank=3, gpu="GPU-8f3a", socket_path=str(path))
        results["record_step(step, 0.512, loss=2.31), agent draining"] = best_us(
            lambda: monitor.record_step(next(counter), 0.512, loss=2.31), calls)
        results["record_step(step, 0.512, loss=2.31, lr=3e-4), agent draining"] = best_us(
            lambda: monitor.record_step(next(counter), 0.512, loss=2.31, lr=3e-4), calls)

        def timed_step() -> None:
            with monitor.step() as step:
                step.loss = 2.31
        results["with monitor.step() as s: s.loss = 2.31, agent draining"] = best_us(timed_step, calls)
        stats = monitor.stats()
        results["  (of these: sent / deferred / buffer_full)"] = (
            f"{stats['sent']} / {stats['deferred']} / {stats['buffer_full']}")

        # Every send accepted, whatever the machine's load: this thread reads each datagram back at once
        # (so these two include a recv() each; their difference is record_step's own cost).
        paired = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        paired.bind(str(directory / "paired.sock"))
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        raw.connect(str(directory / "paired.sock"))
        raw.setblocking(False)
        receive = paired.recv

        def raw_send_receive() -> None:
            raw.send(line)
            receive(16384)
        results["socket.send + recv of an encoded event (every send accepted)"] = best_us(
            raw_send_receive, calls)
        raw.close()
        echoed = gpuscope.Monitor("llama-ft", rank=3, world_size=4, local_rank=3, gpu="GPU-8f3a",
                                  socket_path=str(directory / "paired.sock"))

        def step_receive() -> None:
            echoed.record_step(next(counter), 0.512, loss=2.31)
            receive(16384)
        results["record_step(step, 0.512, loss=2.31) + recv (every send accepted)"] = best_us(step_receive, calls)
        stats = echoed.stats()
        results["  (of these: sent / deferred / buffer_full)  "] = (
            f"{stats['sent']} / {stats['deferred']} / {stats['buffer_full']}")
        echoed.close()
        paired.close()

        absent = gpuscope.Monitor("llama-ft", socket_path=str(directory / "absent.sock"))
        results["record_step, no agent (dropped, no system call)"] = best_us(
            lambda: absent.record_step(next(counter), 0.512, loss=2.31), calls)

        full = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        full.bind(str(directory / "full.sock"))  # never read: its queue fills at once
        stuck = gpuscope.Monitor("llama-ft", socket_path=str(directory / "full.sock"))
        results["record_step, agent's queue full (EAGAIN, kept, oldest dropped)"] = best_us(
            lambda: stuck.record_step(next(counter), 0.512, loss=2.31), calls)
        stats = stuck.stats()
        results["  (of these: sent / buffer_full / pending)"] = (
            f"{stats['sent']} / {stats['buffer_full']} / {stats['pending']}")
        full.close()
    finally:
        drain.kill()
        drain.wait()
        for leftover in directory.iterdir():
            leftover.unlink()
        directory.rmdir()
    print(f"Python {sys.version.split()[0]} ({sys.executable}), {os.cpu_count()} CPUs, {calls} calls, best of 5")
    for case, value in results.items():
        print(f"{case:62s} {value}")


if __name__ == "__main__":
    main()
