"""Runs inside the nemo-gym 0.7 venv: NeMo Gym's own `materialize_task` wraps each row of
taskpack's JSONL as a task, as `gym eval run` does before an episode, and the materialized
rows are written for taskpack to read back.

    python check_nemo_tasks.py ROWS.jsonl TASKSET OUT.jsonl  ->  JSON on stdout

`positional`: rows whose task id is their place (the id 0.7 gives a row lacking one).
"""

import json
import sys

from nemo_gym.task_materialization import materialize_task

rows_path, taskset, out_path = sys.argv[1:4]
with open(rows_path) as f:
    rows = [json.loads(line) for line in f]
tasks = [materialize_task(row, taskset=taskset, task_index=i) for i, row in enumerate(rows)]
with open(out_path, "w") as f:
    for task in tasks:
        f.write(json.dumps(task) + "\n")
ids = [task["task_id"]["task_id"] for task in tasks]
print(
    json.dumps(
        {
            "tasks": len(tasks),
            "positional": sum(task_id == str(i) for i, task_id in enumerate(ids)),
            "unique": len(set(ids)),
            "ids": ids[:3],
        }
    )
)
