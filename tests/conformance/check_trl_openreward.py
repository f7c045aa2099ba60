"""Runs inside the trl venv (with openreward): TRL 1.16's OpenReward integration
(`trl.experimental.openreward`), unmodified, against a `taskpack serve`: its spec builds the
training dataset from the served split, its environment factory makes one environment per
rollout, each rollout's reset opens an ORS session, a scripted policy answers through the
tool TRL bound from the server's tool list, and TRL's own reward function reads the rewards.

    python check_trl_openreward.py URL ENV SPLIT N  ->  JSON on stdout
The policy gives task i its reference answer (the spec's `answer`) when i is even, else a wrong
one.
"""

import json
import os
import sys

url, name, split, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
os.environ["OPENREWARD_SESSION_URL"] = url  # openreward's client: the sessions' server
os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
from trl.experimental.openreward import OpenRewardSpec  # noqa: E402

spec = OpenRewardSpec(url, split=split, num_tasks=count, env_name=name)
dataset = spec.train_dataset
make = spec.environment_factory
environments, prompts, tools = [], [], []
for row in dataset:
    env = make()
    prompts.append(env.reset(task_index=row["task_index"]))
    tools.append(sorted(n for n in dir(env) if not n.startswith("_") and callable(getattr(env, n))))
    given = row["answer"] if row["task_index"] % 2 == 0 else "not the answer"
    env.answer(answer=given)  # the tool TRL bound from the server's tool list
    environments.append(env)
print(
    json.dumps(
        {
            "rows": len(dataset),
            "columns": sorted(dataset.column_names),
            "prompts": prompts,
            "tools": tools[0],
            "rewards": spec.reward_funcs(environments),
            "finished": [env.finished for env in environments],
        }
    )
)
