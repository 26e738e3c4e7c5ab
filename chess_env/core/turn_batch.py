"""``TurnBatch``: the turns of many games played phase by phase, for ``ChessVectorEnv``.

A turn is the agent's ply, the opponent's choice of a reply and the reply's ply
(``OpponentEpisode._play_turn``). ``SyncVectorEnv`` plays each game's turn whole before the next
game's. A ``TurnBatch`` plays the agent plies of all its games, then all the opponents' choices,
then all the replies: each phase runs its code many times in a row, while that code and its data
are still in the processor's caches, instead of once between the other phases' code. The
opponents' choices gain most: a draw from a numpy generator costs about three times as much right
after a move generation as right after another draw.

The games are independent, so the phases change nothing but the time, even for one opponent
shared by all games: it is asked in the same order. When an opponent raises, the outcome is the
one of games played one after another: the games before it finish their turns, its own agent move
is taken back (as ``_play_turn`` takes it back) and the games after it are as they were before the
step.
"""

from __future__ import annotations

import chess

from chess_env.core.env import MATERIAL_REWARD_SCALE, ChessEnv
from chess_env.core.rules import ChessGame
from chess_env.errors import PlayerFailedError

__all__ = ["Turn", "TurnBatch"]


class Turn:
    """One game's turn: its row, env and agent move; once played, the reply and the reward."""

    __slots__ = (
        "env", "failed", "game", "index", "material", "move", "reply", "reward", "undo_point",
    )  # fmt: skip

    def __init__(self, index: int, env: ChessEnv, move: chess.Move) -> None:
        self.index, self.env, self.move = index, env, move
        self.game: ChessGame = env.game
        self.reply: chess.Move | None = None
        self.reward = 0.0
        self.failed = False  # the opponent could not move at all (PlayerFailedError)
        self.undo_point = self.game._undo  # what ``undo`` would take back before this turn
        # ``reward_shaping="material"``: the balance before the turn, as ``ChessEnv.step`` keeps it
        self.material = env._material() if env.reward_shaping else None

    def finish(self) -> None:
        """Play the reply and settle the episode (the last phase)."""
        if self.reply is not None:
            self.game.play(self.reply)
        if not self.failed:
            self.reward = self.env._settle(self.game)
        if self.material is not None:
            self.reward += MATERIAL_REWARD_SCALE * (self.env._material() - self.material)

    def take_back(self) -> None:
        """Undo the agent's ply so that the game is exactly as before the turn."""
        self.game.undo()
        self.game._undo = self.undo_point


class TurnBatch:
    """Turns added in row order, played together by ``play``.

    Example:
        >>> env = ChessEnv(opponent="random")
        >>> _ = env.reset(seed=0)
        >>> batch = TurnBatch()
        >>> batch.add(0, env, chess.Move.from_uci("e2e4"))
        >>> [(turn.index, turn.reply.uci(), turn.reward) for turn in batch.play()]
        [(0, 'd7d5', 0.0)]
    """

    __slots__ = ("turns",)

    def __init__(self) -> None:
        self.turns: list[Turn] = []

    def add(self, index: int, env: ChessEnv, move: chess.Move) -> None:
        """Game ``index``'s turn with ``move``, legal in its live game."""
        self.turns.append(Turn(index, env, move))

    def play(self) -> list[Turn]:
        """Play the turns added since the last call and return them, replies and rewards set."""
        turns, self.turns = self.turns, []
        for turn in turns:
            turn.game.play(turn.move)
        for position, turn in enumerate(turns):
            if turn.game.is_over:
                continue
            try:
                turn.reply = turn.env._choose_reply(turn.game)
            except PlayerFailedError:  # the opponent loses, as in ``_play_turn``
                turn.reward, turn.failed = turn.env._opponent_failed(), True
            except BaseException:
                _unwind(turns, position)
                raise
        for turn in turns:
            turn.finish()
        return turns


def _unwind(turns: list[Turn], failing: int) -> None:
    """The state games played one after another would leave when opponent ``failing`` raised."""
    for turn in turns[:failing]:
        turn.finish()
    turns[failing].game.undo()
    for turn in reversed(turns[failing + 1 :]):
        turn.take_back()
