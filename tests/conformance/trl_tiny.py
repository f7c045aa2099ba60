"""For the scripts that run inside the trl venv: a byte-level tokenizer with no merges and a
one-layer Llama made here (nothing downloaded), enough for a trainer's step on the CPU."""

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast


def tiny() -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
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
    config = LlamaConfig(
        vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=8192,
        eos_token_id=vocab["<eos>"], pad_token_id=vocab["<pad>"],
    )  # fmt: skip
    return LlamaForCausalLM(config), tokenizer
