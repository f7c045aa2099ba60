"""taskpack: one validated task-set format for RL environments, converters, and a registry."""

from typing import TYPE_CHECKING, Any

from taskpack.diff import diff
from taskpack.errors import InvalidTask, TaskpackError
from taskpack.merge import merge
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

# The validated model classes load on first use: a process that only reads stored tasks (an
# environment at episode start) never imports pydantic.
_MODEL = ("Manifest", "Message", "Task", "TaskFile")


def __getattr__(name: str) -> Any:
    if name in _MODEL:
        from taskpack import model

        return getattr(model, name)
    raise AttributeError(f"module 'taskpack' has no attribute {name!r}")


if TYPE_CHECKING:
    from taskpack.model import Manifest, Message, Task, TaskFile
