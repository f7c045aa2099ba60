"""Runs inside the trl venv: a `taskpack export --to trl` folder as TRL 1.16 takes it.
`datasets.load_dataset("json", ...)` reads its files as TRL's conversational datasets;
`GRPOTrainer`, given the reward function the export ships (`taskpack_trl_reward`), scores the
given completions in its own reward step and runs one CPU step; `SFTTrainer` runs one CPU step
on the rows' prompt and completion. A tiny model made here (`trl_tiny`), nothing downloaded.

    python check_trl_export.py EXPORT completions.json  ->  JSON on stdout: the columns, the
        given completions' scores (by row), and the rewards and losses each trainer logged
"""

import json
import sys
import tempfile

from datasets import load_dataset
from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer
from trl_tiny import tiny

export, given = sys.argv[1], sys.argv[2]
sys.path.insert(0, export)
from taskpack_trl_reward import taskpack_reward  # noqa: E402 - the export's own module

dataset = load_dataset("json", data_files=f"{export}/train.jsonl", split="train")
with open(given) as f:
    completions = json.load(f)
out = {"columns": sorted(dataset.column_names), "rows": dataset.num_rows}
with tempfile.TemporaryDirectory() as scratch:
    model, tokenizer = tiny()
    grpo = GRPOTrainer(
        model=model, reward_funcs=[taskpack_reward], train_dataset=dataset,
        processing_class=tokenizer,
        args=GRPOConfig(
            output_dir=scratch, per_device_train_batch_size=2, num_generations=2,
            max_completion_length=8, max_steps=1, report_to=[], use_cpu=True,
            logging_steps=1, bf16=False, save_strategy="no",
        ),
    )  # fmt: skip
    rows = [dataset[c["row"]] for c in completions]
    scored = grpo._calculate_rewards(
        rows,
        [r["prompt"] for r in rows],
        [[{"role": "assistant", "content": c["completion"]}] for c in completions],
        [[0] for _ in completions],
    )
    out["scores"] = [None if v != v else v for v in scored[:, 0].tolist()]
    grpo.train()
    out["grpo"] = sorted({k for e in grpo.state.log_history for k in e if "reward" in k})
    model, tokenizer = tiny()
    sft_rows = dataset.filter(lambda r: bool(r["completion"])).select_columns(
        ["prompt", "completion"]
    )
    sft = SFTTrainer(
        model=model, train_dataset=sft_rows, processing_class=tokenizer,
        args=SFTConfig(
            output_dir=scratch, per_device_train_batch_size=2, max_steps=1, report_to=[],
            use_cpu=True, logging_steps=1, bf16=False, save_strategy="no", max_length=256,
        ),
    )  # fmt: skip
    sft.train()
    out["sft"] = sorted({k for e in sft.state.log_history for k in e if "loss" in k})
print(json.dumps(out))
