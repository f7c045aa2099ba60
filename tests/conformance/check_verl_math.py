"""Runs inside the verl_math venv: verl 0.9.1's own math graders on each (reply, gold answer),
each module loaded from verl's files by path (verl's package would import torch):
`math_dapo.compute_score`'s `acc`, `math_reward.compute_score`, and Math-Verify as
`math_verify.compute_score` calls it (its `_verify_in_subprocess`, here in the main thread,
where Math-Verify's alarms work; compute_score only adds a process pool around it).

    python check_verl_math.py pairs.json  ->  JSON on stdout: {"math-dapo": [...], ...}
"""

import contextlib
import importlib.util
import io
import json
import os
import sys

ROOT = importlib.util.find_spec("verl").submodule_search_locations[0]


def load(name):
    path = os.path.join(ROOT, "utils", "reward_score", name + ".py")
    spec = importlib.util.spec_from_file_location("verl_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


dapo, reward, verify = load("math_dapo"), load("math_reward"), load("math_verify")
with open(sys.argv[1]) as f:
    pairs = json.load(f)
out = {"math-dapo": [], "math-reward": [], "math-verify": []}
for reply, gold in pairs:
    with contextlib.redirect_stdout(io.StringIO()):  # math_reward prints what it catches
        out["math-dapo"].append(bool(dapo.compute_score(reply, gold)["acc"]))
        out["math-reward"].append(reward.compute_score(reply, gold) == 1.0)
        out["math-verify"].append(
            verify._verify_in_subprocess("\\boxed{" + gold + "}", reply) == 1.0
        )
print(json.dumps(out))
