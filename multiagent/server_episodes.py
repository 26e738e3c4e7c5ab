"""World episodes that several clients play together, one seat per session.

- ``SharedEpisode``: one world episode: its client seats (each with the SHA-256 of its seat
  token, never the token), the players the server makes for the other seats, and the turn: it
  advances once every live client seat has sent its action (served seats act at once).
- ``SeatResult``: what one seat is told after a turn (its envelope, reward, done).
- ``EpisodeTable``: the episodes by id, shared by every session of a server; an episode is
  dropped when no session holds any of its seats.
- ``MissingSeatTokenError`` (401) and ``SeatForbiddenError`` (403): a join without a token,
  with one that is not that seat's, or for a seat the server plays (code UNAUTHORIZED, as the
  chess game service answers).

Rules, as the chess game service's: nobody acts for a seat they do not hold. A session holds
the seat it created the episode with, or one it joined with that seat's token; a later join
with the token takes the seat over (a client that lost its connection comes back), and the
session it left is refused (409 "seat_taken"). Each seat acts once per turn (409
"already_acted"). A session waits for the turn to advance up to ``timeout`` seconds; past it its
action is withdrawn and it is refused (409 "turn_timeout", naming the seats not yet in), so it
may send the turn's action again. Every refusal leaves the episode as it was.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envkit.server.errors import (
    EpisodeStateError,
    ErrorCode,
    ServiceError,
    UnknownSessionError,
)
from envkit.server.secret_tokens import new_token, same_secret, token_digest
from multiagent.config import SimulationConfig
from multiagent.dto import Message, ObservationEnvelope
from multiagent.env import WorldEnv
from multiagent.play import heard_messages, seat_seed, seat_turns
from multiagent.players import SeatTurn, WorldPlayer, fallback_action, make_world_player
from multiagent.wrappers import ObservabilityWrapper

__all__ = [
    "EpisodeTable",
    "MissingSeatTokenError",
    "SeatForbiddenError",
    "SeatResult",
    "SharedEpisode",
]

logger = logging.getLogger(__name__)


class MissingSeatTokenError(ServiceError):
    """A join that came without the seat's token (``seat_token``)."""

    code = ErrorCode.UNAUTHORIZED
    status = 401


class SeatForbiddenError(ServiceError):
    """A join whose token is not that seat's (another seat's, or nobody's), or a join of a seat
    the server plays."""

    code = ErrorCode.UNAUTHORIZED
    status = 403


@dataclass(frozen=True)
class SeatResult:
    """One seat's view after a turn (or at a reset or join, with no reward)."""

    envelope: ObservationEnvelope
    turn: int
    reward: float | None
    done: bool
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class _Ticket:
    """A seat's action for the turn, and the seat's result once the turn has advanced."""

    action: dict[str, Any]
    result: SeatResult | None = None


class SharedEpisode:
    """One world episode, its client seats held by sessions, the other seats by served players.

    Args:
        config: the world.
        seed: the episode's seed (the env's; the served player of the seat at index i gets
            ``multiagent.play.seat_seed(seed, i)``, as ``play_episode`` seeds its players).
        client_seats: the seats clients play (the creator's first).
        players: a served spec (``random``, ``noop``, a registered kind) per other seat; a seat
            in neither gets ``random``.

    ``open()`` makes one and returns a token per client seat, which only it ever shows.

    Example:
        >>> from multiagent.worlds import load_world
        >>> episode, tokens = SharedEpisode.open(
        ...     load_world("forage"), 0, ["Forager_1", "Forager_2"], {"Forager_3": "noop"}
        ... )
        >>> sorted(tokens), episode.players
        (['Forager_1', 'Forager_2'], {'Forager_3': 'noop'})
        >>> creator, joiner = object(), object()
        >>> episode.hold("Forager_1", tokens["Forager_1"], creator)
        >>> episode.hold("Forager_2", tokens["Forager_2"], joiner)
        >>> episode.waiting_for()
        ['Forager_1', 'Forager_2']
        >>> episode.act("Forager_1", creator, {"move": "up"}, timeout=0)
        Traceback (most recent call last):
        ...
        envkit.server.errors.EpisodeStateError: turn 0 did not advance within 0 s: waiting for \
Forager_2; Forager_1's action was withdrawn, send it again to wait more
        >>> solo, _ = SharedEpisode.open(load_world("forage"), 0, ["Forager_1"], {})
        >>> solo.claim("Forager_1", creator)
        >>> result = solo.act("Forager_1", creator, {"move": "up"}, timeout=0)  # nobody to wait for
        >>> result.turn, result.reward, result.envelope.observer
        (1, -0.01, 'Forager_1')
    """

    def __init__(
        self,
        config: SimulationConfig,
        seed: int,
        client_seats: list[str],
        players: Mapping[str, str],
    ) -> None:
        self.id = str(uuid.uuid4())
        self.config = config
        self.client_seats = list(client_seats)
        agents = config.agent_names
        served = [agent for agent in agents if agent not in client_seats]
        self.players = {seat: players.get(seat, "random") for seat in served}
        self._served: dict[str, WorldPlayer] = {
            seat: make_world_player(spec, config, served=True)
            for seat, spec in self.players.items()
        }
        self.env = ObservabilityWrapper(WorldEnv(config))
        self.world: WorldEnv = self.env.world_env
        self._observations, _ = self.env.reset(seed=seed)
        for index, agent in enumerate(agents):
            if agent in self._served:
                self._served[agent].reset(seat_seed(seed, index), scope=f"{self.id}/{agent}")
        self._digests: dict[str, str] = {}
        self._holders: dict[str, object] = {}
        self._pending: dict[str, _Ticket] = {}
        self._feedback: dict[str, str | None] = {}
        self._heard: dict[str, list[Message]] = {}  # messages delivered with the last step
        self._condition = threading.Condition()

    @classmethod
    def open(
        cls,
        config: SimulationConfig,
        seed: int,
        client_seats: list[str],
        players: Mapping[str, str],
    ) -> tuple[SharedEpisode, dict[str, str]]:
        """A new episode and a fresh token per client seat (kept only as their digests)."""
        episode = cls(config, seed, client_seats, players)
        tokens = {seat: new_token() for seat in client_seats}
        episode._digests = {seat: token_digest(token) for seat, token in tokens.items()}
        return episode, tokens

    @property
    def turn(self) -> int:
        state = self.world.world
        assert state is not None  # reset in __init__
        return state.turn

    def claim(self, seat: str, holder: object) -> None:
        """The creating session takes its own seat (it needs no token)."""
        with self._condition:
            self._holders[seat] = holder

    def hold(self, seat: str, token: str | None, holder: object) -> None:
        """``holder`` takes ``seat`` if ``token`` is that seat's (see the module doc); the
        checks run in the chess service's order: no token, a token of no seat here, a seat the
        server plays, another seat's token."""
        if not token:
            raise MissingSeatTokenError(
                f"joining {seat} of episode {self.id} needs its seat_token, which the reply "
                "that created the episode carried",
                reason="missing_seat_token",
            )
        given = token_digest(token)
        matches = [s for s, kept in self._digests.items() if same_secret(given, kept)]
        if not matches:
            raise SeatForbiddenError(
                f"this seat_token is not one of episode {self.id}'s", reason="wrong_seat_token"
            )
        if seat in self.players:
            raise SeatForbiddenError(
                f"{seat} is played by the server's {self.players[seat]} player in episode "
                f"{self.id}: no client acts for it",
                reason="server_seat",
            )
        if matches != [seat]:
            raise SeatForbiddenError(
                f"this seat_token is {matches[0]}'s in episode {self.id}, not {seat}'s",
                reason="wrong_seat_token",
            )
        with self._condition:
            self._holders[seat] = holder

    def release(self, holder: object, keep: str | None = None) -> bool:
        """``holder`` leaves its seats but ``keep``; whether any session still holds a seat."""
        with self._condition:
            for seat in [s for s, h in self._holders.items() if h is holder and s != keep]:
                del self._holders[seat]
            return bool(self._holders)

    def done(self, seat: str) -> bool:
        return seat not in self.env.agents

    def waiting_for(self) -> list[str]:
        """The live client seats whose action for this turn is not in yet."""
        with self._condition:
            live = self.env.agents
            return [s for s in self.client_seats if s in live and s not in self._pending]

    def view(self, seat: str) -> SeatResult:
        """``seat``'s view now, with no reward (a reset's or a join's reply)."""
        with self._condition:
            return SeatResult(self._envelopes([seat])[seat], self.turn, None, self.done(seat))

    def act(
        self, seat: str, holder: object, action: dict[str, Any], timeout: float | None
    ) -> SeatResult:
        """Send ``seat``'s validated ``action`` for this turn; its result once the turn has
        advanced (at once when every other live client seat's action is in)."""
        with self._condition:
            self._check_acting(seat, holder)
            ticket = _Ticket(action)
            self._pending[seat] = ticket
            if not self.waiting_for():
                self._advance()
            elif not self._condition.wait_for(lambda: ticket.result is not None, timeout):
                missing = ", ".join(self.waiting_for())
                del self._pending[seat]
                raise EpisodeStateError(
                    f"turn {self.turn} did not advance within {timeout:g} s: waiting for "
                    f"{missing}; {seat}'s action was withdrawn, send it again to wait more",
                    reason="turn_timeout",
                )
            assert ticket.result is not None
            return ticket.result

    def _check_acting(self, seat: str, holder: object) -> None:
        if self._holders.get(seat) is not holder:
            raise EpisodeStateError(
                f"{seat} of episode {self.id} was taken over by a client that joined it with "
                "its seat token; this session no longer acts for it",
                reason="seat_taken",
            )
        if self.done(seat):
            raise EpisodeStateError(
                f"{seat}'s episode is over; reset to play again", reason="episode_over"
            )
        if seat in self._pending:
            others = ", ".join(self.waiting_for())
            raise EpisodeStateError(
                f"{seat} has already acted on turn {self.turn}; the turn advances when "
                f"{others} have acted",
                reason="already_acted",
            )

    def _advance(self) -> None:
        """Step the world on the client seats' actions and the served players' (the caller
        holds the condition), hand each client seat its result and wake the waiting ones."""
        actions = {seat: ticket.action for seat, ticket in self._pending.items()}
        actions.update(self._served_actions())
        self._observations, rewards, terminations, truncations, infos = self.env.step(actions)
        for seat in self._served:
            self._feedback[seat] = infos.get(seat, {}).get("action_error")
        self._heard = heard_messages(infos)
        envelopes = self._envelopes(list(self._pending))
        for seat, ticket in self._pending.items():
            ticket.result = SeatResult(
                envelopes[seat],
                self.turn,
                float(rewards[seat]),
                bool(terminations[seat] or truncations[seat]),
                bool(truncations[seat]),
                dict(infos[seat]),
            )
        self._pending = {}
        self._condition.notify_all()

    def _served_actions(self) -> dict[str, Any]:
        """The live served seats' actions; a player that fails gets the world's fallback
        action, so one failing player never stops the episode (the error is logged)."""
        live = [seat for seat in self._served if seat in self.env.agents]
        turns = self._seat_turns(live)
        actions: dict[str, Any] = {}
        for seat in live:
            try:
                actions[seat] = self._served[seat].act(turns[seat])
            except Exception:
                logger.exception("the served %s player of %s failed", self.players[seat], seat)
                actions[seat] = fallback_action(self.config)
        return actions

    def _seat_turns(self, seats: list[str]) -> dict[str, SeatTurn]:
        return seat_turns(self.world, self.env.plan, seats, self._observations, self._feedback,
                          self._heard)  # fmt: skip

    def _envelopes(self, seats: list[str]) -> dict[str, ObservationEnvelope]:
        return {seat: turn.envelope for seat, turn in self._seat_turns(seats).items()}


class EpisodeTable:
    """The shared episodes of one server, by id; thread-safe.

    Example:
        >>> from multiagent.worlds import load_world
        >>> table, session = EpisodeTable(), object()
        >>> episode, _ = SharedEpisode.open(load_world("forage"), 0, ["Forager_1"], {})
        >>> table.add(episode); episode.claim("Forager_1", session)
        >>> table.get(episode.id) is episode, len(table)
        (True, 1)
        >>> table.leave(episode, session); len(table)
        0
    """

    def __init__(self) -> None:
        self._episodes: dict[str, SharedEpisode] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._episodes)

    def add(self, episode: SharedEpisode) -> None:
        with self._lock:
            self._episodes[episode.id] = episode

    def get(self, episode_id: str) -> SharedEpisode:
        """The episode, or ``UnknownSessionError`` (404, reason "unknown_episode")."""
        with self._lock:
            episode = self._episodes.get(episode_id)
        if episode is None:
            raise UnknownSessionError(
                f"no episode {episode_id} to join: never created, or every client left it",
                reason="unknown_episode",
            )
        return episode

    def leave(self, episode: SharedEpisode, holder: object, keep: str | None = None) -> None:
        """``holder`` leaves its seats of ``episode`` but ``keep``; the episode is dropped once
        nobody holds a seat of it."""
        with self._lock:
            if not episode.release(holder, keep):
                self._episodes.pop(episode.id, None)
