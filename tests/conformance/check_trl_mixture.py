"""Runs inside the trl venv: the `datasets` mixture a mixture's verl export writes is TRL's own:
TRL's config parser reads it into a DatasetMixtureConfig (as `trl grpo --config` does) and
TRL's `get_dataset` loads the training rows.

    python check_trl_mixture.py trl_datasets.yaml  ->  JSON on stdout: rows' data sources
"""

import json
import sys

from trl import DatasetMixtureConfig, TrlParser, get_dataset

(mixture,) = TrlParser((DatasetMixtureConfig,)).parse_args_and_config(["--config", sys.argv[1]])
train = get_dataset(mixture)["train"]
print(json.dumps({"data_sources": list(train["data_source"]), "columns": train.column_names}))
