"""Ratings on one anchored Elo scale: Bradley-Terry by maximum likelihood, intervals by bootstrap.

What it holds:

- ``GameScore``: one game's result, as the first player's points (1.0, 0.5 or 0.0).
- ``expected_score``: the Elo expectation of a player against an opponent.
- ``bradley_terry``: the ratings under which the games are most likely, the anchors pinned.
- ``fit_ratings`` and ``RatingFit``: those ratings with bootstrap intervals over the games.
- ``score_matrix``: the head-to-head points and games of every pair that met.

The Wilson interval of a score is ``envkit.stats.wilson_interval``.

Both env families rate players with it: the chess arena its games, a world evaluation its focal
players over paired episodes. A game's two sides are named ``white`` and ``black`` after chess;
the model has no first-mover advantage, so the order only says whose points ``score`` counts.

The model is Bradley-Terry on the Elo scale: a player rated ``r`` scores ``expected_score(r, s)``
on average against one rated ``s``. A draw counts as half a win, so a game with white's score
``x`` adds ``x log P + (1 - x) log(1 - P)`` to the log-likelihood, ``P`` being white's expected
score. Only the differences between ratings are identified, so the scale is fixed by anchors:
players whose ratings are given (a Stockfish ladder at fixed ``UCI_Elo`` values, say) and pinned
exactly, which puts every player connected to them through games on the anchors' scale. A group
of players with no game path to any anchor (or every player, when there are no anchors) can only
be placed relative to each other: such a group is centred so that its mean rating is 1500
(``RatingFit.unanchored`` names its players).

A player who won (or lost) every game has no finite maximum-likelihood rating. As in Rémi
Coulom's bayeselo, the fit adds ``prior_draws`` virtual draws (default 1) to every pair of players
that met: every rating becomes finite, and each pair's score is pulled towards one half, which
shrinks its gap. The pull is slight for close pairs with dozens of games (a 75% score over 50
games reads 186 Elo instead of 191) but strong for lopsided pairs with few (a 97% score over 20
games reads 503 instead of 604), so a round robin over a wide ladder with few games per pair is
drawn together: there, lower ``prior_draws``, or set it to 0 when no score is perfect. The
virtual draws follow the pairs that met, so they never connect players who did not play each
other. With ``prior_draws=0`` the fit is plain maximum likelihood and raises ``ValueError``
naming the players whose rating would be infinite.

The optimiser is ``scipy.optimize.minimize`` with the analytic gradient and Hessian-vector
product, over the games tallied per pair. The log-likelihood is concave, so Newton steps
(``trust-ncg``) converge in a handful of iterations; L-BFGS-B calls LAPACK since scipy 1.15, and
with multi-threaded OpenBLAS a small fit then waits on threads (scipy issue 22438) and the
bootstrap's thousand fits take many times as long. Maintained Bradley-Terry libraries do not fit
this model: choix takes (winner, loser) pairs, so neither half points nor pinned ratings; a
statsmodels binomial GLM can pin anchors through an offset but diverges on a perfect score, the
case the prior is for.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.sparse import coo_array
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from envkit.stats import check_confidence

__all__ = [
    "GameScore",
    "RatingFit",
    "bradley_terry",
    "expected_score",
    "fit_ratings",
    "score_matrix",
]

_CENTRE = 1500.0
_LOGIT_PER_ELO = math.log(10) / 400


@dataclass(frozen=True)
class GameScore:
    """One game: the two players and white's (the first player's) points, 1.0, 0.5 or 0.0.

    Example:
        >>> GameScore("stockfish-1500", "alphabeta-3", 0.5)
        GameScore(white='stockfish-1500', black='alphabeta-3', score=0.5)
        >>> GameScore("a", "b", 0.7)
        Traceback (most recent call last):
        ...
        ValueError: game a - b: white's score must be 1.0, 0.5 or 0.0, got 0.7
    """

    white: str
    black: str
    score: float

    def __post_init__(self) -> None:
        if self.score not in (0.0, 0.5, 1.0):
            raise ValueError(
                f"game {self.white} - {self.black}: white's score must be 1.0, 0.5 or 0.0, "
                f"got {self.score!r}"
            )
        if self.white == self.black:
            raise ValueError(f"game {self.white} - {self.black}: a player cannot meet itself")


def expected_score(rating: float, opponent: float) -> float:
    """The Elo expectation of a player rated ``rating`` against one rated ``opponent``.

    Example:
        >>> expected_score(1500, 1500), round(expected_score(1700, 1500), 3)
        (0.5, 0.76)
    """
    return 1.0 / (1.0 + 10.0 ** ((opponent - rating) / 400.0))


@dataclass(frozen=True)
class RatingFit:
    """``fit_ratings``'s answer; every mapping is keyed by the players who played.

    Attributes:
        ratings: the point estimate (``bradley_terry``), in Elo.
        low, high: the ``confidence`` percentile interval of the bootstrap; an anchor's is its
            pinned rating on both sides, and with ``bootstrap=0`` both equal the estimate.
        anchors: the pinned ratings as given.
        games: the number of games fitted.
        bootstrap: the number of bootstrap resamples.
        prior_draws: the virtual draws added to every pair that met.
        confidence: the coverage of ``low`` to ``high``.
        unanchored: the players with no game path to an anchor (all of them without anchors):
            their group is centred at 1500, so their ratings are not on the anchors' scale.
    """

    ratings: dict[str, float]
    low: dict[str, float]
    high: dict[str, float]
    anchors: dict[str, float]
    games: int
    bootstrap: int
    prior_draws: float
    confidence: float
    unanchored: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Games:
    """The games as arrays over the players who played, tallied per pair, and what is pinned.

    A pair is two players who met, ``lo < hi`` by index; a game's points are ``lo``'s.
    """

    names: list[str]
    lo: np.ndarray
    hi: np.ndarray
    game_pair: np.ndarray
    game_points: np.ndarray
    pinned: np.ndarray  # an anchor, or the reference player of a group without one
    fixed: np.ndarray  # a pinned player's rating in Elo (a reference's is 0 until centred)
    start: np.ndarray  # where the optimiser starts: the anchors' mean in each group
    floating: tuple[np.ndarray, ...]  # each group without an anchor: centred at 1500

    def tally(self, sample: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per pair: ``lo``'s points and the games, over all games or over a resample of them."""
        pair = self.game_pair if sample is None else self.game_pair[sample]
        points = self.game_points if sample is None else self.game_points[sample]
        pairs = len(self.lo)
        return (
            np.bincount(pair, weights=points, minlength=pairs),
            np.bincount(pair, minlength=pairs).astype(float),
        )


def _player_index(players: Iterable[str]) -> dict[str, int]:
    names = list(players)
    index = {name: i for i, name in enumerate(names)}
    if len(index) != len(names):
        twice = sorted(name for name, count in Counter(names).items() if count > 1)
        raise ValueError(f"players named more than once: {', '.join(twice)}")
    return index


def _check_names(games: Sequence[GameScore], index: Mapping[str, int]) -> None:
    unknown = sorted({name for game in games for name in (game.white, game.black)} - set(index))
    if unknown:
        raise ValueError(f"games name players not among the players: {', '.join(unknown)}")


def _prepare(
    games: Iterable[GameScore], players: Iterable[str], anchors: Mapping[str, float] | None
) -> _Games:
    index = _player_index(players)
    anchors = dict(anchors or {})
    strangers = sorted(set(anchors) - set(index))
    if strangers:
        raise ValueError(f"anchors not among the players: {', '.join(strangers)}")
    for name, rating in anchors.items():
        if not math.isfinite(rating):
            raise ValueError(f"anchor {name}: the rating must be a finite number, got {rating!r}")
    games = list(games)
    _check_names(games, index)
    white = np.array([index[game.white] for game in games], dtype=np.intp)
    black = np.array([index[game.black] for game in games], dtype=np.intp)
    score = np.array([game.score for game in games], dtype=float)
    # Renumber over the players who played: the others get no rating at all.
    played = np.zeros(len(index), dtype=bool)
    played[white] = played[black] = True
    renumber = np.cumsum(played) - 1
    white, black = renumber[white], renumber[black]
    names = [name for name, i in index.items() if played[i]]
    n = len(names)
    lo, hi = np.minimum(white, black), np.maximum(white, black)
    keys, game_pair = np.unique(lo * n + hi, return_inverse=True)
    pinned = np.array([name in anchors for name in names], dtype=bool)
    fixed = np.array([anchors.get(name, 0.0) for name in names], dtype=float)
    start = fixed.copy()
    graph = coo_array((np.ones(len(keys)), (keys // n, keys % n)), shape=(n, n))
    groups, label = connected_components(graph, directed=False)
    floating = []
    for group in range(groups):
        members = np.flatnonzero(label == group)
        anchored = members[pinned[members]]
        if anchored.size:
            start[members[~pinned[members]]] = fixed[anchored].mean()
        else:
            pinned[members[0]] = True
            floating.append(members)
    return _Games(
        names=names,
        lo=keys // n,
        hi=keys % n,
        game_pair=game_pair,
        game_points=np.where(white == lo, score, 1.0 - score),
        pinned=pinned,
        fixed=fixed,
        start=start,
        floating=tuple(floating),
    )


def _check_prior(prior_draws: float) -> None:
    if not (math.isfinite(prior_draws) and prior_draws >= 0):
        raise ValueError(f"prior_draws must be a finite number >= 0, got {prior_draws!r}")


def _check_finite(g: _Games, points: np.ndarray, games: np.ndarray, where: str) -> None:
    """Without a prior, a rating is finite only when its player both scored against and gave
    points to players on a chain back to a pinned rating (Zermelo's condition): with all pinned
    ratings as one node, the players outside that node's strong component are named.
    """
    n = len(g.names)
    node = np.where(g.pinned, n, np.arange(n))
    scored, gave = points > 0, points < games  # lo scored against hi; hi scored against lo
    rows = np.concatenate([node[g.lo][scored], node[g.hi][gave]])
    cols = np.concatenate([node[g.hi][scored], node[g.lo][gave]])
    graph = coo_array((np.ones(len(rows)), (rows, cols)), shape=(n + 1, n + 1))
    _, label = connected_components(graph, directed=True, connection="strong")
    stray = [name for i, name in enumerate(g.names) if not g.pinned[i] and label[i] != label[n]]
    if stray:
        raise ValueError(
            f"{', '.join(stray)}: no finite rating with prior_draws=0{where}: against the rest "
            "of their group they only won or only lost (use prior_draws > 0)"
        )


def _solve(
    g: _Games, points: np.ndarray, games: np.ndarray, prior_draws: float, start: np.ndarray
) -> np.ndarray:
    """The Elo ratings that maximise the likelihood of the tallied games and virtual draws,
    searched from ``start`` (a previous answer will do: its groups without an anchor are moved
    back so that their reference player sits at 0, where the solve pins it)."""
    start = start.copy()
    for members in g.floating:
        start[members] -= start[members[0]]
    points = points + prior_draws / 2
    games = games + prior_draws
    # Per game of the total, so the objective and its gradient stay near 1 for any game count.
    w_lo = points / games.sum()
    w_all = games / games.sum()
    n, free = len(g.names), ~g.pinned
    theta = g.fixed * _LOGIT_PER_ELO  # ratings in natural log-odds units

    def spread(weights: np.ndarray) -> np.ndarray:
        """Per free player: the sum of the pair ``weights`` over its pairs, ``lo`` minus ``hi``."""
        return (np.bincount(g.lo, weights, n) - np.bincount(g.hi, weights, n))[free]

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta[free] = x
        d = theta[g.lo] - theta[g.hi]
        value = w_lo @ np.logaddexp(0.0, -d) + (w_all - w_lo) @ np.logaddexp(0.0, d)
        return float(value), spread(w_all * expit(d) - w_lo)  # expected minus actual points

    def hessian_times(x: np.ndarray, v: np.ndarray) -> np.ndarray:
        theta[free] = x
        p = expit(theta[g.lo] - theta[g.hi])
        step = np.zeros(n)
        step[free] = v
        return spread(w_all * p * (1 - p) * (step[g.lo] - step[g.hi]))

    if free.any():
        result = minimize(
            objective,
            start[free] * _LOGIT_PER_ELO,
            jac=True,
            hessp=hessian_times,
            method="trust-ncg",
            options={"gtol": 1e-10},
        )
        theta[free] = result.x
    elo = theta / _LOGIT_PER_ELO
    elo[g.pinned] = g.fixed[g.pinned]
    for members in g.floating:
        elo[members] += _CENTRE - elo[members].mean()
    return elo


def _estimate(
    g: _Games,
    tallied: tuple[np.ndarray, np.ndarray],
    prior_draws: float,
    start: np.ndarray,
    where: str = "",
) -> np.ndarray:
    if prior_draws == 0:
        _check_finite(g, *tallied, where)
    return _solve(g, *tallied, prior_draws, start)


def bradley_terry(
    games: Iterable[GameScore],
    players: Iterable[str],
    anchors: Mapping[str, float] | None = None,
    *,
    prior_draws: float = 1.0,
) -> dict[str, float]:
    """The maximum-likelihood Elo ratings of the players who played, anchors pinned.

    Args:
        games: the games to fit, every one of equal weight.
        players: every player's name; those without a game are left out of the answer.
        anchors: player -> rating held fixed; the other ratings are fitted on their scale. A
            group with no game path to an anchor (all players, when None) is centred at 1500.
        prior_draws: virtual draws added to every pair that met (default 1.0, bayeselo's prior);
            0 is plain maximum likelihood, a ``ValueError`` when a rating would be infinite.

    Example:
        >>> games = [GameScore("a", "b", 1.0), GameScore("b", "a", 0.5)] * 2
        >>> round(bradley_terry(games, ["a", "b"], {"a": 1500}, prior_draws=0)["b"], 1)
        1309.2
        >>> ratings = bradley_terry(games, ["a", "b", "c"])
        >>> {name: round(rating) for name, rating in ratings.items()}
        {'a': 1574, 'b': 1426}
    """
    _check_prior(prior_draws)
    g = _prepare(games, players, anchors)
    elo = _estimate(g, g.tally(), prior_draws, g.start)
    return dict(zip(g.names, elo.tolist(), strict=True))


def fit_ratings(
    games: Iterable[GameScore],
    players: Iterable[str],
    anchors: Mapping[str, float] | None = None,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    prior_draws: float = 1.0,
    confidence: float = 0.95,
) -> RatingFit:
    """``bradley_terry``'s ratings with percentile intervals from a bootstrap over the games.

    Each resample draws as many games as were played, with replacement, from a numpy
    ``default_rng(seed)`` (so the same seed gives the same intervals), and refits from the
    point estimate. The virtual draws stay on the pairs that met in the games themselves.

    Args:
        games: as for ``bradley_terry``.
        players: as for ``bradley_terry``.
        anchors: as for ``bradley_terry``.
        prior_draws: as for ``bradley_terry``.
        bootstrap: the number of resamples (default 1000); 0 gives intervals equal to the estimate.
        seed: the seed of the resampling.
        confidence: the coverage of the interval, in (0, 1) (default 0.95).

    Example:
        >>> games = [GameScore("sf-1500", "x", 0.0), GameScore("x", "sf-1500", 0.5)] * 10
        >>> fit = fit_ratings(games, ["sf-1500", "x"], {"sf-1500": 1500}, bootstrap=200)
        >>> round(fit.ratings["x"]), fit.low["sf-1500"], fit.high["sf-1500"]
        (1680, 1500.0, 1500.0)
        >>> fit.low["x"] < fit.ratings["x"] < fit.high["x"], fit.unanchored
        (True, ())
    """
    if not (isinstance(bootstrap, int | np.integer) and bootstrap >= 0):
        raise ValueError(f"bootstrap must be an integer >= 0, got {bootstrap!r}")
    check_confidence(confidence)
    _check_prior(prior_draws)
    g = _prepare(games, players, anchors)
    estimate = _estimate(g, g.tally(), prior_draws, g.start)
    played = len(g.game_pair)
    rng = np.random.default_rng(seed)
    samples = np.empty((bootstrap, len(g.names)))
    for b in range(bootstrap if played else 0):
        tallied = g.tally(rng.integers(played, size=played))
        samples[b] = _estimate(g, tallied, prior_draws, estimate, f" in bootstrap resample {b}")
    if bootstrap and played:
        low, high = np.percentile(samples, [50 * (1 - confidence), 50 * (1 + confidence)], axis=0)
    else:
        low = high = estimate
    unanchored = {g.names[i] for members in g.floating for i in members}
    return RatingFit(
        ratings=dict(zip(g.names, estimate.tolist(), strict=True)),
        low=dict(zip(g.names, low.tolist(), strict=True)),
        high=dict(zip(g.names, high.tolist(), strict=True)),
        anchors=dict(anchors or {}),
        games=played,
        bootstrap=bootstrap,
        prior_draws=prior_draws,
        confidence=confidence,
        unanchored=tuple(name for name in g.names if name in unanchored),
    )


def score_matrix(
    games: Iterable[GameScore], players: Iterable[str]
) -> dict[str, dict[str, tuple[float, int]]]:
    """Head to head: ``matrix[row][column]`` is (row's points, games) against that column,
    both colours together, for every column player the row met; every player has a row.

    Example:
        >>> games = [GameScore("a", "b", 1.0), GameScore("b", "a", 0.5), GameScore("a", "c", 0.0)]
        >>> score_matrix(games, ["a", "b", "c", "d"])
        {'a': {'b': (1.5, 2), 'c': (0.0, 1)}, 'b': {'a': (0.5, 2)}, 'c': {'a': (1.0, 1)}, 'd': {}}
    """
    index = _player_index(players)
    games = list(games)
    _check_names(games, index)
    points: defaultdict[tuple[str, str], float] = defaultdict(float)
    met: Counter[tuple[str, str]] = Counter()
    for game in games:
        points[game.white, game.black] += game.score
        points[game.black, game.white] += 1.0 - game.score
        met[game.white, game.black] += 1
        met[game.black, game.white] += 1
    return {
        row: {
            column: (points[row, column], met[row, column]) for column in index if met[row, column]
        }
        for row in index
    }
