"""Runs inside the nemo-gym venv (Python 3.13): NeMo Gym's own RewardProfiler profiles
rollouts of taskpack's NeMo Gym rows, as `gym eval run` would have collected them, and writes
its `*_reward_profiling.jsonl`, which `taskpack annotate` then reads.

    python check_nemo_profile.py ROWS.jsonl REWARDS.json OUT_BASE.jsonl  ->  JSON on stdout

REWARDS.json: {task index: [reward of each rollout]}; each row is repeated once per rollout
with NeMo Gym's task and rollout index keys, as `gym eval run` materializes its inputs.
"""

import json
import sys
from pathlib import Path

from nemo_gym.global_config import ROLLOUT_INDEX_KEY_NAME, TASK_INDEX_KEY_NAME
from nemo_gym.reward_profile import RewardProfiler

rows_path, rewards_path, out_base = sys.argv[1:4]
rows = [json.loads(line) for line in Path(rows_path).read_text().splitlines()]
rewards = json.loads(Path(rewards_path).read_text())
inputs, results = [], []
for task, values in rewards.items():
    for rollout, reward in enumerate(values):
        keys = {TASK_INDEX_KEY_NAME: int(task), ROLLOUT_INDEX_KEY_NAME: rollout}
        inputs.append({**rows[int(task)], "agent_ref": {"name": "simple_agent"}, **keys})
        results.append({**keys, "reward": reward, "response": {"usage": {"output_tokens": 10}}})
profiler = RewardProfiler()
# 0.4 gives (groups, agents); 0.7 adds the repeat-level metrics, and writes each: the groups
# always come first, as does the profile among the files written
metrics = profiler.profile_from_data(inputs, results)
groups = metrics[0]
written = profiler.write_to_disk(*metrics, Path(out_base))[0]
print(json.dumps({"profile": str(written), "groups": len(groups)}))
