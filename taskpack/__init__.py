"""taskpack: one validated task-set format for RL environments, converters, and a registry."""

from taskpack.errors import InvalidTask, TaskpackError
from taskpack.model import Manifest, Message, Task, TaskFile
from taskpack.registry.client import load, publish, pull
from taskpack.taskset import Split, TaskSet, TaskSetWriter, open, write
from taskpack.verify import verify

__all__ = [
    "InvalidTask",
    "Manifest",
    "Message",
    "Split",
    "Task",
    "TaskFile",
    "TaskSet",
    "TaskSetWriter",
    "TaskpackError",
    "load",
    "open",
    "publish",
    "pull",
    "verify",
    "write",
]
__version__ = "0.1.0"
