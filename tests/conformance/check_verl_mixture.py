"""Runs inside the verl venv: the data config an export writes for verl (a mixture's, or rows in
curriculum order) is verl's own `data` section: OmegaConf loads it, RLHFDataset reads its train
and validation files, and verl's own `create_rl_sampler` over that config hands the training
rows out in the order it says.

    python check_verl_mixture.py verl_data.yaml  ->  JSON on stdout: rows' data sources, and
        the training rows' ids (`extra_info`'s id, else split-index) in the sampler's order
"""

import json
import sys
from collections import Counter

from omegaconf import OmegaConf
from verl.trainer.ppo.utils import create_rl_sampler
from verl.utils.dataset.rl_dataset import RLHFDataset

data = OmegaConf.load(sys.argv[1]).data
config = OmegaConf.create({"filter_overlong_prompts": False, "cache_dir": sys.argv[1] + ".cache"})
out = {"shuffle": bool(data.shuffle)}
for key in ("train_files", "val_files"):
    dataset = RLHFDataset(data_files=list(data[key]), tokenizer=None, config=config)
    out[key] = dict(Counter(dataset[i]["data_source"] for i in range(len(dataset))))
    if key == "train_files":
        extras = [dataset[i]["extra_info"] for i in create_rl_sampler(data, dataset)]
        out["order"] = [e.get("id") or f"{e['split']}-{e['index']:05d}" for e in extras]
print(json.dumps(out))
