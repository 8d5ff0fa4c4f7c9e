"""With the real PyTorch (Debian's python3-torch is a CPU build): the CPU-only path for real, and a real
TensorBoard SummaryWriter where one is installed. In a child interpreter, so the other tests keep
their torch stand-in."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import PACKAGE_ROOT, closed_port_url


def run_with_torch(code, **environ):
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": str(PACKAGE_ROOT),
        "GPUSCOPE_URL": environ.pop("GPUSCOPE_URL", closed_port_url()),
    })
    env.update(environ)
    finished = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                              text=True, timeout=120, check=False)
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout.strip().splitlines()[-1])


def has_module(name):
    finished = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, check=False)
    return finished.returncode == 0


needs_torch = pytest.mark.skipif(not has_module("torch"), reason="PyTorch is not installed (Debian: python3-torch)")


@needs_torch
def test_on_a_cpu_only_torch_nothing_is_logged_nothing_raised_and_the_agent_not_asked(fake_agent, event_socket):
    fake_agent.summary_gpus = [{"gpu": 0, "uuid": "GPU-x", "sm_active": {"mean": 0.5, "min": 0, "max": 1}}]
    outcome = run_with_torch("""
        import json, time
        import torch
        import gpuscope
        model = torch.nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        monitor = gpuscope.Monitor("cpu-job", send_time=False)
        logged = []
        for epoch in range(2):
            with monitor.epoch(epoch) as scope:
                for _ in range(3):
                    with monitor.step() as step:
                        loss = model(torch.randn(8, 4)).pow(2).mean()
                        optimizer.zero_grad(); loss.backward(); optimizer.step()
                        step.loss = loss  # the tensor itself: float() reads it
                scope.loss = loss.item()
            figures = gpuscope.log_gpu_metrics(lambda n, v, s: logged.append(n), epoch)
        report = gpuscope.check()
        print(json.dumps({"cuda": torch.cuda.is_available(), "figures": figures, "logged": logged,
                          "stats": monitor.stats(), "healthy": report.healthy, "source": report.source}))
    """, GPUSCOPE_URL=fake_agent.url, GPUSCOPE_EVENTS_SOCKET=str(event_socket.path))
    if outcome["cuda"]:
        pytest.skip("this torch has CUDA: the CPU-only path needs a CPU build")
    assert outcome["figures"] == {} and outcome["logged"] == []
    assert outcome["stats"]["sent"] == 10 and outcome["stats"]["unreachable"] == 0
    assert outcome["healthy"] and outcome["source"] == "agent"
    assert [path for path in fake_agent.paths() if path == "/api/v1/summary"] == []
    events = [json.loads(datagram) for datagram in event_socket.pending()]
    assert [e["event"] for e in events[:5]] == ["epoch_start", "step", "step", "step", "epoch_end"]
    assert all("allocated_bytes" not in e for e in events)  # no CUDA allocator on a CPU build
    assert isinstance(events[1]["loss"], float) and events[4]["loss"] == events[3]["loss"]


@needs_torch
def test_a_real_tensorboard_summary_writer_takes_the_figures_and_the_verdict(tmp_path):
    if not has_module("torch.utils.tensorboard"):
        pytest.skip("torch.utils.tensorboard needs the tensorboard package, which Debian 12 does not ship "
                    "(no python3-tensorboard); the writer's calls are covered by the recording fake in test_trackers")
    # A CPU build logs nothing by design, so the figures are handed to the writer's sink directly and read
    # back from the event file.
    outcome = run_with_torch(f"""
        import json
        from torch.utils.tensorboard import SummaryWriter
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        from gpuscope._trackers import sinks_for
        writer = SummaryWriter({str(tmp_path)!r})
        for sink in sinks_for(writer):
            sink.log({{"gpu0/sm_active_mean": 0.5, "gpu/memory_allocated_mb": 3072.0}},
                     {{"gpu0/verdict": "compute_bound"}}, 3)
        writer.close()
        events = EventAccumulator({str(tmp_path)!r}); events.Reload()
        scalars = {{tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}}
        print(json.dumps({{"scalars": scalars, "tensors": events.Tags().get("tensors", [])}}))
    """)
    assert outcome["scalars"] == {"gpu0/sm_active_mean": [[3, 0.5]], "gpu/memory_allocated_mb": [[3, 3072.0]]}
    assert any(tag.startswith("gpu0/verdict") for tag in outcome["tensors"])  # add_text is stored as a tensor
