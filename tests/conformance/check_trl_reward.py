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

import torch
from datasets import Dataset
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

import taskpack

folder, split_name, given = sys.argv[1], sys.argv[2], sys.argv[3]
split = taskpack.open(folder).split(split_name)
with open(given) as f:
    completions = json.load(f)

# A byte-level tokenizer with no merges and a one-layer model: enough for a step on the CPU.
alphabet = pre_tokenizers.ByteLevel.alphabet()
vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
vocab.update({"<eos>": len(vocab), "<pad>": len(vocab) + 1})
core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
core.decoder = decoders.ByteLevel()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<eos>", pad_token="<pad>")
tokenizer.chat_template = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
torch.manual_seed(0)
model = LlamaForCausalLM(
    LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=vocab["<eos>"],
        pad_token_id=vocab["<pad>"],
    )
)
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
