"""``evaluate``: play a world's scenarios with the players under test and score them.

A run is a world, its scenarios, the focal players under test and the conditions (observability,
noise). Every focal player, and the baselines that pin the normalised score (``random`` and each
scenario's strong ``baseline``), plays the same episodes: the seeds come from the run's seed, the
scenario and the episode's index (``multiagent.evaluation.schedule``), so the comparisons pair
over seeds. ``OUT`` keeps the configuration, one record per episode as it ends and the episode
logs; a rerun of the same call resumes, a changed configuration is refused unless ``fresh``.
LLM seats are asked concurrently (``llm_concurrency`` threads, the same cap on requests in flight
per endpoint), and with ``replay_cache`` every request/answer is stored so that a rerun answers
from it without calls.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

if TYPE_CHECKING:
    import httpx

from envkit.llm import ChatClient, EndpointGate, ReplayCache
from multiagent.config import SimulationConfig
from multiagent.env import as_config
from multiagent.evaluation.episode import EpisodeOutcome, SeatPlan, play_task
from multiagent.evaluation.leaderboard import leaderboard_html, leaderboard_markdown
from multiagent.evaluation.records import EpisodeRecord, EvalConfig
from multiagent.evaluation.result import EvalResult, score, token_cost
from multiagent.evaluation.schedule import DEFAULT_SET, EpisodeTask, episode_tasks
from multiagent.evaluation.store import EpisodeStore
from multiagent.players import WorldPlayer, check_world_player, make_world_player
from multiagent.players.llm import LLMWorldPlayer
from multiagent.recording import save_episode_log
from multiagent.scenarios import ScenarioConfig, background_spec

__all__ = ["ALL_FOCAL", "EvalRun", "evaluate"]

ALL_FOCAL = "all_focal"  # the scenario of a world that declares none: every seat focal
RESULT_FILE = "result.json"


def evaluate(
    world: str | os.PathLike[str],
    *,
    focal: Sequence[str],
    out: str | os.PathLike[str],
    scenarios: Sequence[str] | None = None,
    background: Mapping[str, str] | None = None,
    background_set: str | None = None,
    episodes: int = 10,
    seed: int = 0,
    observability: Sequence[str] = ("configured",),
    noise_scales: Sequence[float] = (1.0,),
    error_allowance: int = 3,
    baselines: bool = True,
    llm_concurrency: int = 4,
    prices: Mapping[str, tuple[float, float]] | None = None,
    max_cost: float | None = None,
    replay_cache: str | os.PathLike[str] | None = None,
    fresh: bool = False,
    progress: bool = True,
) -> EvalResult:
    """Play and score a run; writes ``OUT/result.json``, ``episodes.jsonl``, ``logs/`` and the
    leaderboards, and returns the ``EvalResult``.

    Args:
        world: a built-in world's name or a YAML file.
        focal: the players under test (specs); each fills the focal seats of every scenario.
        out: the run's folder.
        scenarios: scenario names (default: all the world declares; a world without any has one,
            ``all_focal``, in which every seat is focal).
        background: overrides of the background players: seat or role -> spec, ``"*"`` for all.
        background_set: play against this held-out background set instead of the scenario's.
        episodes: episodes per scenario, focal player and condition.
        seed: the run's seed.
        observability: the conditions: ``configured``, ``full``, ``none``.
        noise_scales: the configured matrix's noise multiplied by each (more conditions).
        error_allowance: refused actions a seat may make per episode before it forfeits.
        baselines: also play ``random`` and each scenario's strong baseline in the focal seats,
            for the normalised score.
        llm_concurrency: LLM seats asked at once, and requests in flight per endpoint.
        prices: model -> (USD per million prompt tokens, per million completion tokens).
        max_cost: stop starting episodes once the LLM cost so far exceeds it (USD).
        replay_cache: a folder for ``envkit.llm.ReplayCache``.
        fresh: discard the episodes of a run with another configuration in ``out``.
        progress: a progress bar on stderr.

    Example:
        >>> import tempfile
        >>> result = evaluate("forage", focal=["noop"], scenarios=["visitor"], episodes=2,
        ...                   out=tempfile.mkdtemp(), progress=False, baselines=False)
        >>> [group.focal for group in result.groups], result.totals.episodes
        (['noop'], 2)
    """
    run = EvalRun.build(
        world,
        focal=focal,
        scenarios=scenarios,
        background=background or {},
        background_set=background_set,
        episodes=episodes,
        seed=seed,
        observability=observability,
        noise_scales=noise_scales,
        error_allowance=error_allowance,
        baselines=baselines,
    )
    return run.play(
        out,
        llm_concurrency=llm_concurrency,
        prices=dict(prices or {}),
        max_cost=max_cost,
        replay_cache=replay_cache,
        fresh=fresh,
        progress=progress,
    )


class EvalRun:
    """A checked run: its ``EvalConfig``, the world, and who fills which seat in each episode."""

    def __init__(
        self,
        config: EvalConfig,
        world: SimulationConfig,
        scenarios: Mapping[str, ScenarioConfig],
        folder: Path | None,
    ) -> None:
        self.config, self.world, self.scenarios, self.folder = config, world, scenarios, folder

    @classmethod
    def build(
        cls,
        world: str | os.PathLike[str],
        *,
        focal: Sequence[str],
        scenarios: Sequence[str] | None,
        background: Mapping[str, str],
        background_set: str | None,
        episodes: int,
        seed: int,
        observability: Sequence[str],
        noise_scales: Sequence[float],
        error_allowance: int,
        baselines: bool,
    ) -> EvalRun:
        """The run, every name and spec checked before anything is played (``ValueError``)."""
        world_config = as_config(os.fspath(world))
        path = Path(world)
        folder = path.resolve().parent if path.exists() else None
        world_hash = world_config.config_hash
        if not world_config.scenarios:  # every seat focal, the world's own episode length
            implicit = {ALL_FOCAL: ScenarioConfig(focal=world_config.agent_names)}
            world_config = world_config.model_copy(update={"scenarios": implicit})
        declared = dict(world_config.scenarios)
        names = list(scenarios or declared)
        for name in names:
            if name not in declared:
                raise ValueError(
                    f"--scenario {name!r}: the world {world_config.simulation.name!r} has no such "
                    f"scenario (it has: {', '.join(declared)})"
                )
        chosen = {name: declared[name] for name in names}
        baseline_specs = ["random"] if baselines else []
        if baselines:
            baseline_specs += sorted(
                {s.baseline for s in chosen.values() if s.baseline} - {"random"}
            )
        config = EvalConfig(
            world=os.fspath(world),
            world_hash=world_hash,
            scenarios=names,
            focal=list(focal),
            baselines=baseline_specs,
            background=dict(background),
            background_set=background_set,
            episodes=episodes,
            seed=seed,
            observability=list(observability),
            noise_scales=list(noise_scales),
            error_allowance=error_allowance,
        )
        run = cls(config, world_config, chosen, folder)
        run._check_players()
        return run

    def seats(self, task: EpisodeTask) -> dict[str, SeatPlan]:
        """Who fills each seat in ``task``: the focal spec, else the background's."""
        scenario = self.scenarios[task.scenario]
        population = scenario.background
        if task.background_set != DEFAULT_SET:
            population = scenario.held_out[task.background_set]
        overrides = self.config.background
        plans = {}
        for agent in self.world.agents:
            if agent.name in scenario.focal:
                plans[agent.name] = SeatPlan(task.focal, focal=True)
                continue
            spec = (
                background_spec(overrides, agent.name, agent.type)
                or overrides.get("*")
                or background_spec(population, agent.name, agent.type)
            )
            assert spec is not None  # load_config checked every background seat has a player
            plans[agent.name] = SeatPlan(spec, focal=False)
        return plans

    def _check_players(self) -> None:
        config = self.config
        for name, scenario in self.scenarios.items():
            if config.background_set is not None and config.background_set not in scenario.held_out:
                sets = ", ".join(scenario.held_out) or "none"
                raise ValueError(
                    f"--background-set {config.background_set!r}: scenario {name!r} has no such "
                    f"held-out set (it has: {sets})"
                )
        known = {agent.name for agent in self.world.agents}
        known |= {agent.type for agent in self.world.agents if agent.type} | {"*"}
        for key in config.background:
            if key not in known:
                raise ValueError(
                    f"--background {key}=...: {key!r} is neither a seat, a role nor '*'"
                )
        specs = {*config.focal, *config.baselines, *config.background.values()}
        for scenario in self.scenarios.values():
            specs |= set(scenario.background.values())
            for population in scenario.held_out.values():
                specs |= set(population.values())
        for spec in sorted(specs):
            check_world_player(spec)

    def play(
        self,
        out: str | os.PathLike[str],
        *,
        llm_concurrency: int,
        prices: dict[str, tuple[float, float]],
        max_cost: float | None,
        replay_cache: str | os.PathLike[str] | None,
        fresh: bool,
        progress: bool,
    ) -> EvalResult:
        """Play the episodes missing from ``out`` and write the result files."""
        if llm_concurrency < 1:
            raise ValueError(f"llm_concurrency must be at least 1, got {llm_concurrency}")
        store = EpisodeStore(out, self.config, fresh=fresh)
        tasks = episode_tasks(self.config, self.world)
        pending = [task for task in tasks if task.key not in store.done]
        http = _lazy_http()
        make_player = _player_factory(
            self.folder,
            EndpointGate(llm_concurrency),
            None if replay_cache is None else ReplayCache(replay_cache),
            http,
        )
        bar = tqdm(total=len(tasks), initial=len(tasks) - len(pending), desc="eval episodes",
                   unit="episode", file=sys.stderr, disable=not progress,
                   dynamic_ncols=True)  # fmt: skip
        spent = sum(_spent(record, prices) for record in store.records)
        with ThreadPoolExecutor(llm_concurrency, thread_name_prefix="llm-seat") as pool, bar:
            for task in pending:
                if max_cost is not None and spent > max_cost:
                    bar.write(f"stopped: the LLM cost passed --max-cost {max_cost:g} USD")
                    break
                outcome = play_task(
                    task,
                    self.world,
                    self.seats(task),
                    make_player,
                    error_allowance=self.config.error_allowance,
                    pool=pool,
                )
                record = _with_log(outcome, store.logs)
                store.append(record)
                spent += _spent(record, prices)
                bar.update()
        http.close()
        result = score(self.config, store.records, world=self.world, prices=prices)
        _write_results(Path(out), result)
        return result


class _lazy_http:
    """One ``httpx.Client`` for every LLM player of a run, opened by the first that needs it."""

    def __init__(self) -> None:
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def get(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                import httpx

                self._client = httpx.Client()
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _player_factory(
    folder: Path | None, gate: EndpointGate, cache: ReplayCache | None, http: _lazy_http
) -> Callable[[str, SimulationConfig], WorldPlayer]:
    """``make_world_player`` whose LLM players share the run's endpoint gate, replay cache and
    connections."""

    def make(spec: str, config: SimulationConfig) -> WorldPlayer:
        player = make_world_player(spec, config, folder=folder)
        if isinstance(player, LLMWorldPlayer):
            settings = player.agent.settings
            player.agent.client.close()
            player.agent.client = ChatClient(settings, gate=gate, cache=cache, http=http.get())
        return player

    return make


def _with_log(outcome: EpisodeOutcome, logs: Path) -> EpisodeRecord:
    """The record, its episode log written (gzipped JSON, named by the episode's key)."""
    name = hashlib.sha256(outcome.record.key.encode()).hexdigest()[:20] + ".json.gz"
    save_episode_log(outcome.log, logs / name)
    return outcome.record.model_copy(update={"log": f"{logs.name}/{name}"})


def _spent(record: EpisodeRecord, prices: Mapping[str, tuple[float, float]]) -> float:
    """The LLM cost of an episode in USD, counting the seats whose tokens and price are known."""
    costs = (token_cost(seat.player, seat.tokens_in, seat.tokens_out, prices)
             for seat in record.seats)  # fmt: skip
    return sum(cost for cost in costs if isinstance(cost, float))


def _write_results(out: Path, result: EvalResult) -> None:
    files = {
        RESULT_FILE: result.model_dump_json(indent=2) + "\n",
        "leaderboard.md": leaderboard_markdown(result),
        "leaderboard.html": leaderboard_html(result),
    }
    for name, text in files.items():
        temporary = out / f".{name}.tmp"
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(out / name)
