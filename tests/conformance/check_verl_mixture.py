"""Runs inside the verl venv: the data config a mixture's verl export writes is verl's own
`data` section: OmegaConf loads it and RLHFDataset reads its train and validation files.

    python check_verl_mixture.py verl_data.yaml  ->  JSON on stdout: rows and data sources
"""

import json
import sys
from collections import Counter

from omegaconf import OmegaConf
from verl.utils.dataset.rl_dataset import RLHFDataset

data = OmegaConf.load(sys.argv[1]).data
config = OmegaConf.create({"filter_overlong_prompts": False, "cache_dir": sys.argv[1] + ".cache"})
out = {"shuffle": bool(data.shuffle)}
for key in ("train_files", "val_files"):
    dataset = RLHFDataset(data_files=list(data[key]), tokenizer=None, config=config)
    out[key] = dict(Counter(dataset[i]["data_source"] for i in range(len(dataset))))
print(json.dumps(out))
