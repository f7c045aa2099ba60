"""taskpack: one validated task-set format for RL environments, converters, and a registry."""

from taskpack.diff import diff
from taskpack.errors import InvalidTask, TaskpackError
from taskpack.merge import merge
from taskpack.model import Manifest, Message, Task, TaskFile
from taskpack.registry.client import listing, load, open, publish, pull, versions
from taskpack.taskset import Split, TaskSet, TaskSetWriter, write
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
    "diff",
    "listing",
    "load",
    "merge",
    "open",
    "publish",
    "pull",
    "verify",
    "versions",
    "write",
]
__version__ = "0.1.0"
