"""Runs inside the nemo-gym venv (Python 3.13): the files a mixture's NeMo Gym export names in
NeMo RL's `data` section (`nemo_rl_data.yaml`, loaded with OmegaConf as NeMo RL loads its
configs) pass NeMo Gym's own row validation, and each row's `agent_ref` is a NeMo Gym agent
reference naming its source's environment.

    python check_nemo_mixture.py nemo_rl_data.yaml  ->  JSON on stdout: {file key: {agent: rows}}
"""

import json
import sys
from collections import Counter

from nemo_gym.config_types import AgentServerRef
from nemo_gym.train_data_utils import DatasetValidatorState, TrainDataProcessor
from omegaconf import OmegaConf

data = OmegaConf.load(sys.argv[1]).data
processor = TrainDataProcessor()
out = {"shuffle": bool(data.shuffle)}
for key in ("train_jsonl_fpath", "validation_jsonl_fpath"):
    state = DatasetValidatorState()
    agents: Counter = Counter()
    with open(data[key]) as f:
        for idx, line in enumerate(f):
            processor._validate_samples_and_aggregate_metrics_single_sample(state, idx, line)
            agents[AgentServerRef.model_validate(json.loads(line)["agent_ref"]).name] += 1
    out[key] = {"agents": dict(agents), "offending": state.offending_example_idxs}
print(json.dumps(out))
