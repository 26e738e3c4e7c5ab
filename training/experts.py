"""Experts whose moves behaviour cloning imitates; each can also play as an opponent.

- ``AlphaBetaExpert``: a pure-Python alpha-beta searcher (material and mobility), the chess
  expert when Stockfish is not installed; an ``Opponent`` like any other.
- ``evaluate(board)``: its evaluation, material and mobility in centipawns.
- ``chess_expert(spec)``: ``stockfish:DEPTH``, ``alphabeta:DEPTH`` or ``auto`` as an ``Opponent``
  (Stockfish itself is ``chess_env.opponents.StockfishOpponent``).
- ``ForageExpert`` and ``TradeExpert``: scripted policies for the built-in worlds, reading the
  observation a learner gets (``SingleAgentEnv`` on the world with its observability) and
  answering an element of the world's Dict action space; ``world_expert(world)`` picks one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import chess
import numpy as np

from chess_env.errors import StockfishNotFoundError
from chess_env.opponents import Opponent, StockfishOpponent, find_stockfish
from multiagent.config import SimulationConfig
from multiagent.worlds import load_world
from multiagent.worlds.forage import MOVES
from multiagent.worlds.trade import GOODS, SEASONS, TradeParams, local_price

__all__ = [
    "MATE",
    "MOBILITY_CP",
    "PIECE_CP",
    "AlphaBetaExpert",
    "ForageExpert",
    "TradeExpert",
    "chess_expert",
    "evaluate",
    "world_expert",
]

# -- chess ----------------------------------------------------------------------------------------

PIECE_CP = (0, 100, 320, 330, 500, 900, 0)  # by piece type (None, P, N, B, R, Q, K), centipawns
MOBILITY_CP = 4  # per square a knight, bishop, rook or queen attacks that its side does not hold
MATE = 100_000  # a mate found at ply p scores MATE - p: the nearer mate is the better one
INFINITY = 10**9
SEVENTH_RANK = (chess.BB_RANK_2, chess.BB_RANK_7)  # where each colour's pawns promote from

_KNIGHT_ATTACKS = chess.BB_KNIGHT_ATTACKS
_DIAG_ATTACKS, _DIAG_MASKS = chess.BB_DIAG_ATTACKS, chess.BB_DIAG_MASKS
_RANK_ATTACKS, _RANK_MASKS = chess.BB_RANK_ATTACKS, chess.BB_RANK_MASKS
_FILE_ATTACKS, _FILE_MASKS = chess.BB_FILE_ATTACKS, chess.BB_FILE_MASKS


def _side_score(board: chess.Board, own: chess.Bitboard, occupied: chess.Bitboard) -> int:
    """Material plus mobility of the pieces in ``own``, from table look-ups and popcounts."""
    knights, bishops = board.knights & own, board.bishops & own
    rooks, queens = board.rooks & own, board.queens & own
    score = (
        PIECE_CP[chess.PAWN] * (board.pawns & own).bit_count()
        + PIECE_CP[chess.KNIGHT] * knights.bit_count()
        + PIECE_CP[chess.BISHOP] * bishops.bit_count()
        + PIECE_CP[chess.ROOK] * rooks.bit_count()
        + PIECE_CP[chess.QUEEN] * queens.bit_count()
    )
    free = ~own
    squares = 0
    # Loops over set bits written out: a generator per piece costs more than the look-ups.
    bits = knights
    while bits:
        square = (bits & -bits).bit_length() - 1
        squares += (_KNIGHT_ATTACKS[square] & free).bit_count()
        bits &= bits - 1
    bits = bishops | queens
    while bits:
        square = (bits & -bits).bit_length() - 1
        squares += (_DIAG_ATTACKS[square][_DIAG_MASKS[square] & occupied] & free).bit_count()
        bits &= bits - 1
    bits = rooks | queens
    while bits:
        square = (bits & -bits).bit_length() - 1
        lines = (
            _RANK_ATTACKS[square][_RANK_MASKS[square] & occupied]
            | _FILE_ATTACKS[square][_FILE_MASKS[square] & occupied]
        )
        squares += (lines & free).bit_count()
        bits &= bits - 1
    return score + MOBILITY_CP * squares


def evaluate(board: chess.Board) -> int:
    """Material and mobility in centipawns, for the side to move (mates are the search's job).

    Example:
        >>> evaluate(chess.Board())
        0
        >>> evaluate(chess.Board("4k3/8/8/8/8/8/8/3QK3 w - - 0 1"))  # 900 + 4 x 17 squares
        968
    """
    occupied, colours = board.occupied, board.occupied_co
    return _side_score(board, colours[board.turn], occupied) - _side_score(
        board, colours[not board.turn], occupied
    )


def _capture_order(board: chess.Board, move: chess.Move) -> int:
    """MVV-LVA: the most valuable victim first, then the least valuable attacker."""
    victim = board.piece_type_at(move.to_square) or chess.PAWN  # en passant: a pawn
    attacker = board.piece_type_at(move.from_square) or chess.PAWN
    promotion = PIECE_CP[move.promotion] if move.promotion else 0
    return PIECE_CP[victim] * 8 - attacker + promotion


def _root_order(board: chess.Board, moves: Sequence[chess.Move]) -> list[chess.Move]:
    """Captures and promotions first (MVV-LVA), then the quiet moves in the order given."""
    them = board.occupied_co[not board.turn]
    noisy = [m for m in moves if m.promotion or chess.BB_SQUARES[m.to_square] & them] + [
        m for m in moves if board.is_en_passant(m)
    ]
    noisy.sort(key=lambda move: _capture_order(board, move), reverse=True)
    chosen = set(noisy)
    return noisy + [m for m in moves if m not in chosen]


class _Search:
    """One alpha-beta search on a private copy of the board (negamax, fail-soft)."""

    def __init__(self, board: chess.Board) -> None:
        self.board = board
        self.killers: dict[int, chess.Move] = {}  # per ply: the last quiet move that cut off

    def moves(self, ply: int) -> Iterator[chess.Move]:
        """Pseudo-legal moves, lazily: captures (MVV-LVA), quiet promotions, the ply's killer,
        then the other quiet moves, so a node that a capture cuts off never generates its quiet
        moves. Legality is checked after the push, only for the moves actually searched."""
        board = self.board
        them = board.occupied_co[not board.turn]
        captures = list(board.generate_pseudo_legal_moves(chess.BB_ALL, them))
        captures.sort(key=lambda move: _capture_order(board, move), reverse=True)
        yield from captures
        quiet_targets = ~them & chess.BB_ALL
        promoting = board.pawns & board.occupied_co[board.turn] & SEVENTH_RANK[board.turn]
        if promoting:
            yield from board.generate_pseudo_legal_moves(promoting, quiet_targets)
        killer = self.killers.get(ply)
        if (
            killer is not None
            and not chess.BB_SQUARES[killer.from_square] & promoting
            and not chess.BB_SQUARES[killer.to_square] & them
            and board.is_pseudo_legal(killer)
        ):
            yield killer
        else:
            killer = None
        for move in board.generate_pseudo_legal_moves(chess.BB_ALL & ~promoting, quiet_targets):
            if move != killer:
                yield move

    def value(self, depth: int, alpha: int, beta: int, ply: int) -> int:
        """The negamax value for the side to move, exact when it lies inside (alpha, beta)."""
        board = self.board
        if depth == 0:
            if board.is_check() and not any(board.generate_legal_moves()):
                return ply - MATE
            return evaluate(board)
        best = -INFINITY
        for move in self.moves(ply):
            board.push(move)
            if board.was_into_check():  # pseudo-legal, not legal
                board.pop()
                continue
            score = -self.value(depth - 1, -beta, -alpha, ply + 1)
            board.pop()
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        self.killers[ply] = move
                        break
        if best == -INFINITY:  # no legal move: mated, or stalemate
            return ply - MATE if board.is_check() else 0
        return best


class AlphaBetaExpert(Opponent):
    """Negamax with alpha-beta pruning to ``depth`` plies over material and mobility.

    The chess expert when Stockfish is missing, so it is written for speed in pure Python: at
    depth 2, about 150 moves per CPU-second in the positions of its own games and 300 in those
    of random games (this project's 2-core machine). The evaluation is popcounts over
    python-chess's attack tables (pieces at 100/320/330/500/900 centipawns, plus
    ``MOBILITY_CP`` per square a knight, bishop, rook or queen attacks that its side does not
    occupy). Inner nodes generate pseudo-legal moves lazily, captures first in MVV-LVA order,
    then promotions, the killer move of the ply and the quiet moves, and test legality only for
    the moves they search. A mate scores ``MATE - plies``, so the nearest mate is preferred;
    stalemate is a draw.

    Deterministic for a seed: the root is searched with a window one centipawn below the best
    score so far, which gives every move tied with the best its exact score, and ``reset(seed)``
    seeds the generator that draws among them.

    Limits: no quiescence search (a capture on the last ply is taken at face value); on the last
    ply a mate is recognised (a position in check is tested for legal moves) but a stalemate is
    not; repetitions and the 50-move rule are not searched.

    Args:
        depth: plies to search (default 2); each ply more costs roughly 10-30 times as much.

    Example:
        >>> expert = AlphaBetaExpert(depth=2)
        >>> expert.reset(seed=0)
        >>> expert(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")).uci()  # back-rank mate
        'a1a8'
    """

    name = "alphabeta"

    def __init__(self, depth: int = 2) -> None:
        super().__init__()
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive integer, got {depth!r}")
        self.depth = depth

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        search = _Search(board.copy(stack=False))
        best, tied = -INFINITY, []
        for move in _root_order(board, legal_moves):
            search.board.push(move)
            score = -search.value(self.depth - 1, -INFINITY, 1 - best, 1)
            search.board.pop()
            if score > best:
                best, tied = score, [move]
            elif score == best:
                tied.append(move)
        return tied[int(self.rng.integers(len(tied)))]

    def __repr__(self) -> str:
        return f"AlphaBetaExpert(depth={self.depth})"


CHESS_EXPERTS = ("stockfish", "alphabeta")


def chess_expert(spec: str) -> Opponent:
    """The chess expert ``spec`` names: ``stockfish:DEPTH``, ``alphabeta:DEPTH`` (the depth may
    be left out: Stockfish 1, alpha-beta 2) or ``auto`` (Stockfish at depth 1 when installed,
    else alpha-beta at depth 2).

    Example:
        >>> chess_expert("alphabeta:3")
        AlphaBetaExpert(depth=3)
    """
    if spec == "auto":
        try:
            find_stockfish()
        except StockfishNotFoundError:
            return AlphaBetaExpert(depth=2)
        return StockfishOpponent(depth=1)
    name, separator, depth = spec.partition(":")
    if name not in CHESS_EXPERTS or (separator and not (depth.isdigit() and int(depth) >= 1)):
        raise ValueError(
            f"unknown chess expert {spec!r}; expected stockfish:DEPTH, alphabeta:DEPTH or auto "
            "(DEPTH a positive integer)"
        )
    if name == "stockfish":
        return StockfishOpponent(depth=int(depth) if separator else 1)
    return AlphaBetaExpert(depth=int(depth) if separator else 2)


# -- worlds ---------------------------------------------------------------------------------------


class ForageExpert:
    """Walks toward the food it sees, the longer axis first, and stays when it sees it underfoot.

    The food's cell is observed with noise that is drawn afresh every turn, so standing still on
    a wrong reading costs only ``stay_cost`` energy until the next reading points the way.

    Args:
        config: the forage world (default: the built-in one); the action indices come from its
            ``actions.move.values``.

    Example:
        >>> expert = ForageExpert()
        >>> expert({"self": {"position": (0, 0)}, "global": {"food": (3, 1)}})
        {'move': 2}
    """

    def __init__(self, config: SimulationConfig | None = None) -> None:
        config = config or load_world("forage")
        values = list(config.actions["move"].values or ())
        if set(values) != set(MOVES):
            raise ValueError(f"ForageExpert needs the moves {list(MOVES)}, the world has {values}")
        self._index = {name: values.index(name) for name in MOVES}

    def __call__(self, observation: dict[str, Any]) -> dict[str, int]:
        row, column = (int(x) for x in observation["self"]["position"])
        food = observation.get("global", {}).get("food")
        if food is None:
            return {"move": self._index["stay"]}
        down, right = int(food[0]) - row, int(food[1]) - column
        if down == right == 0:
            move = "stay"
        elif abs(down) >= abs(right):
            move = "down" if down > 0 else "up"
        else:
            move = "right" if right > 0 else "left"
        return {"move": self._index[move]}


def _floats(pairs: Any) -> dict[str, float]:
    """A dynamic dict as the observation gives it, ``((key, array([value])), ...)``, as floats."""
    return {key: float(np.asarray(value).ravel()[0]) for key, value in pairs}


def _point(position: Any) -> tuple[float, float]:
    return float(np.asarray(position[0]).ravel()[0]), float(np.asarray(position[1]).ravel()[0])


class TradeExpert:
    """A one-turn-greedy trader: the action that adds most to its economic strength now.

    The world's reward is the change in economic strength (gold plus goods at the global prices),
    so each candidate is scored by that change, with the world's own local-price formula
    (``multiagent.worlds.trade.local_price``):

    - sell a good where its local price is above the global one (the gain is the difference);
    - buy a good where it is below (gold turned into goods worth more);
    - produce the good whose harvest at the nearest town is worth most (stamina and mana);
    - travel toward the place where the goods it holds would sell for the most above the global
      price, the expected gain spread over the turns the journey takes;
    - rest when the stamina to produce or travel is missing and nothing can be traded.

    Trades need the market open and a town within ``trade_radius``; amounts are always the
    maximum (the world caps them by gold, stock and holdings), which is a bin of
    ``FlattenForSB3``'s discretised amount.

    Args:
        config: the trade world (default: the built-in one): goods, towns, verbs and engine
            parameters come from it.

    Example:
        >>> from multiagent import parallel_env
        >>> env = parallel_env("trade", observability=True)
        >>> observations, _ = env.reset(seed=0)
        >>> action = TradeExpert()(observations["Trader_1"])
        >>> env.action_space("Trader_1").contains(action)
        True
    """

    def __init__(self, config: SimulationConfig | None = None) -> None:
        config = config or load_world("trade")
        self.params = TradeParams(**config.engine.params)
        self._engine = dict(config.engine.params)
        self._values = {name: list(d.values or ()) for name, d in config.actions.items()}
        amount = config.actions["amount"]
        self._amount = float(amount.max if amount.max is not None else 10.0)

    def _action(self, verb: str, good: str = GOODS[0], town: str | None = None) -> dict[str, Any]:
        towns = self._values["target_town"]
        return {
            "verb": self._values["verb"].index(verb),
            "good": self._values["good"].index(good),
            "target_town": towns.index(town) if town in towns else 0,
            "amount": np.array([self._amount], dtype=np.float32),
        }

    def __call__(self, observation: dict[str, Any]) -> dict[str, Any]:
        me, world = observation["self"], observation.get("global", {})
        venues = _venues(world)
        prices = {
            good: float(entry["value"][0])
            for good, entry in world.get("prices", {}).items()
            if entry["present"][0]
        }
        location = _point(me["location"])
        held = _floats(me.get("inventory", ()))
        gold = float(me["gold"][0])
        stamina = int(me["stats"]["stamina"])
        options: list[tuple[float, dict[str, Any]]] = [(0.0, self._action("rest"))]
        here = min(venues, key=lambda v: math.dist(location, venues[v]["position"]), default=None)
        near = here is not None and math.dist(location, venues[here]["position"]) <= (
            self.params.trade_radius
        )
        if near and bool(world.get("market_open", [0])[0]):
            for good in prices:
                local = self._local_price(here, venues[here], good, prices)
                stock = venues[here]["resources"].get(good, 0.0)
                sold = min(self._amount, held.get(good, 0.0)) * (local - prices[good])
                bought = min(self._amount, stock, gold / local) * (prices[good] - local)
                options += [(sold, self._action("sell", good, here))]
                options += [(bought, self._action("buy", good, here))]
        if stamina >= self.params.produce_stamina and here is not None:
            options += [self._produce(me, world, venues[here], prices)]
        if stamina >= 1:
            options += [self._journey(location, held, prices, venues)]
        return max(options, key=lambda option: option[0])[1]

    def _local_price(
        self, name: str, venue: dict[str, Any], good: str, prices: dict[str, float]
    ) -> float:
        """The world's own local price, asked of a state that holds just this venue."""
        state = {"towns": {}, "capital": {"name": name, **venue}, "prices": prices}
        return local_price(state, name, good, self._engine)

    def _produce(
        self,
        me: dict[str, Any],
        world: dict[str, Any],
        venue: dict[str, Any],
        prices: dict[str, float],
    ) -> tuple[float, dict[str, Any]]:
        """The most valuable harvest at the nearest town (the world's harvest formula)."""
        p = self.params
        season = SEASONS[int(world.get("season", 0))]
        focus = 0.5 + float(me["stats"]["mana"][0]) / 200.0
        best = (0.0, GOODS[0])
        for good, price in prices.items():
            stock = venue["resources"].get(good, 0.0)
            boost = p.season_yield.get(season, 1.0) if good == "food" else 1.0
            harvest = min(stock, self._amount * stock / (stock + p.half_saturation) * boost * focus)
            best = max(best, (harvest * price, good))
        return best[0], self._action("produce", best[1])

    def _journey(
        self,
        location: tuple[float, float],
        held: dict[str, float],
        prices: dict[str, float],
        venues: dict[str, dict[str, Any]],
    ) -> tuple[float, dict[str, Any]]:
        """Travel to the place where the goods held sell best, the gain per turn of travel."""
        best_gain, best_town = 0.0, None
        for town, venue in venues.items():
            distance = math.dist(location, venue["position"])
            if distance <= self.params.trade_radius:
                continue
            gain = sum(
                amount * max(0.0, self._local_price(town, venue, good, prices) - prices[good])
                for good, amount in held.items()
                if good in prices
            )
            turns = math.ceil((distance - self.params.trade_radius) / self.params.speed)
            if gain / (turns + 1) > best_gain:
                best_gain, best_town = gain / (turns + 1), town
        if best_town is None:
            return 0.0, self._action("rest")
        return best_gain, self._action("move", town=best_town)


def _venues(world: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The towns and (when visible) the capital, in the world's own layout."""
    venues = {
        name: {"position": _point(town["position"]), "resources": _floats(town["resources"])}
        for name, town in world.get("towns", ())
    }
    capital = world.get("capital")
    if capital is not None:
        venues[str(capital["name"])] = {
            "position": _point(capital["position"]),
            "resources": _floats(capital["resources"]),
        }
    return venues


WORLD_EXPERTS: dict[str, Callable[[], Callable[[Any], dict[str, Any]]]] = {
    "forage": ForageExpert,
    "trade": TradeExpert,
}


def world_expert(world: str) -> Callable[[Any], dict[str, Any]]:
    """The scripted expert of a built-in world: ``observation -> action`` for any of its agents.

    Example:
        >>> world_expert("forage")({"self": {"position": (2, 2)}, "global": {"food": (2, 0)}})
        {'move': 3}
    """
    if world not in WORLD_EXPERTS:
        raise ValueError(
            f"no scripted expert for world {world!r}; expected one of {sorted(WORLD_EXPERTS)}"
        )
    return WORLD_EXPERTS[world]()
