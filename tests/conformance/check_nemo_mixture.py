"""Runs inside the nemo-gym venv (Python 3.13): the files an export names in NeMo RL's `data`
section (`nemo_rl_data.yaml`, loaded with OmegaConf as NeMo RL loads its configs; the list form
of entries with `data_path` and `env_name`) pass NeMo Gym's own row validation, and each row's
`agent_ref`, where it has one, is a NeMo Gym agent reference naming its source's environment.

    python check_nemo_mixture.py nemo_rl_data.yaml  ->  JSON on stdout:
        {"shuffle", "train"/"validation": [{"env_name", "agents", "offending", "ids"}]}
"""

import json
import sys
from collections import Counter

from nemo_gym.config_types import AgentServerRef
from nemo_gym.train_data_utils import DatasetValidatorState, TrainDataProcessor
from omegaconf import OmegaConf

data = OmegaConf.to_container(OmegaConf.load(sys.argv[1]).data)
processor = TrainDataProcessor()
out = {"shuffle": bool(data["shuffle"])}
for key in ("train", "validation"):
    out[key] = []
    for entry in data.get(key, []):
        state = DatasetValidatorState()
        agents: Counter = Counter()
        ids = []
        with open(entry["data_path"]) as f:
            for idx, line in enumerate(f):
                processor._validate_samples_and_aggregate_metrics_single_sample(state, idx, line)
                row = json.loads(line)
                ids.append(row["task_id"])
                if "agent_ref" in row:
                    agents[AgentServerRef.model_validate(row["agent_ref"]).name] += 1
        out[key].append(
            {
                "env_name": entry["env_name"],
                "agents": dict(agents),
                "offending": state.offending_example_idxs,
                "ids": ids,
            }
        )
print(json.dumps(out))
