"""Who plays whom, with which opening and colour: the tournament's schedule.

- ``pairings(players, anchors, format)``: a round robin over everyone, or a gauntlet (every
  candidate against every member of the ladder, and the ladder against itself, which ties its
  unpinned members to the pinned ones and measures how consistent the anchors are).
- ``ScheduledGame`` and ``schedule(...)``: every pairing plays each picked opening with both
  colours. The order interleaves the pairings (opening by opening), so the ratings shown while a
  run is in progress already cover every pairing.

A game's id names its pairing, opening, round and colours, and its seed is a stable hash of the
tournament seed and that id (hashlib: the same in every process), so a resumed run plays exactly
the games still missing, each as the first run would have.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from chess_env.arena.openings import Opening

__all__ = [
    "DEFAULT_LADDER",
    "DEFAULT_MAX_PLIES",
    "ScheduledGame",
    "game_seed",
    "pairings",
    "schedule",
]

DEFAULT_LADDER = (
    "stockfish?elo=1350&movetime=0.05",
    "stockfish?elo=1750&movetime=0.05",
    "stockfish?elo=2150&movetime=0.05",
)
"""The default anchors: Stockfish limited to these ``UCI_Elo`` values, 50 ms a move."""
DEFAULT_MAX_PLIES = 300
"""A game still going after this many plies (after its opening) is a draw."""


@dataclass(frozen=True)
class ScheduledGame:
    """One game to play: its place in the schedule, the players, the opening and the seed."""

    index: int
    game_id: str
    white: str
    black: str
    opening: Opening
    seed: int


def pairings(players: Sequence[str], anchors: Sequence[str], format: str) -> list[tuple[str, str]]:
    """The pairings to play, each once (colours are the schedule's business).

    Example:
        >>> pairings(["a", "b"], ["x", "y"], "gauntlet")
        [('a', 'x'), ('a', 'y'), ('b', 'x'), ('b', 'y'), ('x', 'y')]
        >>> pairings(["a", "b"], ["x"], "round-robin")
        [('a', 'b'), ('a', 'x'), ('b', 'x')]
    """
    names = [*players, *anchors]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"each player may appear once; repeated: {', '.join(repeated)}")
    if format == "round-robin":
        if len(names) < 2:
            raise ValueError("a round robin needs at least two players (players and anchors)")
        return list(combinations(names, 2))
    if format == "gauntlet":
        if not anchors:
            raise ValueError("a gauntlet needs a ladder: give --anchors")
        ladder = list(combinations(anchors, 2))
        return [(candidate, rung) for candidate in players for rung in anchors] + ladder
    raise ValueError(f"format must be 'round-robin' or 'gauntlet', got {format!r}")


def game_seed(seed: int, game_id: str) -> int:
    """A game's seed: stable across processes and runs, independent of the schedule's order.

    Example:
        >>> seeds = [game_seed(seed, "p0-o01-r0-ab") for seed in (0, 0, 1)]
        >>> seeds[0] == seeds[1] != seeds[2]
        True
    """
    digest = hashlib.sha256(f"{seed}|{game_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def schedule(
    pairs: Sequence[tuple[str, str]],
    openings: Sequence[Opening],
    games_per_pair: int,
    seed: int,
) -> list[ScheduledGame]:
    """Every pairing plays ``games_per_pair // 2`` openings with both colours.

    The openings are used in turn; when a pairing needs more than there are, they are played
    again in further rounds (with new seeds). ``games_per_pair`` must be even, so that each
    opening is played once with each colour.

    Example:
        >>> from chess_env.arena.openings import load_openings
        >>> games = schedule([("a", "b")], load_openings("startpos").openings, 4, seed=0)
        >>> for game in games:
        ...     print(game.game_id, game.white, game.black)
        p0-startpos-r0-ab a b
        p0-startpos-r0-ba b a
        p0-startpos-r1-ab a b
        p0-startpos-r1-ba b a
    """
    if games_per_pair < 2 or games_per_pair % 2:
        raise ValueError(
            f"games_per_pair must be an even number >= 2 (each opening with both colours), "
            f"got {games_per_pair}"
        )
    if not openings:
        raise ValueError("no openings to play")
    games: list[ScheduledGame] = []
    for slot in range(games_per_pair // 2):
        opening, round_ = openings[slot % len(openings)], slot // len(openings)
        for swapped in (False, True):
            for number, (first, second) in enumerate(pairs):
                white, black = (second, first) if swapped else (first, second)
                game_id = f"p{number}-{opening.id}-r{round_}-{'ba' if swapped else 'ab'}"
                games.append(
                    ScheduledGame(
                        len(games), game_id, white, black, opening, game_seed(seed, game_id)
                    )
                )
    return games
