"""Runs inside the skyrl venv: skyrl's PromptDataset loads a taskpack export's Parquet, the module
the export ships beside it (`taskpack_skyrl_env.py`) registers the env classes its rows name,
and `skyrl_gym.make` builds each row's environment, which scores the replies given for it.

    python check_skyrl_envs.py FILE.parquet REPLIES.json  ->  JSON on stdout:
        {"env_classes": [...], "rewards": [[row, reward], ...]}
REPLIES.json: [[row, reply], ...]
"""

import json
import sys
from pathlib import Path

import skyrl_gym
from skyrl_dataset import prompt_dataset

parquet = Path(sys.argv[1])
sys.path.insert(0, str(parquet.parent))
import taskpack_skyrl_env  # noqa: E402,F401 - registers the env classes

dataset = prompt_dataset(parquet)
rewards = []
for row, reply in json.loads(Path(sys.argv[2]).read_text()):
    messages, env_class, extras, _ = dataset[row]
    env = skyrl_gym.make(env_class, extras=extras)
    env.init(messages)
    out = env.step(reply)
    assert out["done"]
    rewards.append([row, out["reward"]])
classes = sorted({dataset[i][1] for i in range(len(dataset))})
print(json.dumps({"rows": len(dataset), "env_classes": classes, "rewards": rewards}))
