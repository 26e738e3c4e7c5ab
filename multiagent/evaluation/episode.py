"""One evaluation episode: players in seats, their decisions, what each seat's episode cost.

Each turn every live seat gets a ``SeatTurn`` (its observation under the episode's condition,
the same view as an ``ObservationEnvelope`` with the messages it heard, and why its last action
was refused, if it was). Players that call an endpoint are asked at once, on a thread pool whose
size is the run's LLM concurrency (``envkit.llm.EndpointGate`` caps the requests in flight per
endpoint); the others act inline. A seat never holds the others up:

- its endpoint fails after the client's retries: the seat plays the world's fallback action
  (``multiagent.players.fallback_action``) that turn, and its status is ``endpoint_failure``;
  a failure because the prompt outgrew the model (``context_limit``) stops it for the episode;
- the world refuses more of its actions than the error allowance (TextArena's rule): it forfeits
  and plays the fallback action for the rest of the episode.

Those seats keep their place in the world (their stock, their position): what the scores count is
what happened, not what would have.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from envkit.llm import ChatError
from multiagent.config import SimulationConfig
from multiagent.dto import Message
from multiagent.env import WorldEnv
from multiagent.evaluation.conditions import condition_config
from multiagent.evaluation.records import EpisodeRecord, SeatRecord
from multiagent.evaluation.schedule import EpisodeTask
from multiagent.leaks import find_leaks
from multiagent.play import heard_messages, seat_seed, seat_turns
from multiagent.players import WorldPlayer, fallback_action
from multiagent.recording import EpisodeLog
from multiagent.wrappers import ObservabilityWrapper, RecordEpisode

__all__ = ["EpisodeOutcome", "SeatPlan", "play_task"]

ENV_REFUSED = "env_refused"  # reason code of an action the world refused


@dataclass(frozen=True)
class SeatPlan:
    """Who fills a seat: the spec as written and whether it is a focal seat."""

    spec: str
    focal: bool


@dataclass(frozen=True)
class EpisodeOutcome:
    """An episode's record, its log, and each LLM decision (turn, seat, ``ReasoningStep``)."""

    record: EpisodeRecord
    log: EpisodeLog
    decisions: list[tuple[int, str, Any]]


@dataclass
class _Seat:
    """One seat's tally while the episode runs."""

    name: str
    role: str | None
    plan: SeatPlan
    player: WorldPlayer
    reward: float = 0.0
    stopped: str | None = None  # forfeit, context_limit: the seat plays the fallback action
    failed: bool = False  # an endpoint failure happened at least once
    decisions: int = 0
    invalid: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    fallbacks: int = 0
    requests: int = 0
    corrections: int = 0
    retries: int = 0
    cached: int = 0
    tokens: list[tuple[int | None, int | None]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    failure: str = ""
    feedback: str | None = None
    steps_seen: int = 0  # the player's LLM decisions already counted


def play_task(
    task: EpisodeTask,
    world: SimulationConfig,
    seats: Mapping[str, SeatPlan],
    make_player: Callable[[str, SimulationConfig], WorldPlayer],
    *,
    error_allowance: int,
    pool: Executor | None = None,
) -> EpisodeOutcome:
    """Play ``task`` with ``seats`` filled by ``make_player(spec, config)``; players are closed
    when the episode ends."""
    focal = [seat for seat, plan in seats.items() if plan.focal]
    config = condition_config(world, task.observability, task.noise_scale, focal=focal)
    roles = {agent.name: agent.type for agent in config.agents}
    players = {name: make_player(plan.spec, config) for name, plan in seats.items()}
    try:
        return _Episode(task, config, seats, players, roles, error_allowance, pool).play()
    finally:
        for player in players.values():
            player.close()


class _Episode:
    def __init__(
        self,
        task: EpisodeTask,
        config: SimulationConfig,
        plans: Mapping[str, SeatPlan],
        players: Mapping[str, WorldPlayer],
        roles: Mapping[str, str | None],
        error_allowance: int,
        pool: Executor | None,
    ) -> None:
        self.task, self.config, self.pool = task, config, pool
        self.error_allowance = error_allowance
        self.world_env = WorldEnv(config)
        self.observed = ObservabilityWrapper(self.world_env)
        self.env = RecordEpisode(self.observed)
        self.fallback = fallback_action(config)
        self.seats = {
            name: _Seat(name, roles[name], plans[name], players[name])
            for name in config.agent_names
        }
        self.decisions: list[tuple[int, str, Any]] = []

    def play(self) -> EpisodeOutcome:
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        observations, _ = self.env.reset(seed=self.task.seed)
        for index, seat in enumerate(self.seats.values()):
            seat.player.reset(
                seat_seed(self.task.seed, index), scope=f"{self.task.key}/{seat.name}"
            )
        heard: dict[str, list[Message]] = {}
        terminated = collapsed = False
        turns = 0
        while self.env.agents and turns < self.task.length:
            live = list(self.env.agents)
            actions = self._actions(live, observations, heard)
            observations, rewards, terminations, _, infos = self.env.step(actions)
            turns += 1
            for name in live:
                self._tally(self.seats[name], rewards[name], infos[name])
            heard = heard_messages(infos)
            terminated = any(terminations.values())
            collapsed = collapsed or any(info.get("collapsed", False) for info in infos.values())
        end = "completed" if terminated and not self.env.agents else "truncated"
        log = self._annotated(self.env.episode_log)
        self.env.close()
        leaks = Counter(leak.sender for leak in find_leaks(self.config, log.turns))
        record = EpisodeRecord(
            key=self.task.key,
            condition=self.task.condition,
            scenario=self.task.scenario,
            focal=self.task.focal,
            background_set=self.task.background_set,
            episode=self.task.episode,
            seed=self.task.seed,
            length=self.task.length,
            turns=turns,
            end=end,
            collapsed=collapsed,
            seats=[self._seat_record(seat, end, leaks[seat.name]) for seat in self.seats.values()],
            cpu_seconds=time.process_time() - start_cpu,
            wall_seconds=time.perf_counter() - start_wall,
        )
        return EpisodeOutcome(record, log, self.decisions)

    def _annotated(self, log: EpisodeLog | None) -> EpisodeLog:
        """The log with the seats' players and each turn's LLM decisions."""
        assert log is not None  # reset started it
        by_turn: dict[int, dict[str, Any]] = {}
        for turn, seat, step in self.decisions:
            by_turn.setdefault(turn, {})[seat] = step
        turns = [record.model_copy(update={"decisions": by_turn.get(record.turn, {})})
                 for record in log.turns]  # fmt: skip
        players = {name: seat.plan.spec for name, seat in self.seats.items()}
        return log.model_copy(update={"turns": turns, "players": players})

    # -- a turn -----------------------------------------------------------------------------

    def _actions(
        self,
        live: list[str],
        observations: Mapping[str, Any],
        heard: Mapping[str, list[Message]],
    ) -> dict[str, Any]:
        feedback = {name: seat.feedback for name, seat in self.seats.items()}
        asking = [name for name in live if self.seats[name].stopped is None]
        turns = seat_turns(self.world_env, self.observed.plan, asking, observations, feedback,
                           heard)  # fmt: skip
        turn = self.world_env.world.turn if self.world_env.world is not None else 0
        actions: dict[str, Any] = {}
        asked: dict[str, Future[dict[str, Any]]] = {}
        for name in live:
            seat = self.seats[name]
            if seat.stopped is not None:
                seat.fallbacks += 1
                actions[name] = self.fallback
                continue
            seat.decisions += 1
            if seat.player.calls_endpoint and self.pool is not None:
                asked[name] = self.pool.submit(seat.player.act, turns[name])
            else:
                actions[name] = self._decided(seat, turn, partial(seat.player.act, turns[name]))
        for name, future in asked.items():
            actions[name] = self._decided(self.seats[name], turn, future.result)
        return {name: actions[name] for name in live}

    def _decided(self, seat: _Seat, turn: int, decide: Callable[[], dict[str, Any]]) -> Any:
        """The seat's action, or the fallback when its endpoint failed; its LLM costs noted."""
        try:
            action: Any = decide()
        except ChatError as error:
            seat.failed = True
            seat.failure = str(error)
            if getattr(error, "reason", None) == "context_limit":
                seat.stopped = "context_limit"
            seat.fallbacks += 1
            action = self.fallback
        finally:
            self._note_llm(seat, turn)
        return action

    def _note_llm(self, seat: _Seat, turn: int) -> None:
        """Count the LLM decisions the player made since the last call (none for others)."""
        steps = getattr(seat.player, "decisions", ())
        for step in steps[seat.steps_seen :]:
            self.decisions.append((turn, seat.name, step))
            seat.requests += step.requests
            seat.corrections += max(0, step.requests - 1)
            seat.retries += step.endpoint_retries
            seat.cached += step.requests if step.from_cache else 0
            seat.tokens.append((step.tokens_in, step.tokens_out))
            seat.latencies.append(step.latency_seconds)
            for kind in step.error_kinds:
                seat.reasons[kind] += 1
        seat.steps_seen = len(steps)

    def _tally(self, seat: _Seat, reward: float, info: Mapping[str, Any]) -> None:
        seat.reward += reward
        refused = info.get("action_error")
        seat.feedback = refused
        if refused is None or seat.stopped is not None:
            return
        seat.invalid += 1
        seat.reasons[ENV_REFUSED] += 1
        if seat.invalid > self.error_allowance:
            seat.stopped = "forfeit"
            seat.failure = f"{seat.invalid} refused actions (allowance {self.error_allowance})"

    def _seat_record(self, seat: _Seat, end: str, leaks: int) -> SeatRecord:
        status = seat.stopped or ("endpoint_failure" if seat.failed else end)
        tokens_in, tokens_out = _token_sums(seat.tokens)
        return SeatRecord(
            seat=seat.name,
            role=seat.role,
            focal=seat.plan.focal,
            player=seat.plan.spec,
            reward=seat.reward,
            status=status,
            decisions=seat.decisions,
            invalid_actions=seat.invalid,
            invalid_reasons=dict(sorted(seat.reasons.items())),
            fallback_actions=seat.fallbacks,
            requests=seat.requests,
            self_corrections=seat.corrections,
            endpoint_retries=seat.retries,
            cached_requests=seat.cached,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latencies=seat.latencies,
            leaks=leaks,
            failure=seat.failure,
        )


def _token_sums(tokens: list[tuple[int | None, int | None]]) -> tuple[int | None, int | None]:
    """Summed prompt and completion tokens; None when there were none or any was unreported."""
    if not tokens or any(t_in is None or t_out is None for t_in, t_out in tokens):
        return None, None
    return sum(t for t, _ in tokens if t is not None), sum(t for _, t in tokens if t is not None)
