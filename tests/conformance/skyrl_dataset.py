"""Imported by the checks that run in the skyrl venv: skyrl's PromptDataset over a Parquet file,
with a tokenizer built here (nothing downloaded)."""

from skyrl.train.dataset import PromptDataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast


def prompt_dataset(path):
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
    return PromptDataset(
        datasets=[str(path)], tokenizer=tokenizer, max_prompt_length=100_000, num_workers=1
    )
