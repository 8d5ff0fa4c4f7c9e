"""End to end: a CPU training loop of 4 ranks sends its steps to a real gpuscope agent on a simulated node.

The node is scenarios/straggler.yaml (8 simulated H100s; GPU 3's clock held at 70%). Four rank
processes use the real client (`gpuscope.Monitor(gpu=rank)`, the events socket, `log_gpu_metrics`);
rank 3's steps take 30% longer. The agent must name rank 3 (on GPU 3, cause "gpu_clock") as the
straggler in /api/v1/training and /metrics, and the rule pack's GpuTrainingStraggler alert must fire
for it; once the loops stop while their processes live, the job is stalled and GpuTrainingStalled
fires. Rank 0 logs its GPU's figures through the agent's real /api/v1/summary.

The rules the agent evaluates are rules/gpu.rules.yml's gpu-training group as shipped, with only its
`for:` durations cut to 1s (a text transform of the real file), so the shipped expressions are tested.

The scenario is straggler.yaml as shipped plus one process per rank (its real pid, holding memory on
its GPU), appended to the file's process list: on a real node a rank holds memory on its GPU, and
that is how the agent finds the GPU of a process without CUDA (log_gpu_metrics asks for the span's
summary by pid). For the same reason rank 0 does not import torch: a process whose torch is a CPU
build uses no GPU, and log_gpu_metrics then logs nothing by design. Ranks 1-3 run a tiny real torch
step when torch imports.

Needs $GPUSCOPE_BIN (CTest's python_client run passes it) and the simulated NVML; skipped otherwise.
No wall-clock upper bound is asserted: every wait is a bounded poll, generous for a loaded machine.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

from conftest import PACKAGE_ROOT, REPOSITORY_ROOT, simulated_nvml

JOB = "e2e-llama"
WORLD_SIZE = 4
SLOW_RANK = 3  # straggler.yaml slows GPU 3; rank r runs on GPU r
BASE_STEP_S = 0.1  # rank 3: 0.13 s; long enough that scheduling noise on a loaded machine cannot hide 30%
SLOW_FACTOR = 1.3
MIN_STEPS = 60  # each rank steps at least this many times, then until the test says stop
STALL_AFTER = "10s"
SCENARIO = REPOSITORY_ROOT / "scenarios" / "straggler.yaml"
RULES = REPOSITORY_ROOT / "rules" / "gpu.rules.yml"

# Bounded polls: generous, for a loaded 2-core machine. None of them is an assertion on elapsed time.
START_TIMEOUT_S = 120.0
FINDING_TIMEOUT_S = 120.0
STALL_TIMEOUT_S = 120.0

# One rank of the training job. Talks to the test over stdin (commands: "go URL", "stop", "exit") and
# stdout (one JSON object a line).
RANK_SCRIPT = textwrap.dedent(r"""
    import json, os, sys, threading, time

    rank = int(os.environ["RANK"])
    base_s = float(os.environ["E2E_BASE_STEP_S"])
    target_s = base_s * (float(os.environ["E2E_SLOW_FACTOR"]) if rank == int(os.environ["E2E_SLOW_RANK"]) else 1.0)
    min_steps = int(os.environ["E2E_MIN_STEPS"])
    max_steps = int(os.environ["E2E_MAX_STEPS"])

    torch = None
    if rank != 0:  # rank 0 logs GPU figures by its pid: a CPU-only torch in it would make that log nothing
        try:
            import torch
        except Exception:
            torch = None
    if torch is not None:
        torch.set_num_threads(1)
        torch.manual_seed(rank)
        model = torch.nn.Linear(32, 32)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        batch = torch.randn(16, 32)

        def work():
            optimizer.zero_grad()
            loss = model(batch).pow(2).mean()
            loss.backward()
            optimizer.step()
            return loss.item()
    else:
        def work():
            return sum(i * i for i in range(2000)) * 1e-9

    import gpuscope

    def say(**message):
        print(json.dumps(message), flush=True)

    commands = {"go": threading.Event(), "stop": threading.Event(), "exit": threading.Event()}
    url = []

    def read_commands():
        for line in sys.stdin:
            word, _, rest = line.strip().partition(" ")
            if word == "go":
                url.append(rest)
            if word in commands:
                commands[word].set()
        for event in commands.values():  # the test went away: finish and exit
            event.set()

    threading.Thread(target=read_commands, daemon=True).start()
    say(ready=os.getpid(), torch=torch is not None)
    commands["go"].wait()
    if url and url[0]:
        os.environ["GPUSCOPE_URL"] = url[0]

    monitor = gpuscope.Monitor(gpu=rank)
    steps = 0
    loss = None
    with monitor.epoch(0) as epoch:
        while steps < max_steps and (steps < min_steps or not commands["stop"].is_set()):
            with monitor.step() as step:
                started = time.perf_counter()
                loss = work()
                step.loss = loss
                step.scalars["lr"] = 0.01
                time.sleep(max(0.0, target_s - (time.perf_counter() - started)))
            steps += 1
        epoch.loss = loss

    logged = None
    if rank == 0:
        class Recorder:  # a W&B-like tracker: log(dict, step), takes text too
            def __init__(self):
                self.calls = []

            def log(self, data, step=None):
                self.calls.append({"data": dict(data), "step": step})

        recorder = Recorder()
        returned = gpuscope.log_gpu_metrics(recorder, 0)
        logged = {"returned": returned, "calls": recorder.calls}
    monitor.flush()  # events the agent's full queue refused, if any are still kept: one try, no wait
    say(done=steps, identity=monitor.identity, stats=monitor.stats(), logged=logged)
    commands["exit"].wait(timeout=600)
    monitor.close()
""")


def gpuscope_binary() -> Optional[str]:
    path = os.environ.get("GPUSCOPE_BIN")
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def training_rules() -> str:
    """rules/gpu.rules.yml's gpu-training group as shipped, with every `for:` cut to 1s."""
    text = RULES.read_text()
    found = re.search(r"^  - name: gpu-training\n.*?(?=^  - name: |\Z)", text, re.M | re.S)
    assert found, f"no gpu-training group in {RULES}"
    group, count = re.subn(r"^(\s+)for: *\S+[ \t]*$", r"\1for: 1s", found.group(0), flags=re.M)
    assert count >= 2, "the gpu-training group has lost the for: of GpuTrainingStalled or GpuTrainingStraggler"
    for name in ("training_job_rank:step_duration_seconds:mean5m", "training_job:step_duration_seconds:cv5m",
                 "GpuTrainingStalled", "GpuTrainingStraggler"):
        assert name in group, f"{name} is no longer in the gpu-training group"
    rules = "groups:\n" + group
    try:
        import yaml
    except ImportError:
        return rules
    loaded = yaml.safe_load(rules)
    alerts = {r["alert"]: r for r in loaded["groups"][0]["rules"] if "alert" in r}
    assert alerts["GpuTrainingStalled"]["for"] == "1s" and alerts["GpuTrainingStraggler"]["for"] == "1s"
    return rules


def scenario_pids(text: str) -> set:
    """The pids straggler.yaml's processes may take (a per_gpu entry takes pid, pid+1, ... one a GPU)."""
    return {int(pid) + i for pid in re.findall(r"^\s*-?\s*pid:\s*(\d+)", text, re.M) for i in range(64)}


def scenario_with_ranks(pids: List[int]) -> str:
    """straggler.yaml as shipped, plus each rank's process on its GPU (appended to the process list)."""
    text = SCENARIO.read_text()
    top_level = re.findall(r"^([A-Za-z_]+):", text, re.M)
    assert top_level and top_level[-1] == "processes", f"{SCENARIO}: processes is no longer its last key"
    extra = "".join(f"  - pid: {pid}\n    name: python e2e rank {rank}\n    gpu: {rank}\n    memory: 4GiB\n"
                    for rank, pid in enumerate(pids))
    return text.rstrip("\n") + "\n" + extra


class Rank:
    """One rank's process: its stdout read line by line into a queue by a thread."""

    def __init__(self, rank: int, env: Dict[str, str], log_path: Path) -> None:
        self.rank = rank
        self.log_path = log_path
        self.stderr = open(log_path, "w")
        self.process = subprocess.Popen([sys.executable, "-c", RANK_SCRIPT], env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1)
        self.messages: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                self.messages.put(json.loads(line))
            except ValueError:
                self.messages.put({"unparsed": line})

    def expect(self, key: str, timeout_s: float) -> Dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or (self.process.poll() is not None and self.messages.empty()):
                raise AssertionError(f"rank {self.rank} sent no {key!r} (exit {self.process.poll()}): "
                                     f"{self.log_path.read_text()[-3000:]}")
            try:
                message = self.messages.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if key in message:
                return message

    def tell(self, command: str) -> None:
        try:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def stop(self) -> None:
        """Lets the rank exit (closing its stdin), then ends it by its pid if it does not."""
        self.tell("exit")
        try:
            self.process.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)
        self.stderr.close()


class Agent:
    """`gpuscope serve` on the simulated node, its log in a file, stopped by its pid."""

    def __init__(self, binary: str, sim_lib: Path, workdir: Path, scenario: Path, rules: Path) -> None:
        self.log_path = workdir / "agent.log"
        self.log_file = open(self.log_path, "w")
        env = dict(os.environ, GPUSCOPE_SIM_LIB=str(sim_lib))
        for name in ("NODE_NAME", "GPUSCOPE_SIM_SCENARIO", "GPUSCOPE_SIM_TIME", "GPUSCOPE_SIM_SEED"):
            env.pop(name, None)  # the scenario's hostname, on the real clock
        command = [binary, f"--simulate={scenario}", "serve", "--listen", "127.0.0.1:0",
                   "--data-dir", str(workdir / "data"), "--events-socket", str(workdir / "events.sock"),
                   "--training.stall-after", STALL_AFTER, "--rules", str(rules), "--evaluation-interval", "1s"]
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=self.log_file,
                                        stderr=subprocess.STDOUT)
        self.url = ""
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def log(self) -> str:
        self.log_file.flush()
        return self.log_path.read_text(errors="replace")

    def log_tail(self) -> str:
        return "\n--- agent log (tail) ---\n" + self.log()[-4000:]

    def wait_listening(self) -> None:
        def port() -> Optional[str]:
            if self.process.poll() is not None:
                raise AssertionError(f"the agent exited with {self.process.returncode}" + self.log_tail())
            found = re.search(r"msg=listening address=(127\.0\.0\.1:\d+)", self.log())
            return found.group(1) if found else None

        self.url = "http://" + poll(port, START_TIMEOUT_S, "the agent's `msg=listening` line", self)

    def get(self, path: str) -> "tuple[int, bytes]":
        try:
            with self._opener.open(self.url + path, timeout=15) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            body = error.read()
            error.close()
            return error.code, body
        except (urllib.error.URLError, OSError):
            return 0, b""

    def json(self, path: str) -> Dict[str, Any]:
        status, body = self.get(path)
        assert status == 200, f"GET {path}: {status} {body[:500]!r}" + self.log_tail()
        document = json.loads(body)
        assert document.get("status") == "success", document
        return document["data"]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        self.log_file.close()


def poll(probe: Callable[[], Any], timeout_s: float, what: str, agent: Optional[Agent] = None,
         interval_s: float = 0.5) -> Any:
    """probe()'s first truthy answer; fails with its last answer after timeout_s."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout_s:.0f} s for {what}; last: {last!r}"
                                 + (agent.log_tail() if agent is not None else ""))
        time.sleep(interval_s)


def job_of(training: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    return next((job for job in training.get("jobs", []) if job.get("job") == JOB), None)


def job_where(agent: Agent, condition: Callable[[Dict[str, Any]], Any]) -> Callable[[], Optional[Dict[str, Any]]]:
    """A probe for poll(): the job in /api/v1/training once condition(job) holds, else None."""
    def probe() -> Optional[Dict[str, Any]]:
        job = job_of(agent.json("/api/v1/training"))
        return job if job is not None and condition(job) else None
    return probe


def firing(agent: Agent, name: str) -> List[Dict[str, Any]]:
    """The job's alerts of that name in state firing (Prometheus's /api/v1/alerts objects)."""
    alerts = agent.json("/api/v1/alerts")["alerts"]
    return [a for a in alerts if a["labels"].get("alertname") == name and a.get("state") == "firing"
            and a["labels"].get("training_job") == JOB]


def metric_lines(agent: Agent, name: str) -> List[str]:
    status, body = agent.get("/metrics")
    assert status == 200, status
    return [line for line in body.decode().splitlines() if line.startswith(name + "{")]


@pytest.fixture
def workdir():
    # A short path: the events socket's sun_path holds 108 bytes and pytest's tmp_path can be longer.
    directory = Path(tempfile.mkdtemp(prefix="gpuscope-e2e-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_four_ranks_straggler_named_then_stall_alert_fires(workdir):
    binary = gpuscope_binary()
    if binary is None:
        pytest.skip("no gpuscope binary: set GPUSCOPE_BIN (CTest's python_client run does)")
    sim_lib = simulated_nvml()
    if sim_lib is None:
        pytest.skip("gpuscope's simulated NVML is not built (build/sim/libnvidia-ml.so.1; set GPUSCOPE_SIM_LIB)")

    rules = workdir / "training.rules.yml"
    rules.write_text(training_rules())
    socket_path = workdir / "events.sock"
    taken = scenario_pids(SCENARIO.read_text())

    def rank_env(rank: int) -> Dict[str, str]:
        return {
            "PATH": "/nonexistent",
            "HOME": os.environ.get("HOME", "/tmp"),
            "PYTHONPATH": str(PACKAGE_ROOT),
            "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": "1",
            "RANK": str(rank), "WORLD_SIZE": str(WORLD_SIZE), "LOCAL_RANK": str(rank),
            "GPUSCOPE_EVENTS_SOCKET": str(socket_path),
            "GPUSCOPE_JOB": JOB,
            "GPUSCOPE_NVML_LIB": "/nonexistent/libnvidia-ml.so.1",
            "E2E_BASE_STEP_S": str(BASE_STEP_S), "E2E_SLOW_FACTOR": str(SLOW_FACTOR),
            "E2E_SLOW_RANK": str(SLOW_RANK), "E2E_MIN_STEPS": str(MIN_STEPS), "E2E_MAX_STEPS": "20000",
        }

    ranks: List[Rank] = []
    agent: Optional[Agent] = None
    started = time.monotonic()
    try:
        # The ranks start first (torch imported, waiting for "go"): the simulated node lists their pids.
        for rank in range(WORLD_SIZE):
            while True:
                process = Rank(rank, rank_env(rank), workdir / f"rank{rank}.log")
                if process.process.pid not in taken:
                    break
                process.stop()  # its pid is one of the scenario's own processes': start another
            ranks.append(process)
        readiness = [r.expect("ready", START_TIMEOUT_S) for r in ranks]
        pids = [message["ready"] for message in readiness]
        print(f"ranks ready: {readiness}")
        scenario = workdir / "straggler-with-ranks.yaml"
        scenario.write_text(scenario_with_ranks(pids))

        agent = Agent(binary, sim_lib, workdir, scenario, rules)
        agent.wait_listening()
        poll(lambda: agent.get("/healthz")[0] == 200, START_TIMEOUT_S, "/healthz to answer 200", agent)
        for r in ranks:
            r.tell(f"go {agent.url}")
        went = time.monotonic()

        def mark(what: str) -> None:
            print(f"{time.monotonic() - went:6.1f} s after go: {what}")

        # While stepping: every rank past 30 steps, then the straggler named with its GPU's cause.
        all_past_30 = job_where(agent, lambda j: len(j["ranks"]) == WORLD_SIZE
                                and min(r["steps_total"] for r in j["ranks"]) >= 30)
        poll(all_past_30, FINDING_TIMEOUT_S, f"{WORLD_SIZE} ranks of {JOB} past 30 steps", agent)
        job = poll(job_where(agent, lambda j: j["straggler"]), FINDING_TIMEOUT_S, f"a straggler in {JOB}", agent)
        mark("straggler named in /api/v1/training")
        straggler = job["straggler"]
        assert (straggler["rank"], straggler["gpu"], straggler["cause"]) == (SLOW_RANK, SLOW_RANK, "gpu_clock"), job
        assert straggler["mean_step_seconds"] > straggler["others_mean_step_seconds"], straggler
        assert job["step_time_cv"] > 0.1, job
        assert job["stalled"] is None, job
        by_rank = {r["rank"]: r for r in job["ranks"]}
        assert sorted(by_rank) == list(range(WORLD_SIZE)), job
        for rank, pid in enumerate(pids):
            assert by_rank[rank]["gpu"] == rank and by_rank[rank]["pid"] == pid, by_rank[rank]
            assert by_rank[rank]["world_size"] == WORLD_SIZE and by_rank[rank]["epoch"] == 0, by_rank[rank]
        print(f"straggler: {straggler}, cv {job['step_time_cv']:.3f}")

        batches = metric_lines(agent, "training_batches_total")
        for rank in range(WORLD_SIZE):
            assert any(f'training_job="{JOB}"' in line and f'rank="{rank}"' in line for line in batches), batches
        info = metric_lines(agent, "gpuscope_training_straggler_info")
        assert any(f'training_job="{JOB}"' in line and f'rank="{SLOW_RANK}"' in line for line in info), info

        # The rule pack's straggler alert: the recording rules over the agent's own history.
        straggler_alerts = poll(lambda: firing(agent, "GpuTrainingStraggler"), FINDING_TIMEOUT_S,
                                "GpuTrainingStraggler firing", agent)
        assert [a["labels"]["rank"] for a in straggler_alerts] == [str(SLOW_RANK)], straggler_alerts
        assert straggler_alerts[0]["labels"]["severity"] == "warning", straggler_alerts
        summary = straggler_alerts[0]["annotations"]["summary"]
        assert summary.startswith(f"Rank {SLOW_RANK} of training {JOB} is a straggler: "), summary
        # Its value is the rank's mean step time from the recording rule (rate over the agent's history).
        value = float(straggler_alerts[0]["value"])
        assert value == pytest.approx(BASE_STEP_S * SLOW_FACTOR, rel=0.25), straggler_alerts
        mark("GpuTrainingStraggler firing")
        groups = agent.json("/api/v1/rules")["groups"]
        health = {rule["name"]: rule["health"] for group in groups for rule in group["rules"]}
        assert health and set(health.values()) == {"ok"}, health
        stepping_still = [r.process.poll() is None and r.messages.empty() for r in ranks]
        assert all(stepping_still), "a rank stopped before the test said so"

        # The loops stop, their processes live: the job is stalled, and GpuTrainingStalled fires.
        for r in ranks:
            r.tell("stop")
        done = [r.expect("done", START_TIMEOUT_S) for r in ranks]
        mark(f"loops stopped after {[message['done'] for message in done]} steps")
        for rank, message in enumerate(done):
            assert message["done"] >= MIN_STEPS, message
            assert message["identity"]["job"] == JOB and message["identity"]["rank"] == rank, message
            assert message["identity"]["gpu"] == rank, message
            stats = message["stats"]
            assert stats["socket_path"] == str(socket_path), stats
            assert stats["unreachable"] == stats["invalid"] == stats["too_large"] == 0, stats
            # Every step, epoch_start and epoch_end was sent, is still kept for a later send, or was lost
            # to a full queue: the kernel queues net.unix.max_dgram_qlen + 1 datagrams (11 by default)
            # however large SO_RCVBUF is. A refused event travels with the next one (deferred), so only
            # an agent thread kept off the CPU long enough for 4 KiB of events to pile up loses some.
            assert stats["sent"] + stats["buffer_full"] + stats["pending"] == message["done"] + 2, stats
            if stats["deferred"] or stats["buffer_full"] or stats["pending"]:
                print(f"rank {rank}: {stats['deferred']} events sent late, {stats['pending']} still kept, "
                      f"{stats['buffer_full']} lost: the agent's socket queue was full")

        stalled_job = poll(job_where(agent, lambda j: j["stalled"]), STALL_TIMEOUT_S, f"{JOB} stalled", agent)
        assert 30 <= stalled_job["stalled"]["last_step"] < max(message["done"] for message in done), stalled_job
        mark("stalled in /api/v1/training")
        stalled_alerts = poll(lambda: firing(agent, "GpuTrainingStalled"), STALL_TIMEOUT_S,
                              "GpuTrainingStalled firing", agent)
        assert len(stalled_alerts) == 1, stalled_alerts
        summary = stalled_alerts[0]["annotations"]["summary"]
        assert summary.startswith(f"Training {JOB} on straggler-h100-01 is stalled"), summary
        mark("GpuTrainingStalled firing")

        # Every event the clients handed to the socket reached the agent, none rejected; every step counted.
        training = agent.json("/api/v1/training")
        sent = sum(message["stats"]["sent"] for message in done)
        assert training["events"]["received"].get("socket") == sent, training["events"]
        assert not any(training["events"]["rejected"].values()), training["events"]
        batches = metric_lines(agent, "training_batches_total")
        complete = [rank for rank, message in enumerate(done)
                    if message["stats"]["buffer_full"] == message["stats"]["pending"] == 0]
        for rank, message in enumerate(done):
            line = next(line for line in batches if f'training_job="{JOB}"' in line and f'rank="{rank}"' in line)
            counted = float(line.rsplit(" ", 1)[1])
            not_there = message["stats"]["buffer_full"] + message["stats"]["pending"]
            assert message["done"] - not_there <= counted <= message["done"], (line, message)
            assert rank not in complete or counted == message["done"], (line, message)
        # Each rank's epoch 0 ended and was given a verdict from its GPU's history.
        def verdicts() -> Optional[Dict[str, Any]]:
            job = job_of(agent.json("/api/v1/training"))
            last = {r["rank"]: r.get("last_epoch") or {} for r in job["ranks"]} if job else {}
            return last if all(last.get(rank, {}).get("verdict") for rank in complete) else None

        for rank, epoch in poll(verdicts, STALL_TIMEOUT_S, "each rank's epoch 0 verdict", agent).items():
            assert rank not in complete or epoch["epoch"] == 0, (rank, epoch)

        # Rank 0's log_gpu_metrics: the span's figures for its GPU (found by its pid) and the verdict.
        logged = done[0]["logged"]
        print(f"rank 0 logged: {logged}")
        assert logged is not None and len(logged["calls"]) == 1, logged
        call = logged["calls"][0]
        assert call["step"] == 0, call
        data = call["data"]
        for quantity in ("sm_active", "utilization_percent", "power_watts", "temperature_celsius", "memory_used_mib"):
            for statistic in ("mean", "min", "max"):
                assert isinstance(data.get(f"gpu0/{quantity}_{statistic}"), float), (quantity, statistic, data)
        assert 0 <= data["gpu0/sm_active_min"] <= data["gpu0/sm_active_mean"] <= data["gpu0/sm_active_max"] <= 1, data
        assert isinstance(data.get("gpu0/verdict"), str) and data["gpu0/verdict"], data
        assert all(key.startswith("gpu0/") for key in data), data  # rank 0's GPU only
        assert logged["returned"] == data, logged
    finally:
        for r in ranks:
            r.stop()
        if agent is not None:
            agent.stop()
    print(f"e2e: {time.monotonic() - started:.1f} s")
    log = agent.log_path.read_text(errors="replace")
    print(log)
    assert "level=error" not in log, log[-4000:]
    assert 'msg="training straggler"' in log and 'msg="training job stalled"' in log, log[-4000:]
