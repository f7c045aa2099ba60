"""Runs inside the nemo-gym venv (Python 3.13): NeMo Gym's own data validation reads every row
of taskpack's JSONL and counts the examples.

    python check_nemo.py FILE.jsonl  ->  JSON on stdout
"""

import json
import sys

from nemo_gym.train_data_utils import (
    DatasetMetrics,
    DatasetValidatorState,
    TrainDataProcessor,
    compute_sample_metrics,
)

state = DatasetValidatorState()
processor = TrainDataProcessor()
with open(sys.argv[1]) as f:
    for idx, line in enumerate(f):
        processor._validate_samples_and_aggregate_metrics_single_sample(state, idx, line)
metrics = state.metrics if isinstance(state.metrics, DatasetMetrics) else None
with open(sys.argv[1]) as f:
    first = compute_sample_metrics(f.readline())
print(
    json.dumps(
        {
            "examples": metrics.number_of_examples if metrics else -1,
            "offending": state.offending_example_idxs,
            "first_offending": first[1],
        }
    )
)
