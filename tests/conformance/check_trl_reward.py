"""Runs inside the trl venv (taskpack from PYTHONPATH): TRL 1.16's `GRPOTrainer` takes
`taskpack.trl.reward_func(split)` as one of its `reward_funcs`. Its own reward step
(`_calculate_rewards`, which hands the function every dataset column and turns a None into
"no reward") scores the given completions, and one training step runs on the CPU with a tiny
model made here (no download), its generations scored by the same function.

    python check_trl_reward.py TASKSET SPLIT completions.json  ->  JSON on stdout: the scores
        of the given completions ({"id", "completion"}, in order), and the step's logged
        reward keys
"""

import json
import sys
import tempfile

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer
from trl_tiny import tiny

import taskpack

folder, split_name, given = sys.argv[1], sys.argv[2], sys.argv[3]
split = taskpack.open(folder).split(split_name)
with open(given) as f:
    completions = json.load(f)

model, tokenizer = tiny()
rows = [{"prompt": [{"role": "user", "content": t.instruction[:200]}], "id": t.id} for t in split]
reward = taskpack.trl.reward_func(split)
with tempfile.TemporaryDirectory() as out:
    args = GRPOConfig(
        output_dir=out,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        max_steps=1,
        report_to=[],
        use_cpu=True,
        logging_steps=1,
        bf16=False,
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    inputs = [{"prompt": [{"role": "user", "content": "?"}], "id": c["id"]} for c in completions]
    scored = trainer._calculate_rewards(
        inputs,
        [i["prompt"] for i in inputs],
        [[{"role": "assistant", "content": c["completion"]}] for c in completions],
        [[0] for _ in completions],
    )
    trainer.train()
    logged = sorted({k for entry in trainer.state.log_history for k in entry if "reward" in k})
print(
    json.dumps({"scores": [None if v != v else v for v in scored[:, 0].tolist()], "logged": logged})
)
