"""A tiny random chess "LLM" saved as a local checkpoint: a one-layer Qwen3 and a word-level
tokenizer of the start position's moves with a plain chat template, built in seconds, offline.

Tests of ``hf:PATH`` players and of the arena callback load it the way users load a trained
checkpoint; it plays (badly) through the text env. Put ``tests/support`` on ``sys.path`` first,
as for ``chat_server``.
"""

from __future__ import annotations

from pathlib import Path

import chess

TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} <eos> {% endfor %}"
    "{% if add_generation_prompt %}assistant : {% endif %}"
)


def save_tiny_chess_checkpoint(folder: Path, seed: int = 0) -> Path:
    """Build the checkpoint into ``folder`` (made if missing) and return it."""
    import tokenizers
    import torch
    import transformers

    torch.manual_seed(seed)
    board = chess.Board()
    words = [m.uci() for m in board.legal_moves] + [board.san(m) for m in board.legal_moves]
    corpus = [" ".join(words), "system user assistant : You are a chess player"]
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    trainer = tokenizers.trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "<eos>"])
    tokenizer.train_from_iterator(corpus, trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]", eos_token="<eos>"
    )
    fast.chat_template = TEMPLATE
    config = transformers.Qwen3Config(
        vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=4096,
    )  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    transformers.Qwen3ForCausalLM(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def save_tiny_tool_checkpoint(folder: Path, seed: int = 0) -> Path:
    """The tiny tool-calling model of ``tiny_lm`` (TRL's Qwen2.5 template, so its tool calls
    parse as in training), untrained, saved into ``folder``; needs trl."""
    from tiny_lm import build_model, build_tokenizer

    tokenizer = build_tokenizer()
    folder.mkdir(parents=True, exist_ok=True)
    build_model(tokenizer, seed).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def script_answers(client: object, answers: list[str]) -> list[str]:
    """Make ``client`` (a ``LocalChatClient``) answer ``answers`` in turn instead of generating;
    returns the list its rendered prompts are appended to."""
    import torch

    tokenizer, prompts = client.tokenizer, []  # type: ignore[attr-defined]

    def generate(input_ids: torch.Tensor, **options: object) -> torch.Tensor:
        prompts.append(tokenizer.decode(input_ids[0]))
        answer = tokenizer(answers.pop(0), return_tensors="pt")["input_ids"]
        return torch.cat([input_ids, answer], dim=1)

    client.model.generate = generate  # type: ignore[attr-defined]
    return prompts
