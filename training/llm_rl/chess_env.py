"""``ChessToolEnv``: text chess as a TRL environment, one tool (``move``) against an opponent.

- ``ChessToolEnv``: the class ``GRPOTrainer(environment_factory=...)`` builds, one per rollout:
  ``reset(**row)`` returns the position as ``chess_env/ChessText-v0`` shows it, ``move`` plays the
  model's move and the opponent's reply, ``get_reward`` scores the finished rollout.
- ``chess_tool_env(**options)``: a picklable zero-argument factory of such envs
  (``AsyncGRPOTrainer`` pickles its ``environment_factory`` into a spawned process).
- ``REWARDS``: the reward variants.

TRL turns every public method but ``reset`` and ``get_reward`` into a tool, so the class has no
other public method; an exception a tool raises reaches the model as the tool's error, which is
how a refused move is explained.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal, NoReturn

import chess

from chess_env.core.episode import AgentColor, check_choice
from chess_env.core.move_parsing import MoveParseError
from chess_env.core.opponents import PIECE_VALUES
from chess_env.core.players import PlayerLike
from chess_env.core.positions import board_from_fen
from chess_env.core.rules import DEFAULT_MAX_PLIES
from chess_env.text.env import TOOL_REQUEST, ChessTextEnv, position_prompt
from chess_env.text.prompt_conditions import PromptCondition

__all__ = ["REWARDS", "ChessToolEnv", "chess_tool_env"]

Reward = Literal["outcome", "material"]
REWARDS: tuple[str, ...] = ("outcome", "material")

# The text env closes a live position with a request to answer in brackets; a tool user calls
# ``move`` instead. Taken from the text env itself so the two never drift apart.
_TEXT_ENV_REQUEST = position_prompt(
    chess.Board(), chess.WHITE, [], condition=PromptCondition(board="fen", legal=False)
).splitlines()[-1]
_FULL_ARMY = 39  # the material of a whole army without its king: the material reward's unit
_FORFEIT = "illegal_moves"  # the ending when the error allowance is used up


class ChessToolEnv:
    """One chess game (or one puzzle) for an LLM that plays through the ``move`` tool.

    Args:
        opponent: any player of ``chess_env.core.players`` (default "random"): a spec such as
            "stockfish:3", an ``Opponent`` or a callable ``board -> chess.Move``. Only a spec
            (or a picklable object) keeps ``chess_tool_env``'s factory picklable.
        colour: "white" (default), "black", or "random" (drawn at each reset from its seed).
            In puzzle mode the agent plays the side to move, whatever this says.
        max_plies: the game stops after this many plies since reset (default 512; None: no
            cap). A stopped game is unfinished: see ``get_reward``.
        prompt: how the position is shown: a preset of ``chess_env.text.prompt_conditions``
            (default "default": diagram, FEN, last move, legal moves) or a ``PromptCondition``.
        error_allowance: refused moves (illegal or unreadable) a game may have (default 3);
            the next one loses it.
        reward: "outcome" (default) or "material"; see ``get_reward``.

    A row with ``answers`` (a list of UCI moves, as in a task set row with ``fen``, ``answers``,
    ``kind`` and ``task_id``) is a puzzle: the agent's first legal move ends the episode, with no
    reply, and scores 1.0 if it is one of the answers, else 0.0.

    Example:
        >>> env = ChessToolEnv(opponent="random")
        >>> print(env.reset(seed=0, fen="7k/8/6K1/8/8/8/8/R7 w - - 0 1").splitlines()[-1])
        Call the move tool with your move in UCI or SAN, e.g. e2e4 or Nf3.
        >>> print(env.move("Ra8").splitlines()[:2])
        ['You played Ra8# (a1a8).', 'You play white. Game over (checkmate, 1-0): you win.']
        >>> env.get_reward()
        1.0
    """

    def __init__(
        self,
        opponent: PlayerLike = "random",
        colour: AgentColor = "white",
        max_plies: int | None = DEFAULT_MAX_PLIES,
        prompt: str | PromptCondition = "default",
        error_allowance: int = 3,
        reward: Reward = "outcome",
    ) -> None:
        check_choice("colour", colour, ("white", "black", "random"))
        check_choice("reward", reward, REWARDS)
        if not isinstance(error_allowance, int) or error_allowance < 0:
            raise ValueError(
                f"error_allowance must be a non-negative integer, got {error_allowance!r}"
            )
        # Refused moves never reach the text env (they are counted here), so its retries are moot.
        self._text = ChessTextEnv(opponent, colour, max_plies=max_plies, prompt=prompt, retries=0)
        self._colour: AgentColor = colour
        self._error_allowance, self._reward_kind = error_allowance, reward
        self._answers: list[str] | None = None
        self._started = False
        self._errors = 0
        self._ended_by: str | None = None
        self._outcome = 0.0  # the agent's result: +1 win, 0 draw or unfinished, -1 loss
        self._start_balance = 0

    def reset(self, seed: int | None = None, fen: str | None = None, **row: Any) -> str:
        """Start a new game (or puzzle) and return its position as the model's prompt.

        ``seed`` seeds the opponent and a "random" colour: the same seed and the same moves
        give the same game. ``fen``: the start position (None: the standard one). When the
        opponent moves first, its move is made before the prompt. ``row`` holds the rest of a
        dataset row: ``answers`` (UCI moves) makes a puzzle; other keys are ignored. A bad
        ``fen`` or ``answers`` raises ``ValueError`` naming it and leaves the env as it was.
        """
        answers = row.get("answers")
        if answers is not None:
            answers = _checked_answers(answers, fen)
            white_to_move = fen is None or board_from_fen(fen).turn == chess.WHITE
            self._text.agent_color = "white" if white_to_move else "black"
        else:
            self._text.agent_color = self._colour
        options = None if fen is None else {"fen": fen}
        try:
            observation, _ = self._text.reset(seed=seed, options=options)
        finally:
            self._text.agent_color = self._colour
        self._answers, self._started = answers, True
        self._errors, self._ended_by, self._outcome = 0, None, 0.0
        self._start_balance = _material_balance(self._text.board, self._text.agent)
        return _for_tool_user(observation)

    def move(self, move: str) -> str:
        """Play one chess move; the opponent replies at once.

        Args:
            move: your move in UCI (e2e4, e7e8q) or SAN (e4, Nf3, O-O, exd5, e8=Q).

        Returns:
            Your move and the opponent's reply, then the new position, or how the game ended.

        Raises:
            ValueError: the move cannot be played (the reason is given), or the game is over.
        """
        if not self._started:
            raise ValueError("no game yet: reset() starts one")
        if self._ended_by is not None:
            raise ValueError(f"the game is over ({self._ended_by}); no more moves can be played")
        if not isinstance(move, str):
            self._refuse(repr(move), "unreadable", "a move is text, e.g. e2e4 or Nf3")
        try:
            chosen = self._text.game.read_move(move)
        except MoveParseError as error:
            self._refuse(repr(move), error.reason, str(error))
        played = f"You played {self._text.board.san(chosen)} ({chosen.uci()})."
        if self._answers is not None:
            return self._grade(chosen, played)
        observation, self._outcome, _, _, info = self._text.step(chosen.uci())
        self._ended_by = self._text.ended_by
        if info["opponent_move"] is not None:
            played += f" Your opponent replied {_last_move_san(self._text.board)}."
        return f"{played}\n{_for_tool_user(observation)}"

    def get_reward(self) -> float:
        """The rollout's score, from the agent's side.

        "outcome": +1 for a win (an opponent that fails to move included), 0 for a draw, -1
        for a loss (by the error allowance included), 0 for a game that is unfinished (the ply
        cap, or the model stopped calling ``move``). "material": the same for a won or lost
        game; otherwise the change of material balance since the prompt's position (pawn 1,
        knight and bishop 3, rook 5, queen 9; the agent's minus the opponent's) divided by 39,
        a whole army, and clipped to [-1, 1]. A puzzle scores 1.0 for an answer, else 0.0.
        """
        if self._answers is not None or self._reward_kind == "outcome" or self._outcome != 0:
            return self._outcome
        if not self._started:
            return 0.0
        change = _material_balance(self._text.board, self._text.agent) - self._start_balance
        return max(-1.0, min(1.0, change / _FULL_ARMY))

    # -- helpers ---------------------------------------------------------------------------

    def _refuse(self, written: str, reason: str, message: str) -> NoReturn:
        """Count a refused move and raise its explanation (the game is lost past the allowance)."""
        self._errors += 1
        refusal = f"Illegal move {written} ({reason}): {message}."
        left = self._error_allowance - self._errors
        if left >= 0:
            plural = "move" if left == 1 else "moves"
            raise ValueError(f"{refusal} {left} more illegal {plural} allowed; try again.")
        self._ended_by = _FORFEIT
        self._outcome = 0.0 if self._answers is not None else -1.0
        raise ValueError(
            f"{refusal} That is more than the {self._error_allowance} illegal moves allowed: "
            "you lose the game."
        )

    def _grade(self, chosen: chess.Move, played: str) -> str:
        """A puzzle's one move: 1.0 for an answer, else 0.0; the episode ends either way."""
        assert self._answers is not None
        solved = chosen.uci() in self._answers
        self._outcome = 1.0 if solved else 0.0
        self._ended_by = "puzzle_solved" if solved else "puzzle_failed"
        verdict = "that solves the puzzle" if solved else "that is not the solution"
        return f"{played} Correct: {verdict}." if solved else f"{played} Wrong: {verdict}."


def _checked_answers(answers: object, fen: str | None) -> list[str]:
    """``answers`` as UCI strings, each legal in the puzzle's position, or a ``ValueError``."""
    if isinstance(answers, str) or not isinstance(answers, Sequence) or not answers:
        raise ValueError(f"answers must be a non-empty list of UCI moves, got {answers!r}")
    board = chess.Board() if fen is None else board_from_fen(fen)
    checked = []
    for index, answer in enumerate(answers):
        try:
            move = chess.Move.from_uci(answer) if isinstance(answer, str) else None
        except chess.InvalidMoveError:
            move = None
        if move is None or not board.is_legal(move):
            raise ValueError(
                f"answers[{index}]: {answer!r} is not a legal UCI move in {board.fen()}"
            )
        checked.append(move.uci())
    return checked


def _for_tool_user(observation: str) -> str:
    """The text env's observation, asking for a ``move`` call instead of a bracketed answer."""
    head, _, last = observation.rpartition("\n")
    return f"{head}\n{TOOL_REQUEST}" if last == _TEXT_ENV_REQUEST else observation


def _last_move_san(board: chess.Board) -> str:
    """The last move played on ``board``, in SAN with its UCI."""
    before = board.copy(stack=1)
    move = before.pop()
    return f"{before.san(move)} ({move.uci()})"


def _material_balance(board: chess.Board, colour: chess.Color) -> int:
    """``colour``'s material minus the other side's, in pawns."""
    return sum(
        value * (len(board.pieces(piece, colour)) - len(board.pieces(piece, not colour)))
        for piece, value in PIECE_VALUES.items()
    )


def _build(options: dict[str, Any]) -> ChessToolEnv:
    return ChessToolEnv(**options)


def chess_tool_env(**options: Any) -> Callable[[], ChessToolEnv]:
    """A zero-argument factory of ``ChessToolEnv(**options)``, for ``environment_factory``.

    The factory pickles whenever ``options`` do (a player spec does; a lambda opponent does
    not). One env is built here, so bad options fail now with the constructor's error.

    Example:
        >>> import pickle
        >>> factory = pickle.loads(pickle.dumps(chess_tool_env(opponent="greedy", colour="black")))
        >>> factory().reset(seed=1).splitlines()[0]
        'You play black. It is your move (black to move, move 1).'
    """
    ChessToolEnv(**options)
    return functools.partial(_build, options)
