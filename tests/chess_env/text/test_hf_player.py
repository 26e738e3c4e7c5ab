"""``hf:PATH``: a local transformers checkpoint plays chess through the text env, no endpoint.

The checkpoint is a tiny random model built here (no download): the test proves the plumbing
(the chat template, exact token counts, seeded sampling, illegal answers retried then forfeited,
a legal answer played), not chess skill."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import chess
import pytest

from chess_env.core.players import check_player, make_player
from chess_env.errors import MoveRetriesExhaustedError, PlayerSpecError
from chess_env.text.env import TOOL_REQUEST

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from tiny_checkpoint import save_tiny_chess_checkpoint


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_chess_checkpoint(tmp_path_factory.mktemp("tiny-chess-lm"))


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
     ("hf:x?tool_calls=true", "unknown option .tool_calls."),
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


def tool_call(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call><|im_end|>'


def test_with_tool_calling_a_checkpoint_is_offered_the_move_tool_and_its_calls_are_played(
    tmp_path: Path,
) -> None:
    pytest.importorskip("trl")
    from tiny_checkpoint import save_tiny_tool_checkpoint, script_answers

    save_tiny_tool_checkpoint(tmp_path)
    player = make_player(f"hf:{tmp_path}?tool_calling=yes&retries=2")
    prompts = script_answers(player.backend.client, [
        "I think e4 is best.",  # no call: the agent asks again, not a chess refusal
        tool_call("move", '{"move": "e2e5"}'),  # illegal: the reason goes back
        tool_call("move", '{"move": "Nf3"}'),
    ])  # fmt: skip
    board = chess.Board()
    assert player.choose_move(board, list(board.legal_moves)) == chess.Move.from_uci("g1f3")
    assert '"name": "move"' in prompts[0] and "<tools>" in prompts[0]
    assert TOOL_REQUEST in prompts[0] and "square brackets" not in prompts[0]
    assert "the pawn on e2 cannot move to e5" in prompts[2]
    decision = player.last_decision
    assert decision is not None and decision.requests == 3
    assert decision.rejected == ("cannot_move_there",)


def test_tool_calling_needs_a_template_whose_calls_trl_parses(checkpoint: Path) -> None:
    pytest.importorskip("trl")
    with pytest.raises(PlayerSpecError, match="chat template whose tool calls TRL can parse"):
        make_player(f"hf:{checkpoint}?tool_calling=yes")
