"""LLMs as players: ``openai:MODEL`` through ``envkit.llm`` (any OpenAI-compatible endpoint).

- ``llm_settings(spec, ...)``: the agent's ``LLMSettings`` and retry budget from the spec's options
  (``base_url``, ``api_key_env``, ``timeout``, ``tool_calling``, ``retries``, ``temperature``),
  then the caller's defaults, then ``$OPENAI_BASE_URL``; the key is read from ``api_key_env``
  (default ``OPENAI_API_KEY``) only when a request is sent.
- ``llm_agent(spec, ...)``: the ``LLMAgent`` a text env talks to.
- ``TextBackendOpponent``: any text backend as a board player, for the envs that are not text:
  it is shown ``ChessTextEnv``'s observation, and after an illegal answer the reason and a retry.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import chess

from chess_env.errors import PlayerFailedError
from chess_env.move_parsing import MoveParseError, parse_move
from chess_env.opponents import Opponent
from chess_env.players import PlayerSpec
from chess_env.text import position_prompt, rejection_line
from envkit.llm import ChatTimeout, LLMAgent, LLMSettings
from envkit.ports import PolicyBackend

__all__ = [
    "CHESS_SYSTEM_PROMPT",
    "MOVE_SIGNATURE",
    "TextBackendOpponent",
    "llm_agent",
    "llm_opponent",
    "llm_settings",
]

MOVE_SIGNATURE = "(move :string) -> :any"
CHESS_SYSTEM_PROMPT = (
    "You are a chess player. Read the position and reply with exactly one legal move, in UCI "
    "(e2e4) or SAN (e4, Nf3, O-O)."
)
DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_VARIABLE = "OPENAI_BASE_URL"


def llm_settings(
    spec: PlayerSpec,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    timeout_seconds: float | None = None,
    tool_calling: bool | None = None,
) -> tuple[LLMSettings, int]:
    """The settings of ``spec``'s LLM and its retries after an illegal move (default 1).

    Example:
        >>> from chess_env.players import parse_player
        >>> settings, retries = llm_settings(parse_player("openai:gpt-4o-mini?retries=2"))
        >>> settings.model_name, settings.api_key_env, retries
        ('gpt-4o-mini', 'OPENAI_API_KEY', 2)
    """
    spec.reject_extras(
        argument=True,
        keys=("base_url", "api_key_env", "timeout", "tool_calling", "retries", "temperature"),
    )
    if not spec.argument:
        raise spec.error("expected openai:MODEL, the model's name at the endpoint")
    options = spec.options
    settings = LLMSettings(
        name=spec.argument[:50],
        model_name=spec.argument,
        system_prompt=CHESS_SYSTEM_PROMPT,
        base_url=options.get("base_url")
        or base_url
        or os.environ.get(BASE_URL_VARIABLE)
        or DEFAULT_BASE_URL,
        api_key_env=options.get("api_key_env") or api_key_env or "OPENAI_API_KEY",
        timeout_seconds=spec.number("timeout", 0.0, 3600.0) or timeout_seconds or 30.0,
        tool_calling=_first_set(spec.flag("tool_calling"), tool_calling, False),
        temperature=_first_set(spec.number("temperature", -1e-9, 2.0), 0.7),
    )
    return settings, _first_set(spec.integer("retries", 0, 10), 1)


def _first_set(*values: Any) -> Any:
    return next(value for value in values if value is not None)


def llm_agent(spec: PlayerSpec, **defaults: Any) -> LLMAgent:
    """The ``LLMAgent`` for ``spec``; it answers in text, or with ``tool_calling`` through an
    "act" tool taking ``MOVE_SIGNATURE``. ``defaults`` as for ``llm_settings``."""
    settings, _ = llm_settings(spec, **defaults)
    return LLMAgent(settings, signature=MOVE_SIGNATURE if settings.tool_calling else None)


def llm_opponent(spec: PlayerSpec) -> TextBackendOpponent:
    """``spec``'s LLM as a board player."""
    _, retries = llm_settings(spec)
    return TextBackendOpponent(llm_agent(spec), retries=retries)


class TextBackendOpponent(Opponent):
    """A text backend (an LLM) playing on a board: it reads the text env's observation.

    An illegal answer is explained and retried ``retries`` times; then, or when the backend
    times out, the player fails (``PlayerFailedError``) and its side loses. An endpoint error
    passes through: it is not a chess result.

    Example:
        >>> from chess_env.agents import ScriptedTextAgent
        >>> player = TextBackendOpponent(ScriptedTextAgent(["Ke2", "[e4]"]), retries=1)
        >>> player.reset(seed=0)
        >>> player(chess.Board()).uci()  # Ke2 is refused with its reason, then e4
        'e2e4'
    """

    def __init__(self, backend: PolicyBackend, *, retries: int = 1) -> None:
        super().__init__()
        self.backend, self.retries = backend, retries
        self.name = str(getattr(backend, "name", type(backend).__name__))

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        reset = getattr(self.backend, "reset", None)
        if reset is not None:
            reset(seed=seed)

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        from chess_env.agents import move_text

        legal = [move.uci() for move in legal_moves]
        error: MoveParseError | None = None
        for attempt in range(self.retries + 1):
            note = None if error is None else rejection_line(error, self.retries - attempt + 1)
            try:
                answer = self.backend.decide(position_prompt(board, board.turn, legal, error=note))
            except ChatTimeout as timeout:
                raise PlayerFailedError(f"{self.name} did not answer in time: {timeout}") from None
            try:
                return parse_move(move_text(answer), board, legal_moves)
            except MoveParseError as rejected:
                error = rejected
        raise PlayerFailedError(
            f"{self.name} gave no legal move in {self.retries + 1} tries; the last: {error}"
        )

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()
