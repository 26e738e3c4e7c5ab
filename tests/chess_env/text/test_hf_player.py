"""``hf:PATH``: a local transformers checkpoint plays chess through the text env, no endpoint.

The checkpoint is a tiny random model built here (no download): the test proves the plumbing
(the chat template, exact token counts, seeded sampling, illegal answers retried then forfeited,
a legal answer played), not chess skill."""

from __future__ import annotations

import contextlib
from pathlib import Path

import chess
import pytest

from chess_env.core.players import check_player, make_player
from chess_env.errors import MoveRetriesExhaustedError, PlayerSpecError

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
torch = pytest.importorskip("torch")

TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} <eos> {% endfor %}"
    "{% if add_generation_prompt %}assistant : {% endif %}"
)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer Qwen3 with a word-level vocabulary of the start position's moves."""
    torch.manual_seed(0)
    board = chess.Board()
    words = [m.uci() for m in board.legal_moves] + [board.san(m) for m in board.legal_moves]
    corpus = [" ".join(words), "system user assistant : You are a chess player"]
    model = tokenizers.models.WordLevel(unk_token="[UNK]")
    tokenizer = tokenizers.Tokenizer(model)
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
    folder = tmp_path_factory.mktemp("tiny-chess-lm")
    transformers.Qwen3ForCausalLM(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def test_a_checkpoint_plays_through_the_text_env_with_exact_token_counts(checkpoint: Path) -> None:
    player = make_player(f"hf:{checkpoint}?max_tokens=1&retries=10&temperature=1.5&seed=4")
    board = chess.Board()
    try:
        move = player.choose_move(board, list(board.legal_moves))
    except MoveRetriesExhaustedError:
        move = None  # a random model may miss eleven times; what it cost is recorded either way
    decision = player.last_decision
    assert decision is not None and decision.requests >= 1
    assert decision.tokens_out == decision.requests  # one new token per answer, counted exactly
    assert decision.tokens_in is not None and decision.tokens_in > 0
    assert move is None or move in board.legal_moves
    assert len(decision.rejected) == decision.requests - (move is not None)


def test_the_same_seed_gives_the_same_answers(checkpoint: Path) -> None:
    answers = []
    for _ in range(2):
        player = make_player(f"hf:{checkpoint}?max_tokens=2&retries=3&temperature=1&seed=9")
        board = chess.Board()
        with contextlib.suppress(MoveRetriesExhaustedError):
            player.choose_move(board, list(board.legal_moves))
        answers.append(player.last_decision)
    first, second = answers
    assert first is not None and second is not None
    assert (first.rejected, first.requests, first.reasoning) == (
        second.rejected, second.requests, second.reasoning)  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "message"),
    [("hf:/no/such/checkpoint", "cannot load the checkpoint"),
     ("hf", "expected hf:PATH"),
     ("hf:x?tool_calling=true", "unknown option 'tool_calling'"),
     ("hf:x?max_tokens=0", "max_tokens must be in 1..4096")],
)  # fmt: skip
def test_bad_hf_specs_are_refused(spec: str, message: str) -> None:
    with pytest.raises(PlayerSpecError, match=message):
        make_player(spec)
    if "no/such" not in spec:
        with pytest.raises(PlayerSpecError, match=message):
            check_player(spec)
    with pytest.raises(PlayerSpecError, match="does not make hf players"):
        check_player("hf:x", served=True)
