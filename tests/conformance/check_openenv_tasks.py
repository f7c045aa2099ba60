"""Runs inside the openenv venv: OpenEnv 0.10's `HarborTaskProvider`, unmodified, serves the
Harbor task folders of a taskpack export (a local folder of task folders) over its Task API:
its split, its count, and each task's name and instruction.

    python check_openenv_tasks.py FOLDER  ->  JSON on stdout
"""

import json
import sys

from openenv.harbor.tasks import HarborTaskProvider

folder = sys.argv[1]
provider = HarborTaskProvider([folder])
[split] = provider.list_splits()
tasks = provider.list_tasks(folder)
print(
    json.dumps(
        {
            "split": split,
            "count": provider.num_tasks(folder),
            "names": [t["task_name"] for t in tasks],
            "instructions": [t["instruction"] for t in tasks],
            "third": provider.get_task(folder, 2)["task_name"],
        }
    )
)
