"""taskpack: one validated task-set format for RL environments, converters, and a registry."""

from __future__ import annotations

from taskpack.base.lazy import lazy
from taskpack.errors import InvalidTask, TaskpackError

# Not `typing.TYPE_CHECKING`: importing typing costs a worker's fresh process 4 ms it never uses.
TYPE_CHECKING = False
__all__ = [
    "InvalidTask",
    "Manifest",
    "Message",
    "Sampler",
    "Split",
    "Task",
    "TaskFile",
    "TaskSet",
    "TaskSetWriter",
    "TaskpackError",
    "diff",
    "grade",
    "import_sharded",
    "listing",
    "load",
    "merge",
    "open",
    "publish",
    "pull",
    "trl",
    "verify",
    "versions",
    "write",
]
__version__ = "0.1.0"

# The public names load on first use, each with its module: `import taskpack` costs little more
# than pyarrow's own import, and a process that only reads stored tasks (an environment at
# episode start) never imports pydantic, the writers or the registry backends it does not use.
_LAZY = {
    "Manifest": "model",
    "Message": "model",
    "Task": "model",
    "TaskFile": "model",
    "Sampler": "storage.views",
    "Split": "storage.taskset",
    "TaskSet": "storage.taskset",
    "TaskSetWriter": "storage.writer",
    "write": "storage.writer",
    "listing": "registry.client",
    "load": "episode",
    "open": "registry.client",
    "publish": "registry.client",
    "pull": "registry.client",
    "versions": "registry.client",
    "diff": "changes",
    "grade": "rewards.grading",
    "import_sharded": "sharded",
    "merge": "merging",
    "verify": "storage.integrity",
    "trl": "trl",
}


__getattr__, __dir__ = lazy(__name__, _LAZY, __all__)


if TYPE_CHECKING:
    from taskpack import trl
    from taskpack.changes import diff
    from taskpack.episode import load
    from taskpack.merging import merge
    from taskpack.model import Manifest, Message, Task, TaskFile
    from taskpack.registry.client import listing, open, publish, pull, versions
    from taskpack.rewards.grading import grade
    from taskpack.sharded import import_sharded
    from taskpack.storage.integrity import verify
    from taskpack.storage.taskset import Split, TaskSet
    from taskpack.storage.views import Sampler
    from taskpack.storage.writer import TaskSetWriter, write
