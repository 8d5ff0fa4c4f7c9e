"""check(): the health gate before an epoch (or before a job starts).

Asked, in order, of whatever can answer:
1. the agent: GET /api/v1/check (its reading is at most a sampling interval old, XIDs included);
2. the `gpuscope` binary on PATH: `gpuscope check --format json` (one reading of its own);
3. NVML in this process, through ctypes: the minimal check, volatile double-bit (uncorrectable) ECC
   errors, the failure that silently corrupts a job's results;
4. nothing: the report is healthy with source None and no GPU checked (a CPU-only machine trains on).

The first two answer for every GPU of the node. By default only the GPUs this process uses decide
(those torch has initialised, else those CUDA_VISIBLE_DEVICES names, else all): a broken GPU given to
another job does not stop this one. Failures on other GPUs, and failures of checks outside `fail_on`,
are reported as warnings.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Set, Union

from . import _torch_state
from ._agent_http import AgentHttp, agent_url
from ._devices import ProcessGpu, process_gpus, visible_handles, visible_devices
from ._nvml import NVML_ERROR_GPU_IS_LOST, nvml

CLI_TIMEOUT_S = 15.0  # one NVML start and one reading; a hung driver must not hang the training loop forever

SOURCE_AGENT = "agent"
SOURCE_CLI = "cli"
SOURCE_NVML = "nvml"


@dataclass(frozen=True)
class Problem:
    check: str  # the check's id: "ecc", "xid", "remap", "pcie", "thermal", "persistence", "driver"; "down"
    summary: str  # for people: what is wrong
    gpu: Optional[int] = None  # NVML's index of the GPU; None for a problem of the node
    uuid: Optional[str] = None
    gating: bool = True  # in fail_on: it makes the report unhealthy (when on this process's GPUs)

    def __str__(self) -> str:
        where = "node" if self.gpu is None and self.uuid is None else f"GPU {self.gpu} ({self.uuid})"
        return f"{self.check}: {where}: {self.summary}"


@dataclass
class HealthReport:
    healthy: bool
    problems: List[Problem] = field(default_factory=list)  # what makes it unhealthy
    warnings: List[Problem] = field(default_factory=list)  # failures that do not gate, or on other GPUs
    source: Optional[str] = None  # "agent", "cli", "nvml"; None: nothing could check
    gpus_checked: int = 0
    detail: Optional[Dict[str, Any]] = None  # the agent's or the binary's report as it came

    def __bool__(self) -> bool:
        return self.healthy


class GpuUnhealthy(RuntimeError):
    def __init__(self, report: HealthReport) -> None:
        self.report = report
        listed = "; ".join(str(problem) for problem in report.problems) or "unhealthy"
        super().__init__(f"gpuscope check ({report.source}): {listed}")


_agents: Dict[str, AgentHttp] = {}
_agents_lock = threading.Lock()
_cli_without_check: Set[str] = set()  # binaries that answered without a report (an older gpuscope)


def check(fail_on: Union[None, str, Iterable[str]] = None, *, raise_on_failure: bool = False,
          url: Optional[str] = None, all_gpus: bool = False) -> HealthReport:
    """Whether the GPUs this process uses are fit to train on. `fail_on`: the checks that gate, as a
    list or "ecc,xid" (default: every check the checker has). Raises GpuUnhealthy only when
    `raise_on_failure` is set and the report is unhealthy; otherwise never raises."""
    try:
        checks = _check_list(fail_on)
        own = None if all_gpus else _own_uuids()
        report = None
        # `is None`, not `or`: an unhealthy report is falsy (HealthReport.__bool__ is `healthy`).
        for source in (lambda: _from_agent(url, checks, own), lambda: _from_cli(checks, own),
                       lambda: _from_nvml(checks, own)):
            report = source()
            if report is not None:
                break
        if report is None:
            report = HealthReport(healthy=True)
    except Exception:
        report = HealthReport(healthy=True)
    if raise_on_failure and not report.healthy:
        raise GpuUnhealthy(report)
    return report


def _check_list(fail_on: Union[None, str, Iterable[str]]) -> Optional[List[str]]:
    if fail_on is None:
        return None
    words = fail_on.split(",") if isinstance(fail_on, str) else list(fail_on)
    return [str(word).strip() for word in words if str(word).strip()] or None


def _gates(check_id: str, checks: Optional[List[str]]) -> bool:
    return checks is None or "all" in checks or check_id in checks


def _own_gpus() -> Optional[List[ProcessGpu]]:
    if _torch_state.cuda_state() == _torch_state.CUDA_IN_USE:
        return process_gpus()
    library = nvml()
    if library is not None and visible_devices() is not None:
        return visible_handles(library)
    return None


def _own_uuids() -> Optional[Set[str]]:
    gpus = _own_gpus()
    if gpus is None:
        return None
    uuids = {gpu.uuid for gpu in gpus if gpu.uuid}
    return uuids or None


def _agent(url: Optional[str]) -> AgentHttp:
    key = agent_url(url)
    with _agents_lock:
        if key not in _agents:
            _agents[key] = AgentHttp(key)
        return _agents[key]


def _from_agent(url: Optional[str], checks: Optional[List[str]], own: Optional[Set[str]]) -> Optional[HealthReport]:
    params = [("fail_on", ",".join(checks))] if checks else []
    document = _agent(url).get("/api/v1/check", params)
    return _from_report(document, SOURCE_AGENT, own) if document is not None else None


def _from_cli(checks: Optional[List[str]], own: Optional[Set[str]]) -> Optional[HealthReport]:
    import shutil  # here, not at the top: `import gpuscope` stays cheap
    import subprocess

    binary = shutil.which("gpuscope")
    if binary is None or binary in _cli_without_check:
        return None
    command = [binary, "check", "--format", "json"] + (["--fail-on", ",".join(checks)] if checks else [])
    runtime = _torch_state.cuda_runtime_version()
    if runtime:
        command += ["--cuda-runtime", runtime]  # the driver check: can this driver run torch's CUDA?
    try:
        finished = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, timeout=CLI_TIMEOUT_S, check=False)
        report = _from_report(json.loads(finished.stdout), SOURCE_CLI, own)
    except subprocess.TimeoutExpired:
        return None  # a hung driver this time; the binary may answer next time
    except Exception:
        report = None
    if report is None:
        _cli_without_check.add(binary)
    return report


def _from_report(document: Any, source: str, own: Optional[Set[str]]) -> Optional[HealthReport]:
    """Reads the report of src/analysis/health_report_format.h (the agent's body, the binary's output)."""
    if not isinstance(document, dict) or not isinstance(document.get("healthy"), bool):
        return None
    failed: List[Problem] = []
    gpus = document.get("gpus") if isinstance(document.get("gpus"), list) else []
    for gpu in gpus:
        if not isinstance(gpu, dict):
            continue
        index = gpu.get("index") if isinstance(gpu.get("index"), int) else None
        uuid = gpu.get("uuid") if isinstance(gpu.get("uuid"), str) else None
        if gpu.get("up") is False:
            failed.append(Problem("down", "NVML cannot reach the GPU", index, uuid, True))
        failed += _failed_checks(gpu.get("checks"), index, uuid)
    node = document.get("node")
    if isinstance(node, dict):
        failed += _failed_checks(node.get("checks"), None, None)

    def decides(problem: Problem) -> bool:
        return problem.gating and (own is None or problem.uuid is None or problem.uuid in own)

    problems = [problem for problem in failed if decides(problem)]
    warnings = [problem for problem in failed if not decides(problem)]
    healthy = document["healthy"] if own is None else not problems
    return HealthReport(healthy=healthy, problems=problems, warnings=warnings, source=source,
                        gpus_checked=len(gpus), detail=document)


def _failed_checks(checks: Any, index: Optional[int], uuid: Optional[str]) -> List[Problem]:
    if not isinstance(checks, list):
        return []
    return [
        Problem(str(result.get("id", "unknown")), str(result.get("summary", "")), index, uuid,
                result.get("gating", True) is not False)
        for result in checks
        if isinstance(result, dict) and result.get("status") == "fail"
    ]


def _from_nvml(checks: Optional[List[str]], own: Optional[Set[str]]) -> Optional[HealthReport]:
    library = nvml()
    if library is None:
        return None
    gpus = _own_gpus() if own is not None else None
    if gpus is None:
        gpus = [ProcessGpu(ordinal, library.uuid(handle), handle) for ordinal, handle in enumerate(library.all_handles())]
    problems: List[Problem] = []
    warnings: List[Problem] = []
    checked = 0
    for gpu in gpus:
        if gpu.handle is None:
            continue
        checked += 1
        index = library.index(gpu.handle)
        rc, count = library.uncorrected_ecc_errors(gpu.handle)
        if rc == NVML_ERROR_GPU_IS_LOST:
            problems.append(Problem("down", "the GPU fell off the bus (NVML: GPU is lost)", index, gpu.uuid, True))
        elif count:
            gating = _gates("ecc", checks)
            problem = Problem("ecc", f"{count} uncorrectable (double-bit) ECC error(s) since the driver loaded: "
                                     "results computed on this GPU may be wrong; drain and reset it",
                              index, gpu.uuid, gating)
            (problems if gating else warnings).append(problem)
    return HealthReport(healthy=not problems, problems=problems, warnings=warnings, source=SOURCE_NVML,
                        gpus_checked=checked)
