"""Runs inside the verl venv: verl's own reward loading takes the reward function an export
names in its `verl_data.yaml` (`verl.trainer.ppo.reward.get_custom_reward_fn` over the config's
`reward.custom_reward_function`) and scores replies to the exported rows with it, called as
verl's naive reward manager calls it (keywords data_source, solution_str, ground_truth,
extra_info, as RLHFDataset hands the row on).

    python check_verl_reward.py verl_data.yaml replies.json  ->  JSON on stdout: the score of
        each reply ({"file": ..., "row": ..., "reply": ...}), in order
"""

import json
import sys

from omegaconf import OmegaConf
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.utils.dataset.rl_dataset import RLHFDataset

exported = OmegaConf.load(sys.argv[1])
config = OmegaConf.create(
    {"reward": {"custom_reward_function": exported.reward.custom_reward_function}}
)
compute_score = get_custom_reward_fn(config)
settings = OmegaConf.create({"filter_overlong_prompts": False, "cache_dir": sys.argv[1] + ".cache"})
datasets = {}
scores = []
with open(sys.argv[2]) as f:
    replies = json.load(f)
for reply in replies:
    if reply["file"] not in datasets:
        datasets[reply["file"]] = RLHFDataset([reply["file"]], tokenizer=None, config=settings)
    row = datasets[reply["file"]][reply["row"]]
    scores.append(
        compute_score(
            data_source=row["data_source"],
            solution_str=reply["reply"],
            ground_truth=row["reward_model"]["ground_truth"],
            extra_info=dict(row["extra_info"]),
        )
    )
print(json.dumps({"path": str(exported.reward.custom_reward_function.path), "scores": scores}))
