"""Runs inside the skyrl venv: skyrl's PromptDataset loads taskpack's Parquet with a tokenizer
built here (nothing downloaded), and skyrl_gym's GSM8K environment scores the reference answer
1.0 and a wrong one 0.0.

    python check_skyrl.py FILE.parquet [swe]  ->  JSON on stdout
"""

import json
import sys

import skyrl_gym
from skyrl_dataset import prompt_dataset

dataset = prompt_dataset(sys.argv[1])
if sys.argv[2:] == ["swe"]:  # mini-swe-agent rows: the generator reads extras["instance"]
    messages, env_class, extras, _ = dataset[0]
    instance = extras["instance"]
    print(json.dumps({"rows": len(dataset), "env_class": env_class, "instance": instance}))
    sys.exit(0)
rewards, wrong = [], []
for i in range(3):
    messages, env_class, extras, _ = dataset[i]
    assert messages and messages[-1]["role"] == "user"
    truth = extras["reward_spec"]["ground_truth"]
    env = skyrl_gym.make(env_class, extras=extras)
    env.init(messages)
    rewards.append(env.step(f"The answer is #### {truth}")["reward"])
    env = skyrl_gym.make(env_class, extras=extras)
    env.init(messages)
    wrong.append(env.step("#### -987654321")["reward"])
print(
    json.dumps({"rows": len(dataset), "env_class": env_class, "rewards": rewards, "wrong": wrong})
)
