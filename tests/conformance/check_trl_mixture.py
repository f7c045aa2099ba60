"""Runs inside the trl venv: the `datasets` mixture an export writes for TRL is TRL's own: TRL's
config parser reads it into a DatasetMixtureConfig and a GRPOConfig (as `trl grpo --config`
does), TRL's `get_dataset` loads the training rows, and GRPO's own sampler (`RepeatSampler`,
shuffled as the config says) hands them out.

    python check_trl_mixture.py trl_datasets.yaml SCRATCH  ->  JSON on stdout: rows' data
        sources in the sampler's order, and whether the config shuffles
"""

import json
import sys

from trl import DatasetMixtureConfig, GRPOConfig, TrlParser, get_dataset
from trl.trainer.utils import RepeatSampler

parser = TrlParser((DatasetMixtureConfig, GRPOConfig))
# `--use_cpu`: the CPU-only venv (GRPOConfig refuses its bf16 default without a GPU)
args = ["--config", sys.argv[1], "--output_dir", sys.argv[2], "--use_cpu", "true"]
mixture, grpo = parser.parse_args_and_config(args)
train = get_dataset(mixture)["train"]
sampler = RepeatSampler(train, mini_repeat_count=1, shuffle=grpo.shuffle_dataset, seed=grpo.seed)
sources = train["data_source"]
print(
    json.dumps(
        {
            "data_sources": [sources[i] for i in sampler],
            "columns": train.column_names,
            "shuffle_dataset": grpo.shuffle_dataset,
        }
    )
)
