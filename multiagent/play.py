"""``play_episode``: one episode of a world with a player in every seat.

Each turn every live seat's player gets a ``SeatTurn`` (its observation under the chosen
observability, its ``ObservationEnvelope``, its action space and why its previous action was
refused, and the messages it heard) and returns an action; the world steps on all of them at
once. Players that call an
endpoint (``calls_endpoint``) are asked concurrently, one thread each; the others in seat order.
A refused action (``infos[agent]["action_error"]``) is counted and becomes the seat's feedback
next turn.

Seeds: the env is reset with ``seed``; the player of the seat at index i (in the config's agent
order) with ``SeedSequence([seed, i])``'s first 63-bit word, so a seat's randomness depends on
the episode's seed and its position only (None: unseeded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from envkit.dto import FrozenDTO
from multiagent.config import SimulationConfig
from multiagent.dto import Message
from multiagent.env import WorldEnv, as_config
from multiagent.observability import ObservabilityPlan, observe_all
from multiagent.players.base import SeatTurn, WorldPlayer
from multiagent.wrappers import ObservabilityWrapper, observation_envelope

__all__ = [
    "EpisodeOutcome",
    "Observability",
    "heard_messages",
    "play_episode",
    "seat_seed",
    "seat_turns",
]

Observability = Literal["configured", "full"]


class EpisodeOutcome(FrozenDTO):
    """What one episode came to, per seat.

    Example:
        >>> from multiagent.players import make_world_player
        >>> from multiagent.worlds import load_world
        >>> world = load_world("forage")
        >>> players = {seat: make_world_player("random", world) for seat in world.agent_names}
        >>> outcome = play_episode(world, players, seed=1, max_turns=5)
        >>> outcome.length, outcome.truncated, sorted(outcome.returns) == world.agent_names
        (5, True, True)
    """

    seed: int | None = Field(description="The episode's seed (None: unseeded)")
    length: int = Field(ge=0, description="Turns played")
    truncated: bool = Field(
        description="Whether the episode was cut short (max_turns) rather than every seat done"
    )
    returns: dict[str, float] = Field(description="Each seat's summed reward")
    invalid_actions: dict[str, int] = Field(
        description="Each seat's actions the env refused (infos[agent]['action_error'])"
    )
    players: dict[str, str] = Field(description="Each seat's player, by name")


def seat_seed(seed: int | None, seat_index: int) -> int | None:
    """The seed of the player at ``seat_index`` in an episode seeded ``seed``.

    Example:
        >>> seat_seed(0, 0) == seat_seed(0, 0) != seat_seed(0, 1)
        True
    """
    if seed is None:
        return None
    state = np.random.SeedSequence([seed, seat_index]).generate_state(1, np.uint64)
    return int(state[0] >> np.uint64(1))  # 63 bits: a seed any numpy or Python API takes


def play_episode(
    env_config: SimulationConfig | str | Path | Mapping[str, Any],
    players: Mapping[str, WorldPlayer],
    *,
    seed: int | None,
    max_turns: int | None = None,
    observability: Observability = "configured",
    scope: str = "",
) -> EpisodeOutcome:
    """Play one episode with ``players[seat]`` in every seat (see the module doc).

    Args:
        env_config: the world (a config, a YAML path, a dict or a built-in world's name).
        players: one player per seat, every seat of the world and no other.
        seed: the episode's seed.
        max_turns: stop after this many turns (default: the world's own ``max_turns``).
        observability: "configured" (the world's matrix and noise) or "full" (the ground truth).
        scope: a label for the episode; each player is reset with ``scope/SEAT``.

    Raises ``ValueError`` naming the seats when ``players`` does not match the world's; whatever
    a player raises (an endpoint failure) passes through.
    """
    config = as_config(env_config)
    _check_seats(config, players)
    world = WorldEnv(config)
    env = ObservabilityWrapper(world) if observability == "configured" else world
    plan = env.plan if isinstance(env, ObservabilityWrapper) else world.plan
    observations, _ = env.reset(seed=seed)
    for index, agent in enumerate(config.agent_names):
        players[agent].reset(seat_seed(seed, index), scope=f"{scope}/{agent}" if scope else agent)
    returns = dict.fromkeys(config.agent_names, 0.0)
    invalid = dict.fromkeys(config.agent_names, 0)
    feedback: dict[str, str | None] = {}
    heard: dict[str, list[Message]] = {}
    limit = config.simulation.max_turns if max_turns is None else max_turns
    length, truncated = 0, False
    with ThreadPoolExecutor(max_workers=len(players)) as pool:
        while env.agents and length < limit:
            turns = seat_turns(world, plan, list(env.agents), observations, feedback, heard)
            actions = _actions(players, turns, pool)
            observations, rewards, _, truncations, infos = env.step(actions)
            length += 1
            for agent, reward in rewards.items():
                returns[agent] += float(reward)
                error = infos.get(agent, {}).get("action_error")
                feedback[agent] = error
                invalid[agent] += error is not None
            heard = heard_messages(infos)
            truncated = truncated or any(truncations.values())
    return EpisodeOutcome(
        seed=seed,
        length=length,
        truncated=truncated or bool(env.agents),
        returns=returns,
        invalid_actions=invalid,
        players={agent: players[agent].name for agent in config.agent_names},
    )


def _check_seats(config: SimulationConfig, players: Mapping[str, WorldPlayer]) -> None:
    missing = [agent for agent in config.agent_names if agent not in players]
    unknown = sorted(set(players) - set(config.agent_names))
    if missing or unknown:
        raise ValueError(
            f"players: every seat needs one player (missing: {missing or 'none'}; not seats of "
            f"{config.simulation.name!r}: {unknown or 'none'}); the seats are {config.agent_names}"
        )


def heard_messages(infos: Mapping[str, Mapping[str, Any]]) -> dict[str, list[Message]]:
    """Each agent's messages delivered with a step (``infos[agent]["messages"]``).

    Example:
        >>> said = {"turn": 0, "sender": "A", "channel": "talk", "text": "hi"}
        >>> heard_messages({"B": {"messages": [said]}, "C": {}})["B"][0].text
        'hi'
    """
    return {
        agent: [Message(**m) for m in info.get("messages", ())] for agent, info in infos.items()
    }


def seat_turns(
    world: WorldEnv,
    plan: ObservabilityPlan,
    agents: list[str],
    observations: Mapping[str, Any],
    feedback: Mapping[str, str | None],
    heard: Mapping[str, Sequence[Message]],
) -> dict[str, SeatTurn]:
    """The ``SeatTurn`` of each of ``agents``: its envelope built from the same plan and seed as
    its observation, with the messages it heard (``heard_messages`` of the last step's infos)
    and why its last action was refused."""
    state = world.world
    assert state is not None  # reset() has run
    views = observe_all(state, plan, seed=world.seed_value, observers=agents)
    return {
        agent: SeatTurn(
            agent=agent,
            turn=state.turn,
            observation=observations[agent],
            envelope=observation_envelope(agent, views[agent], plan, heard.get(agent, ())),
            action_space=world.action_space(agent),
            feedback=feedback.get(agent),
        )
        for agent in agents
    }


def _actions(
    players: Mapping[str, WorldPlayer], turns: Mapping[str, SeatTurn], pool: ThreadPoolExecutor
) -> dict[str, Any]:
    """Each seat's action: endpoint players concurrently, the others in seat order."""
    waiting = {
        agent: pool.submit(players[agent].act, turn)
        for agent, turn in turns.items()
        if players[agent].calls_endpoint
    }
    actions = {
        agent: players[agent].act(turn)
        for agent, turn in turns.items()
        if not players[agent].calls_endpoint
    }
    actions.update({agent: future.result() for agent, future in waiting.items()})
    return {agent: actions[agent] for agent in turns}
