"""Runs inside the verifiers==0.4.0 venv, with a taskset package on PYTHONPATH: each source of
the `prime_rl.toml` its export writes (prime-rl's `[[orchestrator.train.source]]` and
`[[orchestrator.eval.source]]` entries, whose `env.taskset` table is the verifiers.v1 taskset
config) loads through verifiers' own `load_taskset`, as prime-rl's orchestrator loads it, and
yields its source's tasks, keyed as prime-rl's curriculum keys them (`Task.key`).

    python check_prime_rl_envs.py prime_rl.toml  ->  JSON on stdout
"""

import json
import sys

import tomllib
from verifiers.v1.utils.loaders import load_taskset, taskset_config_type

with open(sys.argv[1], "rb") as f:
    config = tomllib.load(f)["orchestrator"]
out = {"ratios": [], "samplers": [], "train": {}, "eval": {}}
for key in ("train", "eval"):
    for source in config.get(key, {}).get("source", []):
        taskset = source["env"]["taskset"]
        loaded = load_taskset(taskset_config_type(taskset["id"])(**taskset))
        out[key][source["name"]] = [str(task.key) for task in loaded]
        if key == "train":
            out["ratios"].append(source["ratio"])
            out["samplers"].append(source.get("curriculum", {}).get("sampler", {}).get("type"))
print(json.dumps(out))
