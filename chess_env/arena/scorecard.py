"""From the games (and their analysis) to the ``ArenaResult``: ratings, scores, scorecards.

Every number is counted from the game records, never estimated: tokens and costs are None
("unknown") as soon as one request of the player's went without a ``usage`` field, and a cost
needs the model's price (``prices``: model -> (input, output) per million tokens).

What counts where:
- ratings, scores, W/D/L, endings and the head-to-head use the rated games (each game's latest
  record with a chess result);
- tokens, requests, latency, costs and endpoint failures use every record, the games an outage
  stopped (and that a rerun played again) included, since those requests were sent and paid for.
"""

from __future__ import annotations

import os
import platform
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import chess
import numpy as np

from chess_env.arena.ratings import (
    GameScore,
    RatingFit,
    fit_ratings,
    score_matrix,
    wilson_interval,
)
from chess_env.arena.results import (
    ArenaConfig,
    ArenaGame,
    ArenaResult,
    ColorRecord,
    ConditionCard,
    HeadToHead,
    LLMCard,
    MoveRecord,
    PlayerCard,
    QualityCard,
    TextCard,
)
from chess_env.core.players import parse_player

if TYPE_CHECKING:
    from chess_env.arena.analysis import MoveEval

__all__ = ["DEFAULT_PRIOR_DRAWS", "Prices", "build_result", "game_scores", "machine_description"]

DEFAULT_PRIOR_DRAWS = 0.1
"""Virtual draws per pairing: enough to keep a perfect score finite, small enough that a ladder of
lopsided pairings with 20 games each keeps its 95% intervals honest (93% coverage in simulation,
68% with bayeselo's 1.0)."""

Prices = Mapping[str, tuple[float, float]]
"""Model name -> (dollars per million prompt tokens, dollars per million completion tokens)."""

_POINTS = {"1-0": (1.0, 0.0), "0-1": (0.0, 1.0), "1/2-1/2": (0.5, 0.5)}


def build_result(
    config: ArenaConfig,
    records: Sequence[ArenaGame],
    *,
    analyses: Mapping[str, Sequence[MoveEval]] | None = None,
    analyse_depth: int | None = None,
    prices: Prices | None = None,
    bootstrap: int = 1000,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    wall_seconds: float = 0.0,
    cpu_seconds: float = 0.0,
) -> ArenaResult:
    """The tournament's result from all its records (superseded ones included)."""
    latest = {record.game_id: record for record in records}
    rated = sorted((game for game in latest.values() if game.rated), key=lambda g: g.index)
    names = [*config.players, *config.anchors]
    scores = game_scores(rated)
    fit = fit_ratings(
        scores,
        names,
        config.anchor_ratings or None,
        bootstrap=bootstrap,
        seed=config.seed,
        prior_draws=prior_draws,
    )
    cards = [
        _player_card(name, config, rated, records, fit, analyses, analyse_depth, prices)
        for name in names
    ]
    cards.sort(key=lambda card: (card.rating is None, -(card.rating or 0.0), card.name))
    matrix = score_matrix(scores, names)
    return ArenaResult(
        config=config,
        players=cards,
        head_to_head=[
            HeadToHead(player=row, opponent=column, points=points, games=games)
            for row, cells in matrix.items()
            for column, (points, games) in cells.items()
        ],
        conditions=_condition_cards(cards),
        games=len(rated),
        endpoint_failures=sum(record.ending == "endpoint_failure" for record in records),
        rating_method=(
            "Bradley-Terry on the Elo scale, maximum likelihood (scipy.optimize, trust-ncg) "
            f"with draws as half a win and {fit.prior_draws:g} virtual draws per pairing that "
            "met (bayeselo's prior, so that a perfect score stays finite); anchors pinned: "
            + (", ".join(f"{k} = {v:g}" for k, v in fit.anchors.items()) or "none (mean 1500)")
            + f"; {fit.confidence:.0%} intervals from {fit.bootstrap} bootstrap resamples of "
            "the games; score intervals by Wilson"
            + (
                f"; not connected to an anchor, so centred at 1500 instead: "
                f"{', '.join(fit.unanchored)}"
                if fit.unanchored and fit.anchors
                else ""
            )
        ),
        analyse_depth=analyse_depth,
        wall_seconds=wall_seconds,
        cpu_seconds=cpu_seconds,
        machine=machine_description(),
    )


def game_scores(games: Sequence[ArenaGame]) -> list[GameScore]:
    """White's points in each rated game, as the rating fit takes them."""
    return [GameScore(game.white, game.black, _POINTS[game.result or ""][0]) for game in games]


def _player_card(
    name: str,
    config: ArenaConfig,
    rated: Sequence[ArenaGame],
    records: Sequence[ArenaGame],
    fit: RatingFit,
    analyses: Mapping[str, Sequence[MoveEval]] | None,
    analyse_depth: int | None,
    prices: Prices | None,
) -> PlayerCard:
    games = [game for game in rated if name in (game.white, game.black)]
    colors: dict[str, Counter[str]] = {"white": Counter(), "black": Counter()}
    endings: Counter[str] = Counter()
    points = 0.0
    for game in games:
        color = "white" if game.white == name else "black"
        mine = _POINTS[game.result or ""][0 if color == "white" else 1]
        points += mine
        colors[color][{1.0: "wins", 0.5: "draws", 0.0: "losses"}[mine]] += 1
        endings[game.ending] += 1
    moves = [move for game in games for move in _own_moves(game, name)]
    low, high = wilson_interval(points, len(games)) if games else (None, None)
    rating = fit.ratings.get(name)
    return PlayerCard(
        name=name,
        kind=parse_player(name).kind,
        anchor=config.anchor_ratings.get(name),
        condition=_condition(name, records),
        rating=rating,
        rating_low=fit.low.get(name) if rating is not None else None,
        rating_high=fit.high.get(name) if rating is not None else None,
        games=len(games),
        points=points,
        score=points / len(games) if games else None,
        score_low=low,
        score_high=high,
        white=ColorRecord(**colors["white"]),
        black=ColorRecord(**colors["black"]),
        endings=dict(sorted(endings.items())),
        mean_seconds_per_move=float(np.mean([m.seconds for m in moves])) if moves else None,
        quality=_quality(name, games, analyses, analyse_depth),
        text=_text_card(name, games),
        llm=_llm_card(name, records, prices),
    )


def _condition(name: str, records: Sequence[ArenaGame]) -> str | None:
    """The prompt condition ``name`` played under (text players carry one in their spec)."""
    for game in records:
        if name in (game.white, game.black) and _color(game, name) in game.conditions:
            return game.conditions[_color(game, name)]
    return None


def _color(game: ArenaGame, name: str) -> str:
    return "white" if game.white == name else "black"


def _own_moves(game: ArenaGame, name: str) -> list[MoveRecord]:
    """The moves ``name`` played in ``game`` (white moves first after the opening unless the
    opening left black to move)."""
    first = 0 if _first_mover(game) == _color(game, name) else 1
    return game.moves[first::2]


def _first_mover(game: ArenaGame) -> str:
    board = chess.Board(game.root_fen)
    white_first = board.turn == chess.WHITE
    if len(game.opening_moves) % 2:
        white_first = not white_first
    return "white" if white_first else "black"


def _attempts(game: ArenaGame, name: str) -> list[MoveRecord]:
    """Every decision ``name`` made in ``game``, the failing side's unplayed one included."""
    own = _own_moves(game, name)
    if game.unplayed is not None and game.failed_side == _color(game, name):
        own = [*own, game.unplayed]
    return own


def _quality(
    name: str,
    games: Sequence[ArenaGame],
    analyses: Mapping[str, Sequence[MoveEval]] | None,
    depth: int | None,
) -> QualityCard | None:
    if analyses is None or depth is None:
        return None
    from chess_env.arena.analysis import QualitySummary

    evals = [
        move_eval
        for game in games
        for move_eval in analyses.get(game.game_id, ())
        if move_eval.color == (chess.WHITE if game.white == name else chess.BLACK)
    ]
    summary = QualitySummary.summarise(evals)
    return QualityCard(
        depth=depth,
        moves=summary.moves,
        acpl=summary.acpl,
        blunders=summary.blunders,
        mistakes=summary.mistakes,
        inaccuracies=summary.inaccuracies,
        accuracy=summary.accuracy,
    )


def _text_card(name: str, games: Sequence[ArenaGame]) -> TextCard | None:
    decisions = [move for game in games for move in _attempts(game, name)]
    if not any(move.requests is not None for move in decisions):
        return None
    played = [move for move in decisions if move.uci]
    reasons = Counter(reason for move in decisions for reason in move.rejected)
    illegal = sum(reasons.values())
    return TextCard(
        moves=len(played),
        illegal_attempts=illegal,
        illegal_per_1000_moves=1000 * illegal / len(played) if played else None,
        # every refused answer but a forfeit's last one was followed by another attempt
        retries_used=illegal - sum(not move.uci and bool(move.rejected) for move in decisions),
        reasons=dict(sorted(reasons.items())),
        forfeits=sum(
            game.ending == "illegal_move" and game.failed_side == _color(game, name)
            for game in games
        ),
    )


def _llm_card(name: str, records: Sequence[ArenaGame], prices: Prices | None) -> LLMCard | None:
    games = [game for game in records if name in (game.white, game.black)]
    decisions = [move for game in games for move in _attempts(game, name)]
    asked = [move for move in decisions if move.requests is not None]
    if not asked:
        return None
    played = [move for move in asked if move.uci]
    tokens_in = _total([move.tokens_in for move in asked])
    tokens_out = _total([move.tokens_out for move in asked])
    seconds = [move.seconds for move in played]
    spec = parse_player(name)
    price = (prices or {}).get(spec.argument or "")
    cost = None
    if price is not None and tokens_in is not None and tokens_out is not None:
        cost = (tokens_in * price[0] + tokens_out * price[1]) / 1e6 / len(games)
    return LLMCard(
        requests=sum(move.requests or 0 for move in asked),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        tokens_in_per_move=_per(tokens_in, len(played)),
        tokens_out_per_move=_per(tokens_out, len(played)),
        tokens_in_per_game=_per(tokens_in, len(games)),
        tokens_out_per_game=_per(tokens_out, len(games)),
        latency_p50=float(np.percentile(seconds, 50)) if seconds else None,
        latency_p95=float(np.percentile(seconds, 95)) if seconds else None,
        cost_per_game=cost,
        endpoint_retries=sum(move.endpoint_retries for move in asked),
        endpoint_failures=sum(
            game.ending == "endpoint_failure" and game.failed_side == _color(game, name)
            for game in games
        ),
    )


def _total(values: Sequence[int | None]) -> int | None:
    return None if any(value is None for value in values) else sum(values)  # type: ignore[arg-type]


def _per(total: int | None, count: int) -> float | None:
    return None if total is None or not count else total / count


def _condition_cards(cards: Sequence[PlayerCard]) -> list[ConditionCard]:
    groups: dict[str, list[PlayerCard]] = {}
    for card in cards:
        if card.condition is not None:
            groups.setdefault(card.condition, []).append(card)
    result = []
    for condition, members in sorted(groups.items()):
        games = sum(card.games for card in members)
        points = sum(card.points for card in members)
        moves = sum(card.text.moves for card in members if card.text)
        illegal = sum(card.text.illegal_attempts for card in members if card.text)
        result.append(
            ConditionCard(
                condition=condition,
                players=[card.name for card in members],
                games=games,
                points=points,
                score=points / games if games else None,
                illegal_per_1000_moves=1000 * illegal / moves if moves else None,
            )
        )
    return result


def machine_description() -> str:
    """The CPU model, its cores and the Python version: the context every timing needs."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            model = next(
                (
                    line.split(":", 1)[1].strip()
                    for line in cpuinfo
                    if line.startswith("model name")
                ),
                model,
            )
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"
