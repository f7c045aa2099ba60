"""Runs inside a verifiers 0.4 venv: its own built-in tasksets, unmodified, load what taskpack
exported. NeMo Gym's reads a NeMo export's JSONL; Harbor's (in the venv with the Harbor CLI)
has `harbor download` fetch a dataset of a registry.json taskpack wrote, then parses each task
folder. Prints each task's name, key and prompt.

    python check_verifiers_loaders.py nemo JSONL
    python check_verifiers_loaders.py harbor REGISTRY_JSON DATASET BUILT [TASK ...]

BUILT: 1 where the tasks build Dockerfiles of their own (Verifiers builds none, and loads them
only with `ignore_dockerfile`, on a fallback image), 0 where each declares its image.
"""

import json
import sys
import tempfile
from pathlib import Path

kind = sys.argv[1]
if kind == "nemo":
    from verifiers.v1.tasksets.nemo_gym.taskset import NeMoGymConfig, NeMoGymTaskset

    taskset = NeMoGymTaskset(NeMoGymConfig(dataset=Path(sys.argv[2])))
else:
    from verifiers.v1.tasksets.harbor import taskset as harbor

    # Harbor's download cache, in a temporary home: every run fetches from the registry
    harbor.CACHE = Path(tempfile.mkdtemp()) / "harbor"
    config = harbor.HarborConfig(
        dataset=sys.argv[3],
        registry_path=Path(sys.argv[2]),
        tasks=sys.argv[5:] or None,
        ignore_dockerfile=sys.argv[4] == "1",
    )
    taskset = harbor.HarborTaskset(config)


def text(prompt):
    if isinstance(prompt, str) or prompt is None:
        return prompt
    return [m.model_dump(mode="json", exclude_none=True) for m in prompt]


tasks = list(taskset.load())
print(
    json.dumps(
        {
            "count": len(tasks),
            "names": [t.data.name for t in tasks],
            "keys": [t.key for t in tasks],
            "prompts": [text(t.data.prompt) for t in tasks],
            "images": [getattr(t.data, "image", None) for t in tasks],
        }
    )
)
