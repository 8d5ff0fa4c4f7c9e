import time

import pytest

import gpuscope
from gpuscope import _identity, monitor as monitor_module


def test_a_timed_step_sends_its_wall_time_loss_and_scalars(event_socket):
    monitor = gpuscope.Monitor("llama-ft")
    with monitor.step() as step:
        time.sleep(0.02)
        step.loss = 2.31
        step.scalars["lr"] = 3e-4
    event = event_socket.receive()
    assert event["event"] == "step" and event["job"] == "llama-ft" and event["rank"] == 0
    assert event["step"] == 0 and event["loss"] == 2.31 and event["scalars"] == {"lr": 3e-4}
    assert 0.02 <= event["duration_s"] < 1.0
    assert abs(event["time"] - time.time()) < 5
    assert step.duration_s == event["duration_s"]


def test_steps_are_numbered_from_the_previous_one(event_socket):
    monitor = gpuscope.Monitor("j", send_time=False)
    for _ in range(2):
        with monitor.step():
            pass
    monitor.record_step(10, 0.5)
    with monitor.step():
        pass
    assert [event_socket.receive()["step"] for _ in range(4)] == [0, 1, 10, 11]


def test_a_step_that_raises_is_not_sent_and_the_exception_is_the_training_loops(event_socket):
    monitor = gpuscope.Monitor("j")
    with pytest.raises(ZeroDivisionError):
        with monitor.step():
            1 / 0
    assert event_socket.pending() == []


def test_record_step_sends_a_step_timed_elsewhere(event_socket):
    monitor = gpuscope.Monitor("j", rank=2, world_size=8, local_rank=2, gpu="GPU-abc", send_time=False)
    assert monitor.record_step(120, 0.512, loss=2.31, lr=3e-4, grad_norm=1.5)
    assert event_socket.receive() == {
        "event": "step", "job": "j", "rank": 2, "world_size": 8, "local_rank": 2, "gpu": "GPU-abc",
        "step": 120, "duration_s": 0.512, "loss": 2.31, "scalars": {"lr": 3e-4, "grad_norm": 1.5}}


def test_nothing_raises_into_the_loop_without_an_agent_or_with_nonsense(tmp_path):
    # A socket path of its own: an agent on this host (tests of the agent run beside these) may be
    # listening at the default /run/gpuscope/events.sock.
    monitor = gpuscope.Monitor("j", socket_path=str(tmp_path / "no-agent.sock"))
    assert monitor.record_step(1, 0.5) is False
    assert monitor.record_step(-1, 0.5) is False
    assert monitor.record_step(2, float("nan"), loss="x", lr=object()) is False
    with monitor.step() as step:
        step.loss = object()
    with monitor.epoch(0):
        pass
    stats = monitor.stats()
    # Without an agent an event is dropped before it is even encoded: all six count as unreachable.
    assert stats["unreachable"] == 6 and stats["sent"] == 0 and stats["connect_attempts"] == 1


def test_values_the_protocol_forbids_are_counted_as_invalid_not_sent(event_socket):
    monitor = gpuscope.Monitor("j")
    assert monitor.record_step(-1, 0.5) is False
    assert monitor.record_step(2, float("nan")) is False
    assert monitor.record_step(3, 0.5, loss=float("inf"), lr=float("nan"))  # sent, without them
    assert monitor.epoch_start(-1) is False
    stats = monitor.stats()
    assert stats["invalid"] == 3 and stats["sent"] == 1
    event = event_socket.receive()
    assert event["step"] == 3 and "loss" not in event and "scalars" not in event


def test_the_identity_comes_from_torchruns_environment(event_socket, monkeypatch):
    monkeypatch.setenv("RANK", "5")
    monkeypatch.setenv("WORLD_SIZE", "16")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "run-42")
    assert gpuscope.Monitor().identity == {"job": "run-42", "rank": 5, "world_size": 16, "local_rank": 1}


def test_the_job_is_named_by_argument_then_gpuscope_job_then_torchelastic_then_the_script(monkeypatch):
    env = {"GPUSCOPE_JOB": "from-env", "TORCHELASTIC_RUN_ID": "elastic"}
    assert _identity.job_name("arg", env, ["train.py"]) == "arg"
    assert _identity.job_name(None, env, ["train.py"]) == "from-env"
    assert _identity.job_name(None, {"TORCHELASTIC_RUN_ID": "elastic"}, ["train.py"]) == "elastic"
    assert _identity.job_name(None, {"TORCHELASTIC_RUN_ID": "none"}, ["/src/train.py"]) == "train"  # torchrun's default
    assert _identity.job_name(None, {}, ["/src/mypkg/__main__.py"]) == "mypkg"
    assert _identity.job_name(None, {}, ["-c"]) == "python"


def test_torch_distributed_wins_over_the_environment_once_initialised(event_socket, fake_torch, monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setattr(monitor_module, "IDENTITY_RECHECK_S", 0.0)
    fake_torch.initialized = False
    monitor = gpuscope.Monitor("j", send_time=False)
    monitor.record_step(0, 0.1)
    assert event_socket.receive()["rank"] == 0
    fake_torch.init_process_group(rank=3, world_size=4)
    monitor.record_step(1, 0.1)
    event = event_socket.receive()
    assert (event["rank"], event["world_size"]) == (3, 4)


def test_the_gpu_is_the_current_devices_uuid_once_the_process_has_initialised_cuda(event_socket, fake_torch,
                                                                                   monkeypatch):
    monkeypatch.setattr(monitor_module, "IDENTITY_RECHECK_S", 0.0)
    fake_torch.initialized = False
    fake_torch.uuid = "58e2a3a1-5d6e-4b11-9f1c-000000000003"  # torch >= 2.1 has no "GPU-" prefix
    monitor = gpuscope.Monitor("j", send_time=False)
    monitor.record_step(0, 0.1)
    assert "gpu" not in event_socket.receive()
    fake_torch.initialized = True  # the script called set_device() and ran its first step
    fake_torch.device = 3
    monitor.record_step(1, 0.1)
    assert event_socket.receive()["gpu"] == "GPU-58e2a3a1-5d6e-4b11-9f1c-000000000003"
    assert not fake_torch.context_created_before_init


def test_an_epoch_sends_start_and_end_with_the_allocator_and_resets_the_peak(event_socket, fake_torch):
    monitor = gpuscope.Monitor("j", send_time=False)
    with monitor.epoch(2) as epoch:
        epoch.loss = 2.05
    start, end = event_socket.receive(), event_socket.receive()
    assert start["event"] == "epoch_start" and start["epoch"] == 2
    assert end == {"event": "epoch_end", "job": "j", "rank": 0, "epoch": 2, "loss": 2.05,
                   "allocated_bytes": 3 << 30, "reserved_bytes": 4 << 30, "peak_allocated_bytes": 5 << 30}
    assert fake_torch.peak_resets == [0]


def test_the_peak_is_left_alone_when_asked(event_socket, fake_torch):
    gpuscope.Monitor("j", reset_peak_memory=False).epoch_start(0)
    assert fake_torch.peak_resets == []


def test_an_epoch_that_raises_sends_only_its_start(event_socket):
    monitor = gpuscope.Monitor("j")
    with pytest.raises(KeyError):
        with monitor.epoch(0):
            raise KeyError("x")
    assert [event_socket.receive()["event"]] == ["epoch_start"]
    assert event_socket.pending() == []


def test_a_cpu_only_torch_sends_no_allocator_figures(event_socket, fake_torch):
    fake_torch.available = False
    monitor = gpuscope.Monitor("j", send_time=False)
    monitor.epoch_end(0)
    assert event_socket.receive() == {"event": "epoch_end", "job": "j", "rank": 0, "epoch": 0}
    assert fake_torch.peak_resets == []
