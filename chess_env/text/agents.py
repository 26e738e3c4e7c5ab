"""Players for ``ChessTextEnv``: any ``envkit.ports.PolicyBackend`` behind one adapter.

- ``TextPlayer``: adapts a backend to the text env: resets and closes it with the games, times
  each decision and turns its action into move text (``move_text``).
- ``OpponentTextAgent``: any ``chess_env.core.opponents`` opponent as a text backend (it reads the
  position in the observation, under every prompt condition: ``board_from_text``);
  ``RandomTextAgent`` and ``ScriptedTextAgent`` (a script of texts, then random moves) for tests
  and baselines.
- ``make_text_agent``: a backend from any player (``chess_env.core.players``): "openai:MODEL" is an
  ``LLMAgent`` that reads the text itself (carrying its spec's prompt condition), every other
  player an ``OpponentTextAgent``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import chess

from chess_env.core.opponents import Opponent, RandomOpponent
from chess_env.core.players import PlayerLike, make_player, parse_player
from chess_env.text.llm_player import llm_agent
from chess_env.text.prompt_conditions import board_from_history
from envkit.llm import LLMAgent
from envkit.ports import PolicyBackend

__all__ = [
    "OpponentTextAgent",
    "RandomTextAgent",
    "ScriptedTextAgent",
    "TextPlayer",
    "board_from_text",
    "make_text_agent",
    "move_text",
]

_FEN_PATTERN = (
    r"(?:[pnbrqkPNBRQK1-8]{1,8}/){7}[pnbrqkPNBRQK1-8]{1,8} [wb] (?:-|[KQkqA-Ha-h]{1,4}) "
    r"(?:-|[a-h][36]) \d+ \d+"
)
_FEN = re.compile(_FEN_PATTERN)
_FEN_LINE = re.compile(rf"^FEN: ({_FEN_PATTERN})", re.MULTILINE)  # the position to move in


def board_from_text(text: str) -> chess.Board:
    """The position in an observation: its "FEN:" line, else where its PGN history leads (a
    prompt without a board), else the first FEN in it.

    Example:
        >>> board_from_text("FEN: 8/8/8/8/8/8/8/K6k w - - 0 1\\nLegal moves: a1a2 a1b1").fen()
        '8/8/8/8/8/8/8/K6k w - - 0 1'
        >>> board_from_text("Moves so far (PGN): 1. e4").fen()
        'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1'
    """
    line = _FEN_LINE.search(text)
    if line is not None:
        return chess.Board(line.group(1))
    board = board_from_history(text)
    if board is not None:
        return board
    found = _FEN.search(text)
    if found is None:
        raise ValueError("the observation holds no FEN and no PGN history")
    return chess.Board(found.group())


def move_text(action: Any) -> str:
    """A backend's action as the env's text action.

    Text is sent as it is, a ``chess.Move`` as UCI and ``{"move": ...}`` (``MOVE_SIGNATURE``) as
    its move; anything else as JSON, which the env then reports as an unreadable move.
    """
    if isinstance(action, str):
        return action
    if isinstance(action, chess.Move):
        return action.uci()
    if isinstance(action, Mapping) and "move" in action:
        return str(action["move"])
    return json.dumps(action, default=str)


class TextPlayer:
    """A ``PolicyBackend`` playing in ``ChessTextEnv``.

    ``reset(seed)`` reaches the backend when it has one; ``move(observation)`` returns the move
    text and the seconds the backend took. A ``TimeoutError`` from the backend passes through: the
    caller decides what a timeout costs. Closing the backend stays with whoever made it.

    Example:
        >>> player = TextPlayer(ScriptedTextAgent(["e4"]))
        >>> player.reset(seed=0)
        >>> text, seconds = player.move(chess.Board().fen())
        >>> player.name, text, seconds >= 0
        ('scripted', 'e4', True)
    """

    def __init__(self, backend: PolicyBackend) -> None:
        self.backend = backend
        self.name = str(getattr(backend, "name", type(backend).__name__))

    def reset(self, seed: int | None = None) -> None:
        reset = getattr(self.backend, "reset", None)
        if reset is not None:
            reset(seed=seed)

    def move(self, observation: Any) -> tuple[str, float]:
        start = time.perf_counter()
        action = self.backend.decide(observation)
        return move_text(action), time.perf_counter() - start


class OpponentTextAgent:
    """An ``Opponent`` (random, greedy, Stockfish, ...) as a text backend: the position in (read
    by ``board_from_text``), UCI out.

    Example:
        >>> agent = OpponentTextAgent(make_player("greedy"))
        >>> agent.name, agent.decide("FEN: 6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")  # mate in one
        ('greedy', 'a1a8')
    """

    def __init__(self, opponent: Opponent) -> None:
        self.opponent = opponent
        self.name = opponent.name

    def reset(self, seed: int | None = None) -> None:
        self.opponent.reset(seed)

    def decide(self, observation: str) -> str:
        board = board_from_text(observation)
        return self.opponent.choose_move(board, list(board.legal_moves)).uci()

    def close(self) -> None:
        self.opponent.close()


class RandomTextAgent(OpponentTextAgent):
    """Plays a uniformly random legal move, seeded by ``reset(seed)``.

    Example:
        >>> agent = RandomTextAgent(); agent.reset(seed=0)
        >>> chess.Move.from_uci(agent.decide(chess.Board().fen())) in chess.Board().legal_moves
        True
    """

    def __init__(self) -> None:
        super().__init__(RandomOpponent())


class ScriptedTextAgent(RandomTextAgent):
    """Sends ``script`` first (illegal moves, SAN, sentences: any text), then random legal moves.

    ``reset`` starts the script over, so every game opens with it.

    Example:
        >>> agent = ScriptedTextAgent(["I resign", "e4"]); agent.reset(seed=0)
        >>> [agent.decide(chess.Board().fen()) for _ in range(3)]  # then a random legal move
        ['I resign', 'e4', 'c2c4']
    """

    def __init__(self, script: Sequence[str]) -> None:
        super().__init__()
        self.name = "scripted"
        self.script = list(script)
        self._next = 0

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._next = 0

    def decide(self, observation: str) -> str:
        if self._next < len(self.script):
            self._next += 1
            return self.script[self._next - 1]
        return super().decide(observation)


def make_text_agent(
    player: PlayerLike,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    timeout_seconds: float | None = None,
    tool_calling: bool | None = None,
) -> LLMAgent | OpponentTextAgent:
    """A text backend for ``player``: an LLM for "openai:MODEL" (the keywords are defaults its
    spec's options override; see ``chess_env.text.llm_player``), else the player reading the FEN.

    Example:
        >>> make_text_agent("alphabeta:1").name
        'alphabeta:1'
    """
    spec = parse_player(player) if isinstance(player, str) else None
    if spec is not None and spec.kind == "openai":
        return llm_agent(
            spec,
            base_url=base_url,
            api_key_env=api_key_env,
            timeout_seconds=timeout_seconds,
            tool_calling=tool_calling,
        )
    return OpponentTextAgent(make_player(player))
