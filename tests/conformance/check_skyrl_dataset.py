"""Runs inside the skyrl venv: the checks of SkyRL's own `tests/train/dataset/test_dataset.py`
(which neither skyrl's wheel nor its source distribution carries) made on taskpack's Parquet:
PromptDataset drops exactly the prompts longer than `max_prompt_length` tokens, each item is
(messages, env_class, extras, uid) with the prompt and env class taken out of the row and every
other column in the extras, and `collate_fn` gives the trainer's dicts.

    python check_skyrl_dataset.py FILE.parquet  ->  JSON on stdout
"""

import json
import sys

import pyarrow.parquet as pq
from skyrl.train.dataset import PromptDataset
from skyrl_dataset import prompt_dataset

path = sys.argv[1]
rows = pq.read_table(path).to_pylist()
whole = prompt_dataset(path)
template = whole.tokenizer.apply_chat_template
lengths = [
    len(template(r["prompt"], add_generation_prompt=True, return_dict=False, tokenize=True))
    for r in rows
]
limit = sorted(lengths)[len(lengths) // 2]
short = PromptDataset(
    datasets=[path], tokenizer=whole.tokenizer, max_prompt_length=limit, num_workers=1
)
kept = [r for r, n in zip(rows, lengths, strict=True) if n <= limit]
items = [short[i] for i in range(len(short))]
same = len(items) == len(kept) and all(
    messages == row["prompt"]
    and env_class == row["env_class"]
    and extras == {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    and uid == str(i)
    for i, ((messages, env_class, extras, uid), row) in enumerate(zip(items, kept, strict=True))
)
batch = short.collate_fn(items[:2])
print(
    json.dumps(
        {
            "rows": len(whole),
            "limit": limit,
            "kept": len(short),
            "expected": len(kept),
            "items_match_rows": same,
            "batch_keys": [sorted(b) for b in batch],
            "batch_uids": [b["uid"] for b in batch],
        }
    )
)
