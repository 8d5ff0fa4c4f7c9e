"""Each kind of tracker, as a recording fake with the real library's method signatures."""

import pytest

from gpuscope._trackers import sinks_for

NUMBERS = {"gpu/memory_allocated_mb": 3072.0, "gpu0/sm_active_mean": 0.81}
TEXTS = {"gpu0/verdict": "compute_bound"}


class ScalarLogger:
    def __init__(self):
        self.calls = []

    def log_scalar(self, name, value, step):
        self.calls.append((name, value, step))


class WandbRun:  # wandb.sdk.wandb_run.Run.log(data, step=None, commit=None)
    def __init__(self):
        self.calls = []

    def log(self, data, step=None, commit=None):
        self.calls.append((dict(data), step))


class SummaryWriter:  # torch.utils.tensorboard.SummaryWriter
    def __init__(self, with_text=True):
        self.scalars, self.texts = [], []
        if not with_text:
            self.add_text = None

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None):
        self.scalars.append((tag, scalar_value, global_step))

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self.texts.append((tag, text_string, global_step))


class MlflowModule:  # the mlflow module's fluent API
    def __init__(self):
        self.batches = []

    def log_metric(self, key, value, step=None):
        raise AssertionError("log_metrics is preferred: one call")

    def log_metrics(self, metrics, step=None):
        self.batches.append((dict(metrics), step))


class MlflowClient:  # mlflow.tracking.MlflowClient
    def __init__(self):
        self.metrics = []

    def log_metric(self, run_id, key, value, timestamp=None, step=None):
        self.metrics.append((run_id, key, value, step))

    def log_batch(self, run_id, metrics=(), params=(), tags=()):
        raise AssertionError("not used")


def log(tracker, numbers=NUMBERS, texts=TEXTS, step=7):
    for sink in sinks_for(tracker):
        sink.log(numbers, texts, step)


def test_an_object_with_log_scalar_gets_one_call_per_number_and_no_text():
    tracker = ScalarLogger()
    log(tracker)
    assert tracker.calls == [("gpu/memory_allocated_mb", 3072.0, 7), ("gpu0/sm_active_mean", 0.81, 7)]


def test_a_wandb_run_gets_one_log_call_with_the_numbers_and_the_verdict():
    run = WandbRun()
    log(run)
    assert run.calls == [({**NUMBERS, **TEXTS}, 7)]


def test_a_summary_writer_gets_add_scalar_and_the_verdict_through_add_text():
    writer = SummaryWriter()
    log(writer)
    assert writer.scalars == [("gpu/memory_allocated_mb", 3072.0, 7), ("gpu0/sm_active_mean", 0.81, 7)]
    assert writer.texts == [("gpu0/verdict", "compute_bound", 7)]


def test_a_writer_without_add_text_gets_the_numbers_only():
    writer = SummaryWriter(with_text=False)
    log(writer)
    assert len(writer.scalars) == 2


def test_mlflow_gets_one_log_metrics_call_and_no_text():
    mlflow = MlflowModule()
    log(mlflow)
    assert mlflow.batches == [(NUMBERS, 7)]


def test_an_mlflow_client_with_its_run_id_gets_log_metric_per_number():
    client = MlflowClient()
    log((client, "run-1"))
    assert client.metrics == [("run-1", "gpu/memory_allocated_mb", 3072.0, 7), ("run-1", "gpu0/sm_active_mean", 0.81, 7)]


def test_an_mlflow_client_without_its_run_is_a_mistake_said_at_once():
    with pytest.raises(TypeError, match="run_id"):
        sinks_for(MlflowClient())


def test_a_plain_function_gets_name_value_step():
    calls = []
    log(lambda name, value, step: calls.append((name, value, step)))
    assert calls == [("gpu/memory_allocated_mb", 3072.0, 7), ("gpu0/sm_active_mean", 0.81, 7)]


def test_a_list_of_trackers_gets_the_same_figures_each():
    run, writer = WandbRun(), SummaryWriter()
    log([run, writer])
    assert len(run.calls) == 1 and len(writer.scalars) == 2


def test_something_that_is_no_tracker_is_a_type_error():
    with pytest.raises(TypeError, match="cannot log to a int"):
        sinks_for(42)


def test_log_scalar_wins_over_log_when_an_object_has_both():
    class Both(ScalarLogger):
        def log(self, *args, **kwargs):
            raise AssertionError("log_scalar is the more specific")

    tracker = Both()
    log(tracker)
    assert len(tracker.calls) == 2
