"""``validate_game_state(game)``: replay a game with python-chess and list every inconsistency.

Construction already checks what needs no replay; this also catches games built with
``model_construct`` or loaded from elsewhere: illegal or misrecorded moves (by index), a position
the moves do not reach, an ending the moves contradict.
"""

from __future__ import annotations

import chess
from pydantic import ValidationError

from chess_env.core.game.records import (
    _OFF_BOARD_ENDINGS,
    _RESULT_OF_WINNER,
    Game,
    Move,
    _record_problems,
)
from chess_env.core.move_parsing import MoveParseError, parse_move
from chess_env.core.positions import board_from_fen
from chess_env.core.rules import ChessGame
from chess_env.errors import InvalidPositionError
from envkit.dto import FrozenDTO

__all__ = ["validate_game_state"]


def validate_game_state(game: Game) -> list[str]:
    """Every inconsistency in ``game``, one message each; ``[]`` when it is sound.

    Checks the parts as their models do (for games built with ``model_construct``), then what
    construction checks (turn, move count, players, status and result against the position,
    times), then replays ``move_history`` from ``start_fen`` with python-chess: a move that is
    illegal (named by its index), played after the end, or recorded wrongly (SAN, piece,
    capture...), a ``board_state`` the moves do not reach, and an ending the moves contradict.

    Example:
        >>> from chess_env.core.game import AgentConfig
        >>> agent = dict(personality="balanced", model_name="m", system_prompt="Play well.")
        >>> game = Game.new(AgentConfig(agent_id="white", name="W", **agent),
        ...                 AgentConfig(agent_id="black", name="B", **agent)).with_move("e4")
        >>> validate_game_state(game)
        []
        >>> validate_game_state(game.model_construct(**{**dict(game), "current_turn": "white"}))
        ["current_turn is 'white' but board_state has black to move"]
    """
    return _part_problems(game) + _record_problems(game) + _replay_problems(game)


def _part_problems(game: Game) -> list[str]:
    """What the nested models' own validation says of each part."""
    parts: list[tuple[str, FrozenDTO]] = [
        ("white", game.white),
        ("black", game.black),
        ("board_state", game.board_state),
        *((f"move_history[{index}]", move) for index, move in enumerate(game.move_history)),
    ]
    problems = []
    for label, part in parts:
        try:
            type(part).model_validate(part.model_dump())
        except ValidationError as error:
            for item in error.errors(include_url=False):
                where = ".".join(str(key) for key in (label, *item["loc"]))
                problems.append(f"{where}: {item['msg'].removeprefix('Value error, ')}")
    return problems


_RECORDED_FIELDS = [
    name
    for name in Move.model_fields
    if name not in ("schema_version", "timestamp", "thinking_time")
]


def _replay_problems(game: Game) -> list[str]:
    """Replays the moves from ``start_fen``: legality, each record, the position, the ending."""
    try:
        replay = ChessGame(board_from_fen(game.start_fen), claim_draws=True, max_plies=None)
    except InvalidPositionError as error:
        return [f"start_fen: {error}"]
    board, problems = replay.board, list[str]()
    for index, recorded in enumerate(game.move_history):
        where = f"move_history[{index}] ({recorded.uci_notation})"
        stop = _unplayable(replay, recorded.uci_notation)
        if stop is not None:
            return [*problems, f"{where} {stop}"]  # the later moves have no position to check
        move = chess.Move.from_uci(recorded.uci_notation)
        actual = Move.from_board(board, move, recorded.thinking_time, recorded.timestamp)
        wrong = [
            f"{name} is {getattr(recorded, name)!r} but the move gives {getattr(actual, name)!r}"
            for name in _RECORDED_FIELDS
            if getattr(recorded, name) != getattr(actual, name)
        ]
        if wrong:
            problems.append(f"{where}: {'; '.join(wrong)}")
        replay.play(move)
    return problems + _final_problems(game, replay)


def _unplayable(replay: ChessGame, uci: str) -> str | None:
    """Why ``uci`` cannot be played next in ``replay``, or None."""
    if replay.outcome is not None:
        return f"is played after the game ended ({replay.ending})"
    try:
        move = chess.Move.from_uci(uci)
    except ValueError:
        return "is not a UCI move"
    if replay.is_legal(move):
        return None
    try:
        parse_move(uci, replay.board, replay.legal_moves)
    except MoveParseError as error:
        return f"is illegal in {replay.board.fen()}: {error}"
    return f"is illegal in {replay.board.fen()}"


def _final_problems(game: Game, replay: ChessGame) -> list[str]:
    """The recorded position and ending against those the moves reach."""
    problems = []
    reached = replay.board.fen()
    try:
        recorded = chess.Board(game.board_state.fen).fen()
    except ValueError:
        recorded = game.board_state.fen
    if recorded != reached:
        problems.append(f"board_state.fen is {recorded!r} but the moves reach {reached!r}")
    if replay.outcome is None:
        if game.termination is not None and game.termination not in _OFF_BOARD_ENDINGS:
            problems.append(
                f"termination is {game.termination!r} but the moves do not end the game"
            )
        return problems
    result = _RESULT_OF_WINNER[replay.outcome.winner]
    if game.termination != replay.ending:
        problems.append(
            f"the moves end the game by {replay.ending} but termination is {game.termination!r}"
        )
    if game.result != result:
        problems.append(f"the moves end the game with {result} but result is {game.result!r}")
    return problems
