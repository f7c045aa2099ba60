"""Runs inside the ors-sdk venv (or the openreward one): the framework's own client, unmodified,
reads a `taskpack serve` as an ORS environment: the splits, each split's count, task 5, a range
of 10, a range from the end, the last task, and the errors for a bad split, index and name.

    python check_ors_client.py ors|openreward URL ENV SPLIT  ->  JSON on stdout
"""

import json
import os
import sys

kind, url, name, split = sys.argv[1:5]


def failure(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the error the client raised, as it words it
        return [getattr(e, "status", None), str(getattr(e, "message", e))]
    return None


if kind == "ors":
    from ors.client import ORS

    client = ORS(base_url=url)
    env = client.environment(name)
    unknown = client.environment(name + "-nope")
else:  # OpenReward's client talks to a session server named by OPENREWARD_SESSION_URL
    os.environ["OPENREWARD_SESSION_URL"] = url
    from openreward import OpenReward

    client = OpenReward(api_key="local")
    env = client.environments.get(name)
    unknown = client.environments.get(name + "-nope")
splits = env.list_splits()
result = {
    "splits": splits,
    "counts": {s: env.num_tasks(s) for s in splits},
    "task5": env.get_task(split, 5).task_spec,
    "range": [t.task_spec for t in env.get_task_range(split, 10, 20)],
    "tail": [t.task_spec["id"] for t in env.get_task_range(split, -3)],
    "last": env.get_task(split, -1).task_spec["id"],
    "errors": {
        "split": failure(lambda: env.num_tasks("no-such-split")),
        "index": failure(lambda: env.get_task(split, 10**6)),
        "name": failure(lambda: unknown.list_splits()),
    },
}
print(json.dumps(result))
