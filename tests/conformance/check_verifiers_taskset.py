"""Runs inside the verifiers==0.4.0 venv, with a taskset package taskpack exported installed
on PYTHONPATH: verifiers' own `load_taskset` finds it by its id and yields every task of the
split asked for (or the default one), and verifiers' own scoring path (`Task.score` on a
trace, as `vf replay` rescores) gives the reference reply 1 and a wrong one 0 on every task;
the tasks' `validate` (`vf validate --mode gold`) passes.

    python check_verifiers_taskset.py PACKAGE [SPLIT]  ->  JSON on stdout
"""

import asyncio
import json
import sys

from verifiers.v1 import TasksetConfig, Trace
from verifiers.v1.configs.agent import AgentConfig
from verifiers.v1.trace import AgentInfo, TraceTask
from verifiers.v1.utils.loaders import load_taskset, taskset_config_type

package = sys.argv[1]
if sys.argv[2:]:  # the taskset's own config type, as verifiers' CLI narrows it
    config = taskset_config_type(package)(id=package, split=sys.argv[2])
else:
    config = TasksetConfig(id=package)
taskset = load_taskset(config)
tasks = list(taskset)
WRONG = {"unit_tests": "```python\npass\n```", "multiple_choice": "Z"}


async def score(task, reply):
    trace = Trace(
        task=TraceTask(type=type(task).__name__, data=task.data),
        agent=AgentInfo(config=AgentConfig()),
        root_reply=reply,
    )
    await task.score(trace)
    return trace.reward


async def main():
    reference, wrong, valid = [], [], []
    for task in tasks:
        kind = (task.data.reward or {}).get("kind")
        reference.append(await score(task, task.data.reference))
        wrong.append(await score(task, WRONG.get(kind, "-987654321")))
        valid.append(await task.validate(None))
    return reference, wrong, valid


reference, wrong, valid = asyncio.run(main())
first = tasks[0].data
print(
    json.dumps(
        {
            "type": type(taskset).__name__,
            "tasks": len(tasks),
            "idx": [t.data.idx for t in tasks[:3]],
            "ids": [t.data.id for t in tasks[:3]],
            "keys": [t.key for t in tasks[:3]],
            "unique_keys": len({t.key for t in tasks}),
            "reference": sorted(set(reference)),
            "wrong": sorted(set(wrong)),
            "valid": sorted(set(valid), key=str),
            "first": first.model_dump(mode="json", exclude_none=True),
        }
    )
)
