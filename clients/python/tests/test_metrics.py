import os
import time

import pytest

import gpuscope
from gpuscope import _agent_http, metrics
from gpuscope._agent_http import AgentHttp
from conftest import FakeTorch, closed_port_url, summary_gpu

UUID = "GPU-00000000-1111-2222-3333-444444444444"


class Recorder:
    def __init__(self):
        self.calls = []

    def log_scalar(self, name, value, step):
        self.calls.append((name, value, step))


class WandbRun:
    def __init__(self):
        self.calls = []

    def log(self, data, step=None):
        self.calls.append((dict(data), step))


def test_without_torch_or_agent_nothing_is_logged_and_nothing_raised():
    tracker = Recorder()
    assert gpuscope.log_gpu_metrics(tracker, 1) == {}
    assert tracker.calls == []


def test_a_cpu_only_torch_logs_nothing_and_does_not_ask_the_agent(fake_agent, fake_torch):
    fake_torch.available = False
    fake_agent.summary_gpus = [summary_gpu()]  # an agent would answer for every GPU of the node
    tracker = Recorder()
    assert gpuscope.log_gpu_metrics(tracker, 1) == {}
    assert tracker.calls == [] and fake_agent.requests == []


def test_a_process_that_has_not_initialised_cuda_logs_nothing_and_creates_no_context(fake_agent, fake_torch):
    fake_torch.initialized = False
    tracker = Recorder()
    assert gpuscope.log_gpu_metrics(tracker, 1) == {}
    assert not fake_torch.context_created_before_init and fake_agent.requests == []


def test_the_allocator_keys_are_mib_of_the_current_device(fake_torch):
    fake_torch.allocated = 1536 * 1024 * 1024
    fake_torch.reserved = 2 * 1024**3
    logged = gpuscope.log_gpu_metrics(Recorder(), 3)
    assert logged == {"gpu/memory_allocated_mb": 1536.0, "gpu/memory_reserved_mb": 2048.0}  # no NVML here


def test_the_agents_span_statistics_and_verdict_per_gpu(fake_agent, fake_torch):
    fake_torch.uuid = UUID
    fake_agent.summary_gpus = [summary_gpu(index=5, uuid=UUID)]  # the host's index 5 is this process's cuda:0
    run = WandbRun()
    gpuscope.log_gpu_metrics(run, 4)
    (logged, step), = run.calls
    assert step == 4
    assert logged["gpu0/sm_active_mean"] == 0.81 and logged["gpu0/sm_active_min"] == 0.6
    assert logged["gpu0/utilization_percent_max"] == 100.0 and logged["gpu0/power_watts_mean"] == 650.5
    assert logged["gpu0/memory_used_mib_mean"] == 70000.0 and logged["gpu0/temperature_celsius_min"] == 65.0
    assert logged["gpu0/tensor_active_max"] == 0.5
    assert logged["gpu0/verdict"] == "compute_bound"
    assert logged["gpu/memory_allocated_mb"] == 3072.0
    assert len([key for key in logged if key.startswith("gpu0/")]) == 6 * 3 + 1


def test_the_query_names_the_processs_gpu_by_uuid_and_the_pid(fake_agent, fake_torch):
    fake_torch.uuid = UUID
    gpuscope.log_gpu_metrics(Recorder(), 0)
    (path, query), = fake_agent.requests
    assert path == "/api/v1/summary"
    assert query["gpu"] == [UUID] and query["pid"] == [str(os.getpid())]


def test_spans_run_from_the_process_start_then_from_the_previous_call(fake_agent, fake_torch):
    logger = gpuscope.GpuMetricsLogger()
    logger.log(Recorder(), 0)
    time.sleep(0.01)
    logger.log(Recorder(), 1)
    (_, first), (_, second) = fake_agent.requests
    started = metrics.process_start_time()
    assert abs(float(first["start"][0]) - started) < 0.01
    assert started < time.time() and time.time() - started < 3600
    assert second["start"] == first["end"]
    assert float(second["end"][0]) > float(second["start"][0])


def test_a_quantity_the_gpu_does_not_report_is_left_out_not_zero(fake_agent, fake_torch):
    fake_torch.uuid = UUID
    fake_agent.summary_gpus = [summary_gpu(uuid=UUID, tensor_active=None, verdict=None)]
    logged = gpuscope.log_gpu_metrics(Recorder(), 0)
    assert not any(key.startswith("gpu0/tensor_active") for key in logged)
    assert "gpu0/verdict" not in logged and "gpu0/sm_active_mean" in logged


def test_numbers_only_trackers_get_no_verdict(fake_agent, fake_torch):
    fake_torch.uuid = UUID
    fake_agent.summary_gpus = [summary_gpu(uuid=UUID)]
    tracker = Recorder()
    gpuscope.log_gpu_metrics(tracker, 0)
    names = [name for name, _, _ in tracker.calls]
    assert "gpu0/verdict" not in names and "gpu0/sm_active_mean" in names
    assert all(isinstance(value, float) for _, value, _ in tracker.calls)


def test_without_torch_the_agent_says_which_gpus_the_pid_uses_and_they_are_labelled_by_its_index(fake_agent):
    fake_agent.summary_gpus = [summary_gpu(index=2, uuid="GPU-x")]
    logged = gpuscope.log_gpu_metrics(Recorder(), 0)
    assert "gpu2/sm_active_mean" in logged and "gpu/memory_allocated_mb" not in logged
    (_, query), = fake_agent.requests
    assert "gpu" not in query and query["pid"] == [str(os.getpid())]


def test_several_trackers_share_one_span(fake_agent, fake_torch):
    fake_torch.uuid = UUID
    fake_agent.summary_gpus = [summary_gpu(uuid=UUID)]
    run, tracker = WandbRun(), Recorder()
    gpuscope.log_gpu_metrics([run, tracker], 9)
    assert len(fake_agent.requests) == 1 and len(run.calls) == 1 and len(tracker.calls) == 20


def test_a_missing_agent_costs_one_refused_connection_then_nothing_for_a_while(monkeypatch):
    now = [100.0]
    agent = AgentHttp(closed_port_url(), clock=lambda: now[0])
    assert agent.get("/api/v1/summary") is None and agent.failures == 1
    for _ in range(100):
        assert agent.get("/api/v1/summary") is None
    assert agent.failures == 1
    now[0] += _agent_http.FIRST_BACKOFF_S
    agent.get("/api/v1/summary")
    assert agent.failures == 2
    now[0] += _agent_http.FIRST_BACKOFF_S  # the back-off doubled: not yet
    agent.get("/api/v1/summary")
    assert agent.failures == 2


def test_an_agent_that_does_not_answer_within_half_a_second_is_given_up_on():
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts the connection, never answers
    try:
        agent = AgentHttp(f"http://127.0.0.1:{silent.getsockname()[1]}")
        started = time.perf_counter()
        assert agent.get("/api/v1/summary") is None
        assert time.perf_counter() - started < 2 * _agent_http.REQUEST_TIMEOUT_S + 0.5
    finally:
        silent.close()


def test_proxies_from_the_environment_are_not_used(fake_agent, fake_torch, monkeypatch):
    monkeypatch.setenv("http_proxy", closed_port_url())
    monkeypatch.setenv("HTTP_PROXY", closed_port_url())
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    fake_torch.uuid = UUID
    fake_agent.summary_gpus = [summary_gpu(uuid=UUID)]
    assert "gpu0/sm_active_mean" in gpuscope.log_gpu_metrics(Recorder(), 0)


def test_what_the_tracker_raises_is_the_trackers_to_say(fake_torch):
    class Broken:
        def log_scalar(self, name, value, step):
            raise RuntimeError("tracker is closed")

    with pytest.raises(RuntimeError, match="tracker is closed"):
        gpuscope.log_gpu_metrics(Broken(), 0)


def test_the_current_device_may_be_any_ordinal(fake_agent, monkeypatch):
    import sys

    torch = FakeTorch(device=1, uuid="GPU-one")
    monkeypatch.setitem(sys.modules, "torch", torch.module)
    fake_agent.summary_gpus = [summary_gpu(index=7, uuid="GPU-one")]
    assert "gpu1/sm_active_mean" in gpuscope.log_gpu_metrics(Recorder(), 0)


def test_a_span_longer_than_the_agents_day_is_cut_to_its_last_day(fake_agent, fake_torch):
    logger = gpuscope.GpuMetricsLogger()
    logger._span_start = time.time() - 3 * 86400  # an epoch of three days
    logger.log(Recorder(), 0)
    (_, query), = fake_agent.requests
    assert float(query["end"][0]) - float(query["start"][0]) <= metrics.MAX_SUMMARY_SPAN_S + 0.01
