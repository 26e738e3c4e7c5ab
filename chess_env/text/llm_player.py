"""LLMs as players: ``openai:MODEL`` through ``envkit.llm`` (any OpenAI-compatible endpoint).

- ``llm_settings(spec, ...)``: the agent's ``LLMSettings`` and retry budget from the spec's options
  (``base_url``, ``api_key_env``, ``timeout``, ``tool_calling``, ``retries``, ``temperature``,
  ``endpoint_retries``; read by ``envkit.llm.spec_settings``, which the worlds share), then the
  caller's defaults, then ``$OPENAI_BASE_URL``; the key is read from ``api_key_env`` (default
  ``OPENAI_API_KEY``) only when a request is sent.
- ``llm_condition(spec)``: the ``PromptCondition`` the spec names (``prompt``, ``board``,
  ``legal``, ``history``; see ``chess_env.text.prompt_conditions``).
- ``llm_agent(spec, ...)``: the ``ChessLLMAgent`` a text env talks to: an ``LLMAgent`` carrying
  its condition, which ``chess_env.text.evaluation`` shows it.
- ``TextBackendOpponent``: any text backend as a board player, for the envs that are not text:
  it is shown ``ChessTextEnv``'s observation under its condition, and after an illegal answer the
  reason and a retry; ``last_decision`` (a ``MoveDecision``) says what its last move cost.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import chess

from chess_env.core.move_parsing import MoveParseError, parse_move
from chess_env.core.opponents import Opponent
from chess_env.core.players import PlayerSpec
from chess_env.errors import MoveRetriesExhaustedError, PlayerFailedError
from chess_env.text.env import TOOL_REQUEST, position_prompt, rejection_line
from chess_env.text.prompt_conditions import (
    PRESETS,
    PROMPT_OPTIONS,
    PromptCondition,
    condition_from_options,
)
from envkit.llm import ChatTimeout, LLMAgent, LLMSettings, ReasoningStep
from envkit.llm.local import LOCAL_OPTIONS, LocalChatClient, local_settings
from envkit.llm.spec_settings import SETTINGS_OPTIONS, settings_from_spec
from envkit.ports import PolicyBackend

__all__ = [
    "CHESS_SYSTEM_PROMPT",
    "HF_OPTIONS",
    "MOVE_SIGNATURE",
    "REASONING_EXCERPT_CHARS",
    "ChessLLMAgent",
    "MoveDecision",
    "TextBackendOpponent",
    "hf_opponent",
    "hf_settings",
    "llm_agent",
    "llm_condition",
    "llm_opponent",
    "llm_settings",
]

MOVE_SIGNATURE = "(move :string) -> :any"
CHESS_SYSTEM_PROMPT = (
    "You are a chess player. Read the position and reply with exactly one legal move, in UCI "
    "(e2e4) or SAN (e4, Nf3, O-O)."
)
REASONING_EXCERPT_CHARS = 400  # what a move record keeps of the model's answer


def llm_settings(
    spec: PlayerSpec,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    timeout_seconds: float | None = None,
    tool_calling: bool | None = None,
) -> tuple[LLMSettings, int]:
    """The settings of ``spec``'s LLM and its retries after an illegal move (default 1).

    Every option of the spec is checked here, the prompt condition's too (``llm_condition``).

    Example:
        >>> from chess_env.core.players import parse_player
        >>> settings, retries = llm_settings(parse_player("openai:gpt-4o-mini?retries=2"))
        >>> settings.model_name, settings.api_key_env, settings.endpoint_retries, retries
        ('gpt-4o-mini', 'OPENAI_API_KEY', 3, 2)
    """
    spec.reject_extras(argument=True, keys=(*SETTINGS_OPTIONS, "retries", *PROMPT_OPTIONS))
    if not spec.argument:
        raise spec.error("expected openai:MODEL, the model's name at the endpoint")
    llm_condition(spec)
    settings = settings_from_spec(
        spec,
        system_prompt=CHESS_SYSTEM_PROMPT,
        base_url=base_url,
        api_key_env=api_key_env,
        timeout_seconds=timeout_seconds,
        tool_calling=tool_calling,
    )
    retries = spec.integer("retries", 0, 10)
    return settings, 1 if retries is None else retries


def llm_condition(spec: PlayerSpec) -> PromptCondition:
    """What ``spec``'s player is shown: ``prompt=PRESET`` with ``board``, ``legal`` and
    ``history`` overriding it; a bad value is a ``PlayerSpecError`` naming the key.

    Example:
        >>> from chess_env.core.players import parse_player
        >>> llm_condition(parse_player("openai:m?prompt=game_arena&legal=true")).label
        'board=fen&legal=true&history=pgn'
    """
    try:
        return condition_from_options(spec.options)
    except ValueError as error:
        raise spec.error(str(error)) from None


class ChessLLMAgent(LLMAgent):
    """An ``LLMAgent`` that carries the ``PromptCondition`` it is to be shown, as ``condition``.

    Example:
        >>> agent = ChessLLMAgent(LLMSettings(name="a", model_name="m"), PRESETS["llm_chess"])
        >>> agent.condition.label
        'board=unicode&legal=true&history=none'
    """

    def __init__(self, settings: LLMSettings, condition: PromptCondition, **options: Any) -> None:
        super().__init__(settings, **options)
        self.condition = condition


def llm_agent(spec: PlayerSpec, **defaults: Any) -> ChessLLMAgent:
    """The agent for ``spec``; it answers in text, or with ``tool_calling`` through an "act" tool
    taking ``MOVE_SIGNATURE``. ``defaults`` as for ``llm_settings``."""
    settings, _ = llm_settings(spec, **defaults)
    signature = MOVE_SIGNATURE if settings.tool_calling else None
    return ChessLLMAgent(settings, llm_condition(spec), signature=signature)


def llm_opponent(spec: PlayerSpec) -> TextBackendOpponent:
    """``spec``'s LLM as a board player."""
    _, retries = llm_settings(spec)
    agent = llm_agent(spec)
    return TextBackendOpponent(agent, retries=retries, condition=agent.condition)


HF_OPTIONS = (*LOCAL_OPTIONS, "retries", *PROMPT_OPTIONS)
"""The options of ``hf:PATH``: ``envkit.llm.local.LOCAL_OPTIONS`` (``max_tokens`` defaults to 32
here; with ``tool_calling`` the model is offered ``ChessToolEnv``'s ``move`` tool, the format a
checkpoint trained with ``training.llm_rl`` learnt), ``retries`` after an illegal move and the
prompt condition's keys."""
HF_TOOL = "move"  # the tool ChessToolEnv trains; ``MOVE_SIGNATURE`` is its parameter


def hf_settings(spec: PlayerSpec) -> tuple[LLMSettings, int, int]:
    """The settings, move retries and seed of ``hf:PATH``; every option checked.

    Example:
        >>> from chess_env.core.players import parse_player
        >>> settings, retries, seed = hf_settings(parse_player("hf:runs/grpo/checkpoint-9?seed=3"))
        >>> settings.model_name, settings.temperature, settings.max_tokens, retries, seed
        ('runs/grpo/checkpoint-9', 0.0, 32, 1, 3)
    """
    spec.reject_extras(argument=True, keys=HF_OPTIONS)
    settings, seed = local_settings(spec, system_prompt=CHESS_SYSTEM_PROMPT, max_tokens=32)
    llm_condition(spec)
    retries = spec.integer("retries", 0, 10)
    return settings, 1 if retries is None else retries, seed


def hf_opponent(spec: PlayerSpec) -> TextBackendOpponent:
    """A local transformers checkpoint (``hf:PATH``) as a board player, through the text env
    and its chat template (``envkit.llm.local.LocalChatClient``); with ``tool_calling`` it
    answers through the ``move`` tool."""
    settings, retries, seed = hf_settings(spec)
    try:
        client = LocalChatClient(settings.model_name, settings, seed=seed)
    except (OSError, ValueError) as error:
        raise spec.error(f"cannot load the checkpoint: {error}") from None
    signature = MOVE_SIGNATURE if settings.tool_calling else None
    agent = ChessLLMAgent(
        settings, llm_condition(spec), client=client, signature=signature, tool_name=HF_TOOL
    )
    return TextBackendOpponent(
        agent, retries=retries, condition=agent.condition, move_tool=settings.tool_calling
    )


@dataclass(frozen=True)
class MoveDecision:
    """What one move of a text player took: the answers refused, the requests and their cost.

    ``rejected``: the reason codes (``MoveParseError.reason``) of the refused answers, in order.
    ``requests``: chat requests sent (an LLM's self-corrections included; for other backends,
    one per answer). ``tokens_in``/``tokens_out``: the endpoint's ``usage`` summed over them, None
    when any reply reported none (never estimated). ``endpoint_retries``: requests sent again
    after HTTP 429, a 5xx or a lost connection. ``reasoning``: the start of the last answer's
    text, at most ``REASONING_EXCERPT_CHARS``. ``seconds``: the move's wall time.
    """

    rejected: tuple[str, ...]
    requests: int
    tokens_in: int | None
    tokens_out: int | None
    endpoint_retries: int
    reasoning: str
    seconds: float


class TextBackendOpponent(Opponent):
    """A text backend (an LLM) playing on a board: it reads the text env's observation.

    It is shown ``condition`` (default: ``PRESETS["default"]``), asked for a bracketed move or,
    with ``move_tool``, for a call of the ``move`` tool (``TOOL_REQUEST``). An illegal answer is
    explained and retried ``retries`` times; then the player forfeits
    (``MoveRetriesExhaustedError``, a ``PlayerFailedError``), and when the backend times out it
    fails (``PlayerFailedError``): either way its side loses. An endpoint error
    (``envkit.llm.ChatError``) passes through: it is not a chess result. After every
    ``choose_move``, whatever its end, ``last_decision`` holds
    the move's ``MoveDecision``.

    Example:
        >>> from chess_env.text.agents import ScriptedTextAgent
        >>> player = TextBackendOpponent(ScriptedTextAgent(["Ke2", "[e4]"]), retries=1)
        >>> player.reset(seed=0)
        >>> player(chess.Board()).uci()  # Ke2 is refused with its reason, then e4
        'e2e4'
        >>> player.last_decision.rejected, player.last_decision.requests
        (('cannot_move_there',), 2)
    """

    def __init__(
        self,
        backend: PolicyBackend,
        *,
        retries: int = 1,
        condition: PromptCondition = PRESETS["default"],
        move_tool: bool = False,
    ) -> None:
        super().__init__()
        self.backend, self.retries, self.condition = backend, retries, condition
        self.request = TOOL_REQUEST if move_tool else None
        self.name = str(getattr(backend, "name", type(backend).__name__))
        self.last_decision: MoveDecision | None = None

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        reset = getattr(self.backend, "reset", None)
        if reset is not None:
            reset(seed=seed)

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        started, seen = time.perf_counter(), len(self._steps())
        answers: list[str] = []
        rejected: list[str] = []
        try:
            return self._play(board, legal_moves, answers, rejected)
        finally:
            steps, seconds = self._steps()[seen:], time.perf_counter() - started
            self.last_decision = _decision(answers, rejected, steps, seconds)

    def _play(
        self,
        board: chess.Board,
        legal_moves: Sequence[chess.Move],
        answers: list[str],
        rejected: list[str],
    ) -> chess.Move:
        """Ask until an answer is legal, noting each answer and each refusal's reason."""
        from chess_env.text.agents import move_text

        legal = [move.uci() for move in legal_moves] if self.condition.legal else []
        error: MoveParseError | None = None
        for attempt in range(self.retries + 1):
            note = None if error is None else rejection_line(error, self.retries - attempt + 1)
            prompt = position_prompt(
                board, board.turn, legal, "uci", self.condition, note, self.request
            )
            try:
                answers.append(move_text(self.backend.decide(prompt)))
            except ChatTimeout as timeout:
                raise PlayerFailedError(f"{self.name} did not answer in time: {timeout}") from None
            try:
                return parse_move(answers[-1], board, legal_moves)
            except MoveParseError as refused:
                error = refused
                rejected.append(refused.reason)
        raise MoveRetriesExhaustedError(
            f"{self.name} gave no legal move in {self.retries + 1} tries; the last: {error}"
        )

    def _steps(self) -> list[ReasoningStep]:
        """The backend's reasoning steps, one per decision (none for a backend without them)."""
        steps = getattr(self.backend, "reasoning", None)
        return steps if isinstance(steps, list) else []

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()


def _decision(
    answers: list[str], rejected: list[str], steps: list[ReasoningStep], seconds: float
) -> MoveDecision:
    """The move's decision from its answers and refusals, and the backend's steps (if any)."""
    written = _last_text(steps[-1]) if steps else None
    text = (written or (answers[-1] if answers else "")).strip()
    if len(text) > REASONING_EXCERPT_CHARS:
        text = text[: REASONING_EXCERPT_CHARS - 3] + "..."
    return MoveDecision(
        rejected=tuple(rejected),
        requests=sum(step.requests for step in steps) if steps else len(answers),
        tokens_in=_known_sum([step.tokens_in for step in steps]),
        tokens_out=_known_sum([step.tokens_out for step in steps]),
        endpoint_retries=sum(step.endpoint_retries for step in steps),
        reasoning=text,
        seconds=seconds,
    )


def _last_text(step: ReasoningStep) -> str | None:
    """The text of the step's last reply (None: no reply, or one with no text, a bare tool call)."""
    if not step.replies:
        return None
    content = step.replies[-1].get("content")
    return content if isinstance(content, str) and content.strip() else None


def _known_sum(counts: list[int | None]) -> int | None:
    """The sum, or None when there is nothing to add or any count is unknown."""
    if not counts or any(count is None for count in counts):
        return None
    return sum(count for count in counts if count is not None)
