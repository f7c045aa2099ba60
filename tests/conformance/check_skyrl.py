"""Runs inside the skyrl venv: skyrl's PromptDataset loads taskpack's Parquet with a tokenizer
built here (nothing downloaded), and skyrl_gym's GSM8K environment scores the reference answer
1.0 and a wrong one 0.0.

    python check_skyrl.py FILE.parquet [swe]  ->  JSON on stdout
"""

import json
import sys

import skyrl_gym
from skyrl.train.dataset import PromptDataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

words = Tokenizer(models.WordLevel({"[UNK]": 0, "<|im_end|>": 1}, unk_token="[UNK]"))
words.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(
    tokenizer_object=words,
    unk_token="[UNK]",
    eos_token="<|im_end|>",
    chat_template=(
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    ),
)
dataset = PromptDataset(
    datasets=[sys.argv[1]], tokenizer=tokenizer, max_prompt_length=100_000, num_workers=1
)
if sys.argv[2:] == ["swe"]:  # mini-swe-agent rows: the generator reads extras["instance"]
    messages, env_class, extras, _ = dataset[0]
    instance = extras["instance"]
    print(json.dumps({"rows": len(dataset), "env_class": env_class, "instance": instance}))
    sys.exit(0)
rewards, wrong = [], []
for i in range(3):
    messages, env_class, extras, _ = dataset[i]
    assert messages and messages[-1]["role"] == "user"
    truth = extras["reward_spec"]["ground_truth"]
    env = skyrl_gym.make(env_class, extras=extras)
    env.init(messages)
    rewards.append(env.step(f"The answer is #### {truth}")["reward"])
    env = skyrl_gym.make(env_class, extras=extras)
    env.init(messages)
    wrong.append(env.step("#### -987654321")["reward"])
print(
    json.dumps({"rows": len(dataset), "env_class": env_class, "rewards": rewards, "wrong": wrong})
)
