"""Fakes that follow clients/README.md's contract exactly: the agent's event socket (a Unix datagram
socket bound here) and its HTTP API (/api/v1/summary, /api/v1/check on 127.0.0.1, port 0), plus a
torch stand-in for the CUDA paths on a machine without a GPU.

Every test runs with no agent, no NVML and no gpuscope binary reachable unless it sets one up: the
agent URL points at a closed port, the NVML library at a file that does not exist, PATH at nothing.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import types
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PACKAGE_ROOT))

from gpuscope import _nvml, health, metrics  # noqa: E402

REPOSITORY_ROOT = PACKAGE_ROOT.parents[1]


def closed_port_url() -> str:
    """An http://127.0.0.1 URL nothing listens on (a port just bound and released)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}"


@pytest.fixture(autouse=True)
def no_agent_no_driver(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUSCOPE_URL", closed_port_url())
    monkeypatch.setenv("GPUSCOPE_EVENTS_SOCKET", str(tmp_path / "no-agent.sock"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("GPUSCOPE_NVML_LIB", str(tmp_path / "no-libnvidia-ml.so.1"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GPUSCOPE_JOB", "TORCHELASTIC_RUN_ID", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delitem(sys.modules, "torch.distributed", raising=False)
    _nvml._forget_for_tests()
    monkeypatch.setattr(metrics, "_default", None)
    monkeypatch.setattr(health, "_agents", {})
    monkeypatch.setattr(health, "_cli_without_check", set())
    yield
    _nvml._forget_for_tests()


class EventSocket:
    """The agent's end of the event socket: bound, read by the test."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(2.0)

    def receive(self) -> Dict[str, Any]:
        datagram = self.sock.recv(65536)
        assert datagram.endswith(b"}"), datagram
        return json.loads(datagram)

    def pending(self) -> List[bytes]:
        datagrams = []
        self.sock.setblocking(False)
        try:
            while True:
                datagrams.append(self.sock.recv(65536))
        except BlockingIOError:
            pass
        finally:
            self.sock.settimeout(2.0)
        return datagrams

    def close(self) -> None:
        self.sock.close()
        if self.path.exists():
            self.path.unlink()


@pytest.fixture
def event_socket(tmp_path, monkeypatch):
    # A short path: sun_path holds 108 bytes and pytest's tmp_path can be longer.
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="gpuscope-"))
    receiver = EventSocket(directory / "events.sock")
    monkeypatch.setenv("GPUSCOPE_EVENTS_SOCKET", str(receiver.path))
    yield receiver
    receiver.close()
    directory.rmdir()


class FakeAgent:
    """GET /api/v1/summary and /api/v1/check as clients/README.md documents them."""

    def __init__(self) -> None:
        self.requests: List[Tuple[str, Dict[str, List[str]]]] = []
        self.summary_gpus: List[Dict[str, Any]] = []
        self.check_report: Dict[str, Any] = healthy_report()
        self.check_status = 200
        self.wrap = True  # {"status":"success","data":...}
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                url = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(url.query)
                agent.requests.append((url.path, query))
                if url.path == "/api/v1/summary":
                    status = 200
                    data = {"start": float(query["start"][0]), "end": float(query["end"][0]),
                            "gpus": agent.summary_gpus}
                elif url.path == "/api/v1/check":
                    status, data = agent.check_status, agent.check_report
                else:
                    self.send_error(404)
                    return
                body = json.dumps({"status": "success", "data": data} if agent.wrap else data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def paths(self) -> List[str]:
        return [path for path, _ in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_agent(monkeypatch):
    agent = FakeAgent()
    monkeypatch.setenv("GPUSCOPE_URL", agent.url)
    yield agent
    agent.close()


def summary_gpu(index: int = 0, uuid: str = "GPU-00000000-1111-2222-3333-444444444444", **overrides: Any) -> Dict[str, Any]:
    entry = {
        "gpu": index, "uuid": uuid, "name": "NVIDIA H100 80GB HBM3", "readings": 60,
        "utilization_percent": {"mean": 97.1, "min": 90, "max": 100},
        "sm_active": {"mean": 0.81, "min": 0.6, "max": 0.9},
        "tensor_active": {"mean": 0.42, "min": 0.3, "max": 0.5},
        "memory_used_mib": {"mean": 70000, "min": 69000, "max": 71000},
        "power_watts": {"mean": 650.5, "min": 600, "max": 700},
        "temperature_celsius": {"mean": 71.2, "min": 65, "max": 75},
        "verdict": {"verdict": "compute_bound", "summary": "SMs busy 81% of the time"},
    }
    entry.update(overrides)
    return {key: value for key, value in entry.items() if value is not None}


def check_result(check_id: str, status: str = "pass", gating: bool = True, summary: str = "") -> Dict[str, Any]:
    return {"id": check_id, "status": status, "gating": gating, "summary": summary or f"{check_id} {status}",
            "values": {}}


def gpu_health(index: int, uuid: str, failing: Optional[Dict[str, bool]] = None, up: bool = True) -> Dict[str, Any]:
    """A GPU of health_report_json: every check passes but those in `failing` (id → gating)."""
    failing = failing or {}
    checks = [check_result(c, "fail" if c in failing else "pass", failing.get(c, True))
              for c in ("ecc", "xid", "remap", "pcie", "thermal", "persistence")]
    return {"index": index, "uuid": uuid, "name": "NVIDIA H100 80GB HBM3", "up": up,
            "healthy": up and not any(failing.values()), "checks": checks if up else []}


def healthy_report(gpus: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    gpus = gpus if gpus is not None else [gpu_health(0, "GPU-a"), gpu_health(1, "GPU-b")]
    healthy = all(g["healthy"] for g in gpus)
    return {"healthy": healthy, "problem_count": sum(not g["healthy"] for g in gpus), "gpu_count": len(gpus),
            "fail_on": ["ecc", "xid", "remap", "pcie", "thermal", "persistence", "driver"],
            "kernel_log": {"source": "/dev/kmsg", "readable": True}, "gpus": gpus,
            "node": {"checks": [check_result("driver")]}}


class FakeTorch:
    """torch as gpuscope sees it: torch.cuda's calls, and whether any call would create a context."""

    def __init__(self, available: bool = True, initialized: bool = True, device: int = 0,
                 uuid: Optional[str] = None) -> None:
        self.available = available
        self.initialized = initialized
        self.device = device
        self.uuid = uuid
        self.allocated = 3 * 1024 * 1024 * 1024
        self.reserved = 4 * 1024 * 1024 * 1024
        self.peak = 5 * 1024 * 1024 * 1024
        self.peak_resets: List[int] = []
        self.context_created_before_init = False
        fake = self
        cuda = types.ModuleType("torch.cuda")
        cuda.is_available = lambda: fake.available
        cuda.is_initialized = lambda: fake.initialized

        def guarded(function):
            def call(*args: Any) -> Any:
                if not fake.initialized:
                    fake.context_created_before_init = True
                return function(*args)
            return call

        cuda.current_device = guarded(lambda: fake.device)
        cuda.memory_allocated = guarded(lambda device=None: fake.allocated)
        cuda.memory_reserved = guarded(lambda device=None: fake.reserved)
        cuda.max_memory_allocated = guarded(lambda device=None: fake.peak)
        cuda.reset_peak_memory_stats = guarded(lambda device=None: fake.peak_resets.append(device))
        cuda.get_device_properties = guarded(lambda device: types.SimpleNamespace(uuid=fake.uuid))
        self.module = types.ModuleType("torch")
        self.module.cuda = cuda
        self.distributed = types.ModuleType("torch.distributed")
        self.distributed.is_available = lambda: True
        self.distributed.is_initialized = lambda: False
        self.module.distributed = self.distributed

    def init_process_group(self, rank: int, world_size: int) -> None:
        self.distributed.is_initialized = lambda: True
        self.distributed.get_rank = lambda: rank
        self.distributed.get_world_size = lambda: world_size


@pytest.fixture
def fake_torch(monkeypatch):
    torch = FakeTorch()
    monkeypatch.setitem(sys.modules, "torch", torch.module)
    monkeypatch.setitem(sys.modules, "torch.distributed", torch.distributed)
    return torch


def simulated_nvml() -> Optional[Path]:
    """gpuscope's simulated libnvidia-ml.so.1: $GPUSCOPE_SIM_LIB (CTest passes it), else the build tree."""
    explicit = os.environ.get("GPUSCOPE_SIM_LIB")
    candidates = [Path(explicit)] if explicit else [REPOSITORY_ROOT / "build" / "sim" / "libnvidia-ml.so.1"]
    return next((path for path in candidates if path.is_file()), None)
