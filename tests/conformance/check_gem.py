"""Runs inside the gem-llm venv: GEM's own environments over taskpack's rows score the
reference answer 1.0 and a wrong one 0.0: the GSM8K math environment, or (with `qa`) a QA
environment, which scores exact answers such as a choice's letter.

    python check_gem.py FILE.parquet [qa]  ->  JSON on stdout
"""

import json
import sys

import gem
from datasets import Dataset

dataset = Dataset.from_parquet(sys.argv[1])
if sys.argv[2:] == ["qa"]:
    env = gem.make("qa:HotpotQA", dataset=dataset, use_mp=False, eval=True)
    answers, rewards, wrong = set(dataset["answer"]), [], []
    for _ in range(3):
        env.reset()
        assert env.answer in answers
        rewards.append(float(env.step(f"<answer>{env.answer}</answer>")[1]))
        wrong.append(float(env.step("<answer>Z</answer>")[1]))
    print(json.dumps({"rows": len(dataset), "rewards": rewards, "wrong": wrong}))
    sys.exit(0)
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
