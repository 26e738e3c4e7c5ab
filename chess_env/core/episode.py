"""``OpponentEpisode``: what every one-agent chess env shares, whatever it observes.

The episode: a start position (``reset(options={"fen", "moves"})``), the agent's colour, the
opponent (seeded from the env at every reset, replying after each agent move, rolled back with the
agent's move if it answers wrongly; an opponent that cannot move at all, ``PlayerFailedError``,
loses the game: outcome "opponent_failed", reward +1), the end of the game and the agent's
reward. ``ChessEnv`` (tensors) and ``ChessTextEnv`` (text) differ only in what they show and how
they read an action.
"""

from __future__ import annotations

from typing import Any, Literal

import chess
import gymnasium as gym
from gymnasium.error import ResetNeeded

from chess_env.core.players import PlayerLike, make_player
from chess_env.core.positions import start_game
from chess_env.core.rules import ChessGame
from chess_env.errors import GameOverError, InvalidPositionError, OpponentError, PlayerFailedError

__all__ = ["FORFEITS", "OpponentEpisode", "check_choice"]

# Endings the rules do not know, and whose loss each is.
FORFEITS = {"illegal_action": "agent", "illegal_move": "agent", "opponent_failed": "opponent"}


def check_choice(name: str, value: object, allowed: tuple[object, ...]) -> None:
    """A ``ValueError`` naming the parameter and its allowed values, unless ``value`` is one."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


# Which side the agent plays; "random" draws it at every reset from the episode's seed.
AgentColor = Literal["white", "black", "random"]


class OpponentEpisode(gym.Env):
    """The shared episode logic; subclasses define the spaces, observations and actions.

    Example:
        >>> from chess_env.core.env import ChessEnv  # a subclass: tensors in, indices out
        >>> env = ChessEnv(opponent="random", agent_color="black")
        >>> _ = env.reset(seed=0)
        >>> env.agent == chess.BLACK, env.board.peek().uci()  # the opponent opened as white
        (True, 'd2d4')
    """

    def __init__(
        self,
        opponent: PlayerLike,
        agent_color: AgentColor,
        max_plies: int | None,
        claim_draws: bool,
    ) -> None:
        check_choice("agent_color", agent_color, ("white", "black", "random"))
        if max_plies is not None and (not isinstance(max_plies, int) or max_plies < 1):
            raise ValueError(f"max_plies must be a positive integer or None, got {max_plies!r}")
        self.opponent = make_player(opponent)
        self.agent_color, self.max_plies, self.claim_draws = agent_color, max_plies, claim_draws
        self._game: ChessGame | None = None
        self._agent: chess.Color = chess.WHITE
        self._ended_by: str | None = None

    @property
    def board(self) -> chess.Board:
        """The live board (read it; playing moves on it directly corrupts the episode)."""
        return self._require_game().board

    @property
    def game(self) -> ChessGame:
        return self._require_game()

    @property
    def agent(self) -> chess.Color:
        """The colour the agent plays this episode."""
        return self._agent

    def _require_game(self) -> ChessGame:
        if self._game is None:
            raise ResetNeeded("call reset() before using the env")
        return self._game

    def _start_episode(self, seed: int | None, options: dict[str, Any] | None) -> chess.Move | None:
        """Set up a new episode; the opponent's first move when it plays first.

        Nothing changes unless the whole setup succeeds (a bad FEN leaves the old episode).
        """
        super().reset(seed=seed)
        game = start_game(options, claim_draws=self.claim_draws, max_plies=self.max_plies)
        if self.agent_color == "random":
            agent = bool(self.np_random.integers(2))
        else:
            agent = self.agent_color == "white"
        self.opponent.reset(seed=int(self.np_random.integers(2**63 - 1)))
        opponent_move = None
        if game.board.turn != agent:
            opponent_move = self._opponent_reply(game)
            if game.is_over:
                raise InvalidPositionError(
                    f"the opponent's first move {opponent_move.uci()} ended the episode at once "
                    f"({game.ending}); start from a position that leaves the agent a move"
                )
        self._game, self._agent, self._ended_by = game, agent, None
        return opponent_move

    def _require_live_game(self) -> ChessGame:
        game = self._require_game()
        if self._ended_by is not None:
            raise GameOverError(f"the episode is over ({self._ended_by}); call reset()")
        return game

    def play_agent_move(self, move: chess.Move) -> tuple[chess.Move | None, float]:
        """``step`` for a ``move`` the caller found legal, with no observation built: (the
        opponent's reply, the reward). For callers that show the position their own way: the
        server's adapter, which would otherwise pay for a tensor and a mask it throws away.
        """
        self._require_live_game()
        return self._play_turn(move)

    def _play_turn(self, move: chess.Move) -> tuple[chess.Move | None, float]:
        """The agent's (legal) move and the opponent's reply: (reply, outcome reward).

        If the opponent fails, the agent's move is taken back: the env is as before the step.
        ``ChessVectorEnv`` plays the same halves (``game.play``, ``_choose_reply``, ``_settle``)
        for many games at once.
        """
        game = self._require_game()
        game.play(move)
        if game.is_over:
            return None, self._settle(game)
        try:
            opponent_move = self._choose_reply(game)
        except PlayerFailedError:  # its engine died or overran: the opponent loses
            return None, self._opponent_failed()
        except BaseException:
            game.undo()
            raise
        game.play(opponent_move)
        return opponent_move, self._settle(game)

    def _choose_reply(self, game: ChessGame) -> chess.Move:
        """The opponent's move in ``game`` (not yet played), or ``OpponentError`` if it is not
        legal there."""
        move = self.opponent.choose_move(game.board, game.legal_moves)
        if not isinstance(move, chess.Move) or not game.is_legal(move):
            raise OpponentError(
                f"opponent {self.opponent!r} returned {move!r}, which is not a legal move in "
                f"{game.board.fen()}"
            )
        return move

    def _opponent_failed(self) -> float:
        """End the episode as the opponent's loss (``PlayerFailedError``); the agent's reward."""
        self._ended_by = "opponent_failed"
        return 1.0

    def _settle(self, game: ChessGame) -> float:
        """After a turn in ``game`` (this episode's): mark the episode over if the game is, and
        return the agent's reward."""
        if game.is_over:
            self._ended_by = game.ending
        winner = game.outcome.winner if game.outcome else None
        return 0.0 if winner is None else (1.0 if winner == self._agent else -1.0)

    @property
    def ended_by(self) -> str | None:
        """Why the episode ended: the game's ending ("checkmate", ...) or a side's forfeit
        ("opponent_failed", ...); None while it goes on."""
        return self._ended_by

    @property
    def pgn_result(self) -> str:
        """The episode's result as PGN writes it ("*" while it goes on), forfeits included."""
        return self._result()

    @property
    def _terminated(self) -> bool:
        """Over by the rules, or by a side that lost without a rule ending the game."""
        return self._require_game().terminated or self._ended_by in FORFEITS

    def _result(self) -> str:
        """PGN's result: the rules' outcome, or a loss for the side that broke the game off."""
        forfeit = FORFEITS.get(self._ended_by or "")
        if forfeit is not None:
            loser = self._agent if forfeit == "agent" else not self._agent
            return "0-1" if loser == chess.WHITE else "1-0"
        outcome = self._require_game().outcome
        return outcome.result() if outcome else "*"

    def _opponent_reply(self, game: ChessGame) -> chess.Move:
        move = self._choose_reply(game)
        game.play(move)
        return move

    def close(self) -> None:
        self.opponent.close()
        super().close()
