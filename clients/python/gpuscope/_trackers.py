"""Experiment trackers, recognised by what they can do rather than by importing their libraries.

| tracker | recognised by | numbers | text (the verdict) |
| --- | --- | --- | --- |
| anything with log_scalar(name, value, step) | `log_scalar` | one call each | skipped |
| TensorBoard SummaryWriter (torch's, tensorboardX) | `add_scalar` | add_scalar(tag, value, global_step=step) | add_text |
| (MlflowClient, run_id) | a pair of an object with `log_metric` and a str | client.log_metric(run_id, key, value, step=step) | skipped |
| the `mlflow` module, or anything like it | `log_metrics` / `log_metric` | log_metrics(dict, step=step) | skipped |
| a W&B run (or the `wandb` module) | `log` | one run.log(dict, step=step) | in the same dict |
| a plain function | callable | f(name, value, step) each | skipped |

MLflow metrics are numbers only and its tags have no step, so the verdict is not sent there.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List


class TrackerSink:
    def log(self, numbers: Dict[str, float], texts: Dict[str, str], step: int) -> None:
        raise NotImplementedError


class ScalarLoggerSink(TrackerSink):
    def __init__(self, tracker: Any) -> None:
        self.tracker = tracker

    def log(self, numbers: Dict[str, float], texts: Dict[str, str], step: int) -> None:
        for name, value in numbers.items():
            self.tracker.log_scalar(name, value, step)


class TensorBoardSink(TrackerSink):
    def __init__(self, writer: Any) -> None:
        self.writer = writer

    def log(self, numbers: Dict[str, float], texts: Dict[str, str], step: int) -> None:
        for tag, value in numbers.items():
            self.writer.add_scalar(tag, value, global_step=step)
        if texts and callable(getattr(self.writer, "add_text", None)):
            for tag, text in texts.items():
                self.writer.add_text(tag, text, global_step=step)


class MlflowSink(TrackerSink):
    def __init__(self, tracker: Any) -> None:
        self.tracker = tracker

    def log(self, numbers: Dict[str, float], texts: Dict[str, str], step: int) -> None:
        if not numbers:
            return
        if callable(getattr(self.tracker, "log_metrics", None)):
            self.tracker.log_metrics(dict(numbers), step=step)
        else:
            for key, value in numbers.items():
                self.tracker.log_metric(key, value, step=step)


class MlflowClientSink(TrackerSink):
    def __init__(self, client: Any, run_id: str) -> None:
        self.client = client
        self.run_id = run_id

    def log(self, numbers: Dict[str, float], texts: Dict[str, str], step: int) -> None:
        for key, value in numbers.items():
            self.client.log_metric(self.run_id, key, value, step=step)


class WandbSink(TrackerSink):
    def __init__(self, run: Any) -> None:
        self.run = run

    def log(self, numbers: Dict[str, float], texts: Dict[str, str], step: int) -> None:
        if numbers or texts:
            self.run.log({**numbers, **texts}, step=step)


class CallableSink(TrackerSink):
    def __init__(self, function: Callable[[str, float, int], Any]) -> None:
        self.function = function

    def log(self, numbers: Dict[str, float], texts: Dict[str, str], step: int) -> None:
        for name, value in numbers.items():
            self.function(name, value, step)


def _has(obj: Any, name: str) -> bool:
    return callable(getattr(obj, name, None))


def _is_client_and_run(tracker: Any) -> bool:
    return (isinstance(tracker, tuple) and len(tracker) == 2 and isinstance(tracker[1], str)
            and _has(tracker[0], "log_metric"))


def sinks_for(tracker: Any) -> List[TrackerSink]:
    """The sinks for a tracker, or for each of a list (or tuple) of trackers. TypeError for something
    that is none of the kinds above: a mistake in the training script, found on the first call."""
    if _is_client_and_run(tracker):
        return [MlflowClientSink(tracker[0], tracker[1])]
    if isinstance(tracker, (list, tuple)):
        return [sink for each in tracker for sink in sinks_for(each)]
    if _has(tracker, "log_scalar"):
        return [ScalarLoggerSink(tracker)]
    if _has(tracker, "add_scalar"):
        return [TensorBoardSink(tracker)]
    if _has(tracker, "log_metric") and _has(tracker, "log_batch") and not _has(tracker, "log_metrics"):
        raise TypeError("an MlflowClient needs its run: pass (client, run_id)")
    if _has(tracker, "log_metrics") or _has(tracker, "log_metric"):
        return [MlflowSink(tracker)]
    if _has(tracker, "log"):
        return [WandbSink(tracker)]
    if callable(tracker):
        return [CallableSink(tracker)]
    raise TypeError(
        f"gpuscope: cannot log to a {type(tracker).__name__}: expected a W&B run, a TensorBoard SummaryWriter, "
        "mlflow (or (MlflowClient, run_id)), an object with log_scalar(name, value, step), "
        "or a function f(name, value, step)")
