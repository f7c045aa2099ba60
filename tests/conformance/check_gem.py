"""Runs inside the gem-llm venv: GEM's GSM8K math environment over taskpack's rows scores the
reference answer 1.0.

    python check_gem.py FILE.parquet  ->  JSON on stdout
"""

import json
import sys

import gem
from datasets import Dataset

dataset = Dataset.from_parquet(sys.argv[1])
env = gem.make("math:GSM8K", dataset=dataset, use_mp=False, eval=True)
rewards = []
for idx in range(3):
    observation, _ = env.reset(idx=idx)
    row = dataset[idx]
    assert observation == row["problem"], (observation, row["problem"])
    _, reward, _, _, _ = env.step("\\\\boxed{" + row["answer"] + "}")
    rewards.append(float(reward))
observation, _ = env.reset(idx=0)
_, wrong, _, _, _ = env.step("\\\\boxed{-987654321}")
print(json.dumps({"rows": len(dataset), "rewards": rewards, "wrong": float(wrong)}))
