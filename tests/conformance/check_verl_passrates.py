"""Runs inside the verl venv: verl's RLHFDataset loads an annotated export and hands each
row's `extra_info` on (to the reward function, `compute_score(..., extra_info)`), pass rates
included.

    python check_verl_passrates.py FILE.parquet  ->  JSON on stdout: id -> pass_rates
"""

import json
import sys

from omegaconf import OmegaConf
from verl.utils.dataset.rl_dataset import RLHFDataset

config = OmegaConf.create({"filter_overlong_prompts": False, "cache_dir": sys.argv[1] + ".cache"})
dataset = RLHFDataset(data_files=sys.argv[1:], tokenizer=None, config=config)
found = {}
for i in range(len(dataset)):
    extra = dataset[i]["extra_info"]
    rates = extra.get("pass_rates")
    if rates is not None:
        key = extra.get("id") or f"{extra['split']}-{extra['index']:05d}"
        found[key] = [dict(r) for r in rates]
print(json.dumps({"rows": len(dataset), "rated": found}, default=str))
