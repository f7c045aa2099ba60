"""Runs inside the openenv venv: OpenEnv 0.10's `HarborTaskProvider`, unmodified, serves the
Harbor task folders of a taskpack export over its Task API, from a local folder of task
folders or from a Hub dataset repo laid out as `tasks/<name>/` (downloaded through HF_ENDPOINT):
its split, its count, and each task's name and instruction.

    python check_openenv_tasks.py FOLDER | ORG/NAME  ->  JSON on stdout
"""

import json
import sys

from openenv.harbor.tasks import HarborTaskProvider

spec = sys.argv[1]
provider = HarborTaskProvider([spec])
[split] = provider.list_splits()
tasks = provider.list_tasks(spec)
print(
    json.dumps(
        {
            "split": split,
            "count": provider.num_tasks(spec),
            "names": [t["task_name"] for t in tasks],
            "instructions": [t["instruction"] for t in tasks],
            "third": provider.get_task(spec, 2)["task_name"],
            "files": sorted(
                str(p.relative_to(provider.task_dir(spec, 2)))
                for p in provider.task_dir(spec, 2).rglob("*")
                if p.is_file()
            ),
        }
    )
)
