"""``ChessTextEnv`` (``chess_env/ChessText-v0``): chess as text, an LLM agent against an opponent.

The observation is a text prompt (by default the board, FEN, last move, legal moves and the last
error; a ``PromptCondition`` of ``chess_env.text.prompt_conditions`` chooses what is shown); the
action is free text, read by ``chess_env.core.move_parsing.parse_move``. As in TextArena, an illegal
answer is explained and the agent may retry; once its retries are used up, an illegal answer loses.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Sequence
from typing import Any, Literal

import chess
from gymnasium import spaces

from chess_env.core.episode import AgentColor, OpponentEpisode, check_choice
from chess_env.core.fen import fen_of
from chess_env.core.move_parsing import MoveParseError
from chess_env.core.players import PlayerLike
from chess_env.core.render import render_ansi
from chess_env.core.rules import DEFAULT_MAX_PLIES
from chess_env.text.prompt_conditions import (
    BOARD_VIEWS,
    HISTORY_MAX_CHARS,
    HISTORY_VIEWS,
    PRESETS,
    BoardView,
    HistoryView,
    PromptCondition,
    history_lines,
)

Notation = Literal["uci", "san"]  # how the prompt writes moves (either is read back)

__all__ = [
    "ACTION_MAX_LENGTH",
    "OBSERVATION_MAX_LENGTH",
    "TOOL_REQUEST",
    "ChessTextEnv",
    "position_prompt",
    "rejection_line",
]

# The longest observation: 218 legal moves in SAN (about 1,700 characters), a diagram, an error
# and a PGN history of at most HISTORY_MAX_CHARS, with room to spare.
OBSERVATION_MAX_LENGTH = HISTORY_MAX_CHARS + 8192
ACTION_MAX_LENGTH = 1024  # bounds what action_space.sample() draws; longer answers are read too
_UNICODE_CHARS = "".join(chess.UNICODE_PIECE_SYMBOLS.values()) + "·"
_TO_ASCII = str.maketrans({"·": ".", **{u: s for s, u in chess.UNICODE_PIECE_SYMBOLS.items()}})
_LEGENDS = {
    "ascii": "Uppercase letters are white pieces, lowercase black, dots empty squares.",
    "unicode": "♔♕♖♗♘♙ are white pieces, ♚♛♜♝♞♟ black, · empty squares.",
}
_PROMPT = "Reply with your move in square brackets, in UCI or SAN, e.g. [e2e4] or [Nf3]."
TOOL_REQUEST = "Call the move tool with your move in UCI or SAN, e.g. e2e4 or Nf3."
"""The closing line of ``position_prompt`` for a player that moves through a ``move`` tool."""
_DEFAULT = PRESETS["default"]


class ChessTextEnv(OpponentEpisode):
    """Chess as text for one LLM agent against an opponent.

    Observation: a ``Text`` prompt with whose move it is and, by default, the board from the
    agent's side (with coordinates), the FEN, the last move (UCI and SAN), the legal moves and,
    after an illegal answer, its reason and the retries left. ``prompt``, ``board_style``,
    ``legal_moves`` and ``history`` choose what is shown (a ``PromptCondition``, kept as
    ``condition``). Action: free text naming one move in UCI or SAN (see
    ``chess_env.core.move_parsing`` for what is read and how case is handled).

    Args:
        opponent: any player of ``chess_env.core.players`` (default "random"): a spec such as
            "stockfish:3" or "alphabeta:2", an ``Opponent``, an SB3 model or a callable
            ``board -> chess.Move``, as for ``ChessEnv``.
        agent_color: "white" (default), "black", or "random" (drawn each episode from the seed).
        notation: how the legal moves are listed: "uci" (default) or "san" (about 55 times the
            cost of the UCI list, so built only when asked). Answers may use either notation.
        prompt: the preset condition (``chess_env.text.prompt_conditions.PRESETS``; default
            "default") or a ``PromptCondition``; the three options below override it.
        board_style: "ascii" (letters and dots) or "unicode" (chess symbols), each a diagram
            with the FEN; "fen" (the FEN alone) or "none" (no board: needs ``history="pgn"``).
            None (default): the preset's, "ascii" for "default".
        legal_moves: whether the legal moves are listed (None: the preset's, True for "default").
        history: "none", "last" (the last move) or "pgn" (the game so far as PGN movetext).
            None: the preset's, "last" for "default".
        retries: further attempts a move gets after an illegal answer (default 1). The count
            restarts after each legal move; an illegal answer with no retry left loses the game.
        max_plies: truncate after this many plies since reset (default 512; None: no cap).
        claim_draws: end on threefold repetition and the 50-move rule (default True).
        render_mode: None, "ansi" (``render()`` returns the observation text) or "human" (it is
            printed after every reset and step, as Gymnasium's human mode does).

    Rewards are +1 for a win, -1 for a loss (an illegal answer with no retry left included) and
    0 otherwise, from the agent's side; an illegal answer that may be retried scores 0 and changes
    nothing on the board. ``info`` holds ``fen``, ``outcome`` ("checkmate", ..., "illegal_move",
    "opponent_failed" or None), ``result``, ``opponent_move`` and ``agent_move`` (UCI or None),
    ``ply``, ``legal_moves`` (UCI), ``agent_color``, ``retries_left``, ``illegal_attempts`` (this
    episode) and ``last_error`` (``{"reason": code, "message": ...}`` until the next legal move,
    else None). ``info["fen"]`` holds the position whatever the observation shows.

    Example:
        >>> env = ChessTextEnv(opponent="random")
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step("I play [g1g3]")
        >>> info["last_error"]["message"], info["retries_left"], info["ply"]
        ('the knight on g1 cannot move to g3', 1, 0)
        >>> obs, reward, terminated, truncated, info = env.step("Nf3")
        >>> info["agent_move"], info["ply"], info["last_error"]
        ('g1f3', 2, None)
    """

    metadata = {"render_modes": ["human", "ansi"], "render_fps": 2}

    def __init__(
        self,
        opponent: PlayerLike = "random",
        agent_color: AgentColor = "white",
        notation: Notation = "uci",
        board_style: BoardView | None = None,
        retries: int = 1,
        max_plies: int | None = DEFAULT_MAX_PLIES,
        claim_draws: bool = True,
        render_mode: Literal["human", "ansi"] | None = None,
        *,
        legal_moves: bool | None = None,
        history: HistoryView | None = None,
        prompt: str | PromptCondition = "default",
    ) -> None:
        super().__init__(opponent, agent_color, max_plies, claim_draws)
        check_choice("notation", notation, ("uci", "san"))
        check_choice("render_mode", render_mode, (None, "human", "ansi"))
        if not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be a non-negative integer, got {retries!r}")
        self.condition = _env_condition(prompt, board_style, legal_moves, history)
        self.notation, self.retries = notation, retries
        self.render_mode = render_mode

        charset = string.printable + (_UNICODE_CHARS if self.condition.board == "unicode" else "")
        self.observation_space = spaces.Text(OBSERVATION_MAX_LENGTH, charset=charset)
        self.action_space = spaces.Text(ACTION_MAX_LENGTH, min_length=0, charset=string.printable)
        self._failed_tries = 0  # illegal answers since the last legal move
        self._illegal_attempts = 0
        self._last_error: MoveParseError | None = None

    # -- properties users read ---------------------------------------------------------------

    @property
    def retries_left(self) -> int:
        """Retries the current move still has: the first illegal answer uses none of them."""
        return self.retries - max(self._failed_tries - 1, 0)

    # -- the Gymnasium API -------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        opponent_move = self._start_episode(seed, options)
        self._failed_tries, self._illegal_attempts, self._last_error = 0, 0, None
        return self._shown(self._observation()), self._info(None, opponent_move)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        game = self._require_live_game()
        if not isinstance(action, str):
            raise TypeError(f"the action must be text (str), got {type(action).__name__}")
        try:
            move = game.read_move(action)
        except MoveParseError as error:
            return self._illegal_step(error)

        opponent_move, reward = self._play_turn(move)
        self._failed_tries, self._last_error = 0, None
        info = self._info(move, opponent_move)
        return self._shown(self._observation()), reward, self._terminated, game.truncated, info

    def render(self) -> str | None:
        observation = self._shown(self._observation())
        return observation if self.render_mode == "ansi" else None

    def _shown(self, observation: str) -> str:
        """The observation, printed first in human mode."""
        if self.render_mode == "human":
            print(observation, end="\n\n", flush=True)
        return observation

    # -- helpers -----------------------------------------------------------------------------

    def _illegal_step(self, error: MoveParseError) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._failed_tries += 1
        self._illegal_attempts += 1
        self._last_error = error
        lost = self._failed_tries > self.retries
        if lost:
            self._ended_by = "illegal_move"
        observation = self._shown(self._observation())
        return observation, -1.0 if lost else 0.0, lost, False, self._info(None, None)

    def _observation(self) -> str:
        board = self._require_game().board
        error = self._error_line(self._last_error) if self._last_error is not None else None
        if self._ended_by is None:
            legal = self._legal_list() if self.condition.legal else []
            return position_prompt(board, self._agent, legal, self.notation, self.condition, error)
        lines = [self._headline(), *_position_lines(board, self._agent, self.condition)]
        return "\n".join([*lines, error] if error else lines)

    def _headline(self) -> str:
        color = chess.COLOR_NAMES[self._agent]
        game = self._require_game()
        if self._ended_by == "illegal_move":
            verdict = "you lose by an illegal move"
        elif self._ended_by == "opponent_failed":
            verdict = "your opponent could not move, you win"
        elif game.outcome is None:
            verdict = "the game was stopped at the ply limit"
        elif game.outcome.winner is None:
            verdict = "it is a draw"
        else:
            verdict = "you win" if game.outcome.winner == self._agent else "you lose"
        return f"You play {color}. Game over ({self._ended_by}, {self._result()}): {verdict}."

    def _legal_list(self) -> list[str]:
        game = self._require_game()
        if self.notation == "san":
            return [game.board.san(move) for move in game.legal_moves]
        return game.legal_uci

    def _error_line(self, error: MoveParseError) -> str:
        return rejection_line(error, None if self._ended_by is not None else self.retries_left)

    def _info(self, move: chess.Move | None, opponent_move: chess.Move | None) -> dict[str, Any]:
        game = self._require_game()
        over = self._ended_by is not None
        error = self._last_error
        return {
            "fen": fen_of(game.board),
            "outcome": self._ended_by,
            "result": self._result(),
            "agent_move": move.uci() if move else None,
            "opponent_move": opponent_move.uci() if opponent_move else None,
            "ply": game.board.ply(),
            "legal_moves": [] if over else game.legal_uci,
            "agent_color": chess.COLOR_NAMES[self._agent],
            "retries_left": 0 if over else self.retries_left,
            "illegal_attempts": self._illegal_attempts,
            "last_error": {"reason": error.reason, "message": str(error)} if error else None,
        }


def position_prompt(
    board: chess.Board,
    color: chess.Color,
    legal: Sequence[str],
    notation: str = "uci",
    condition: PromptCondition = _DEFAULT,
    error: str | None = None,
    request: str | None = None,
) -> str:
    """What a player to move reads: ``ChessTextEnv``'s observation of a live game.

    ``condition`` chooses what is shown; ``legal`` lists the legal moves in ``notation`` (shown
    when ``condition.legal``); ``error`` explains a rejected answer; ``request``, the last line,
    says how to answer (default: in square brackets; ``TOOL_REQUEST`` for a tool user). LLM
    players in the other envs (``chess_env.text.llm_player``) are shown the same text.

    Example:
        >>> blind = PRESETS["textarena_blind"]
        >>> print(position_prompt(chess.Board(), chess.WHITE, ["e2e4"], condition=blind))
        You play white. It is your move (white to move, move 1).
        Moves so far (PGN): none.
        Reply with your move in square brackets, in UCI or SAN, e.g. [e2e4] or [Nf3].
    """
    name = chess.COLOR_NAMES[color]
    headline = f"You play {name}. It is your move ({name} to move, move {board.fullmove_number})."
    lines = [headline, *_position_lines(board, color, condition)]
    if condition.legal:
        lines.append(f"Legal moves ({notation.upper()}): {' '.join(legal)}")
    closing = [error] if error else []
    return "\n".join([*lines, *closing, request or _PROMPT])


def rejection_line(error: MoveParseError, retries_left: int | None) -> str:
    """Why an answer was refused, and the retries its move has left (None: the game is over)."""
    line = f"Your last answer was rejected ({error.reason}): {error}."
    if retries_left is None:
        return line
    return (
        f"{line} {retries_left} {'retry' if retries_left == 1 else 'retries'} left for this move."
    )


def _position_lines(
    board: chess.Board, color: chess.Color, condition: PromptCondition
) -> list[str]:
    """The board from ``color``'s side with its legend, the FEN and the history, as shown."""
    lines: list[str] = []
    if condition.board in _LEGENDS:
        lines += [_board_text(board, color, condition.board), _LEGENDS[condition.board]]
    if condition.board != "none":
        lines.append(f"FEN: {board.fen()}")
    if condition.history == "last":
        lines.append(_last_move_line(board))
    elif condition.history == "pgn":
        lines += history_lines(board)
    return lines


def _env_condition(
    prompt: str | PromptCondition,
    board_style: BoardView | None,
    legal_moves: bool | None,
    history: HistoryView | None,
) -> PromptCondition:
    """The preset ``prompt`` (or the condition itself) with the options given replacing its own."""
    if not isinstance(prompt, PromptCondition):
        check_choice("prompt", prompt, tuple(PRESETS))
        prompt = PRESETS[prompt]
    check_choice("board_style", board_style, (None, *BOARD_VIEWS))
    if legal_moves is not None and not isinstance(legal_moves, bool):
        raise ValueError(f"legal_moves must be True, False or None, got {legal_moves!r}")
    check_choice("history", history, (None, *HISTORY_VIEWS))
    return dataclasses.replace(
        prompt,
        board=prompt.board if board_style is None else board_style,
        legal=prompt.legal if legal_moves is None else legal_moves,
        history=prompt.history if history is None else history,
    )


def _board_text(board: chess.Board, orientation: chess.Color, style: str) -> str:
    """The board with coordinates, the agent's side at the bottom."""
    text = render_ansi(board, orientation)
    return text if style == "unicode" else text.translate(_TO_ASCII)


def _last_move_line(board: chess.Board) -> str:
    if not board.move_stack:
        return "Last move: none."
    before = board.copy(stack=1)
    move = before.pop()
    return f"Last move: {chess.COLOR_NAMES[before.turn]} played {move.uci()} ({before.san(move)})."
