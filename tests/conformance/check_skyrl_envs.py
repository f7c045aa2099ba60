"""Runs inside the skyrl venv: skyrl's PromptDataset loads a taskpack export's Parquet, the module
the export ships beside it (`taskpack_skyrl_env.py`) registers the env classes its rows name,
and `skyrl_gym.make` builds each row's environment, which scores the replies given for it.

    python check_skyrl_envs.py FILE.parquet REPLIES.json  ->  JSON on stdout:
        {"env_classes": [...], "rewards": [[row, reward], ...]}
REPLIES.json: [[row, reply], ...]
"""

import json
import sys
from pathlib import Path

import skyrl_gym
from skyrl.train.dataset import PromptDataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

parquet = Path(sys.argv[1])
sys.path.insert(0, str(parquet.parent))
import taskpack_skyrl_env  # noqa: E402,F401 - registers the env classes

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
    datasets=[str(parquet)], tokenizer=tokenizer, max_prompt_length=100_000, num_workers=1
)
rewards = []
for row, reply in json.loads(Path(sys.argv[2]).read_text()):
    messages, env_class, extras, _ = dataset[row]
    env = skyrl_gym.make(env_class, extras=extras)
    env.init(messages)
    out = env.step(reply)
    assert out["done"]
    rewards.append([row, out["reward"]])
classes = sorted({dataset[i][1] for i in range(len(dataset))})
print(json.dumps({"rows": len(dataset), "env_classes": classes, "rewards": rewards}))
