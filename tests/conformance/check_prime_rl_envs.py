"""Runs inside the verifiers==0.4.0 venv, with a mixture's taskset package on PYTHONPATH: each
environment of the `prime_rl.toml` its export writes (prime-rl's `[[env]]` and `[[eval.env]]`
tables, whose `taskset` table is the verifiers.v1 taskset config) loads through verifiers' own
`load_taskset`, as prime-rl's orchestrator loads it, and yields its source's tasks.

    python check_prime_rl_envs.py prime_rl.toml  ->  JSON on stdout
"""

import json
import sys

import tomllib
from verifiers.v1.utils.loaders import load_taskset, taskset_config_type

with open(sys.argv[1], "rb") as f:
    config = tomllib.load(f)
out = {"env_ratios": config["buffer"]["env_ratios"], "env": {}, "eval": {}}
for key, envs in (("env", config["env"]), ("eval", config.get("eval", {}).get("env", []))):
    for env in envs:
        taskset = load_taskset(taskset_config_type(env["id"])(id=env["id"], **env["taskset"]))
        out[key][env["name"]] = [str(task.key) for task in taskset]
print(json.dumps(out))
