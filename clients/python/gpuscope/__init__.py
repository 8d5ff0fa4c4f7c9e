"""gpuscope's training client: one import, one line in the training loop.

    import gpuscope
    gpuscope.log_gpu_metrics(run, epoch)          # the GPU's figures in W&B, TensorBoard, MLflow, ...
    monitor = gpuscope.Monitor()                  # steps and epochs to the gpuscope agent on this node
    gpuscope.check(raise_on_failure=True)         # the health gate before an epoch

Standard library only; torch is used when the training script has imported it, never imported here.
Nothing in this package raises into a training loop because a GPU, a driver or an agent is missing.
The wire protocol and the agent's endpoints: clients/README.md in the gpuscope repository.
"""

from .health import GpuUnhealthy, HealthReport, Problem, check
from .metrics import GpuMetricsLogger, log_gpu_metrics
from .monitor import EpochScope, Monitor, StepTimer

__version__ = "0.1.0"

__all__ = [
    "EpochScope",
    "GpuMetricsLogger",
    "GpuUnhealthy",
    "HealthReport",
    "Monitor",
    "Problem",
    "StepTimer",
    "check",
    "log_gpu_metrics",
]
