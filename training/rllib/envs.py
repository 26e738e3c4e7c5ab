"""The project's envs in the shapes RLlib takes, and their registration with RLlib.

- ``ENV_NAMES``: what ``train_rllib`` and ``python -m training rllib --env`` accept:
  ``chess_env/Chess-v0`` (one agent against an opponent, masked), ``chess:selfplay`` (the
  two-player AEC chess env through RLlib's ``PettingZooEnv``, masked) and ``world:forage`` /
  ``world:trade`` (every agent of a world learns, through ``ParallelPettingZooEnv``).
- ``RLlibChessObservation``: a Gymnasium wrapper giving ``ChessEnv``'s Dict observation the keys
  RLlib's action-masking RLModule reads (``observations``, ``action_mask``).
- ``RLlibChessAEC``: the same for the PettingZoo AEC chess env, counting masked-out actions.
- ``FlatWorld``: a world's nested Dict/Text observations as one float32 ``Box`` per agent and its
  Dict actions as ``Discrete`` / ``MultiDiscrete`` / ``Box`` (RLlib's default encoders take a 1-D
  Box; Text and Sequence spaces they cannot take at all).
- ``make_raw_env`` / ``make_env(name, env_config)``: the env before / after RLlib's PettingZoo
  adapters; ``check_env_config`` builds it once to fail early; ``agent_ids(name)``;
  ``register_envs()`` registers every name with RLlib (``ray.tune.register_env``).

Nothing here imports ray at module level: the wrappers are plain Gymnasium / PettingZoo and run
(and are tested) without it; only ``make_env`` for a multi-agent name and ``register_envs`` need it.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import BaseParallelWrapper, BaseWrapper

__all__ = [
    "CHESS_AEC",
    "CHESS_SINGLE",
    "ENV_NAMES",
    "WORLD_PREFIX",
    "FlatWorld",
    "RLlibChessAEC",
    "RLlibChessObservation",
    "agent_ids",
    "check_env_config",
    "check_env_name",
    "is_masked",
    "is_multi_agent",
    "make_env",
    "make_raw_env",
    "register_envs",
]

CHESS_SINGLE = "chess_env/Chess-v0"
CHESS_AEC = "chess:selfplay"
WORLD_PREFIX = "world:"
ENV_NAMES = (CHESS_SINGLE, CHESS_AEC, "world:forage", "world:trade")
# Per-step info that RLlib would store in every episode and ship between processes for nothing.
_HEAVY_INFO = ("action_mask", "legal_moves")


def check_env_name(name: str) -> str:
    """``name`` if RLlib training knows it, else ``ValueError`` listing the names it knows.

    Example:
        >>> check_env_name("world:forage")
        'world:forage'
        >>> check_env_name("CartPole-v1")
        Traceback (most recent call last):
        ...
        ValueError: unknown env 'CartPole-v1' for RLlib; expected one of chess_env/Chess-v0, ...
    """
    if name not in ENV_NAMES:
        raise ValueError(f"unknown env {name!r} for RLlib; expected one of {', '.join(ENV_NAMES)}")
    return name


def is_multi_agent(name: str) -> bool:
    """True for the names RLlib runs as a ``MultiAgentEnv`` (every other name is single-agent)."""
    return check_env_name(name) != CHESS_SINGLE


def is_masked(name: str) -> bool:
    """True for the chess envs: their observations carry the legal-action mask."""
    return check_env_name(name) in (CHESS_SINGLE, CHESS_AEC)


def _masked_space(board: spaces.Box, mask: spaces.Box) -> spaces.Dict:
    """The board as 768 float32 (RLlib's MLP encoder does not cast; its CNN would need filters
    chosen for 8x8); the mask stays int8 (the masking module takes its log)."""
    flat = spaces.Box(0.0, 1.0, shape=(int(np.prod(board.shape)),), dtype=np.float32)
    return spaces.Dict({"observations": flat, "action_mask": mask})


class RLlibChessObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """``ChessEnv`` (``obs_mode="dict"``) for RLlib's action-masking RLModule.

    The observation becomes ``{"observations": (768,) float32 board, "action_mask": (4672,) int8}``;
    ``info`` loses the per-step ``action_mask`` and ``legal_moves`` (the mask is in the
    observation) and gains ``illegal_actions``, the episode's count of actions outside the mask
    (with ``illegal_action="terminate"`` such an action ends the episode with -1).

    Example:
        >>> from chess_env import ChessEnv
        >>> env = RLlibChessObservation(ChessEnv(obs_mode="dict", illegal_action="terminate"))
        >>> obs, info = env.reset(seed=0)
        >>> obs["observations"].shape, int(obs["action_mask"].sum()), info["illegal_actions"]
        ((768,), 20, 0)
        >>> env.step(0)[4]["illegal_actions"]  # a1 up one square: not a legal move
        1
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        inner = env.observation_space
        if not isinstance(inner, spaces.Dict) or set(inner.spaces) != {"board", "action_mask"}:
            raise ValueError("RLlibChessObservation needs ChessEnv(obs_mode='dict')")
        board, mask = inner["board"], inner["action_mask"]
        assert isinstance(board, spaces.Box) and isinstance(mask, spaces.Box)  # ChessEnv's
        self.observation_space = _masked_space(board, mask)
        self.illegal_actions = 0

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {
            "observations": observation["board"].reshape(-1).astype(np.float32),
            "action_mask": observation["action_mask"],
        }

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self.illegal_actions = 0
        observation, info = super().reset(**kwargs)
        return observation, self._light(info)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = super().step(action)
        self.illegal_actions += "illegal_action" in info
        return observation, reward, terminated, truncated, self._light(info)

    def _light(self, info: dict[str, Any]) -> dict[str, Any]:
        kept = {key: value for key, value in info.items() if key not in _HEAVY_INFO}
        return {**kept, "illegal_actions": self.illegal_actions}


class RLlibChessAEC(BaseWrapper):
    """``chess_env.aec_env()`` for RLlib's ``PettingZooEnv`` and action-masking RLModule.

    Each agent observes ``{"observations": (768,) float32 board from its side, "action_mask":
    (4672,) int8}``. An action outside the mover's mask is counted (``illegal_actions`` in every
    agent's ``infos``) before the inner ``TerminateIllegalWrapper`` ends the game with -1 for the
    mover.

    Example:
        >>> from chess_env import aec_env
        >>> env = RLlibChessAEC(aec_env(max_plies=4))
        >>> env.reset(seed=0)
        >>> observation, *_, info = env.last()
        >>> observation["observations"].shape, int(observation["action_mask"].sum()), info
        ((768,), 20, {'illegal_actions': 0})
    """

    def __init__(self, env: AECEnv) -> None:
        super().__init__(env)
        self.illegal_actions = 0
        inner = {agent: env.observation_space(agent) for agent in env.possible_agents}
        self._spaces = {
            agent: _masked_space(space["observation"], space["action_mask"])
            for agent, space in inner.items()
        }

    def observation_space(self, agent: str) -> spaces.Space:
        return self._spaces[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray] | None:
        observation = super().observe(agent)
        if observation is None:
            return None
        return {
            "observations": observation["observation"].reshape(-1).astype(np.float32),
            "action_mask": observation["action_mask"],
        }

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.illegal_actions = 0
        super().reset(seed=seed, options=options)

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        live = not (self.terminations[agent] or self.truncations[agent])
        if live and action is not None and not self.env.observe(agent)["action_mask"][action]:
            self.illegal_actions += 1
        super().step(action)

    @property
    def infos(self) -> dict[str, dict[str, Any]]:
        """The inner infos, each with the game's ``illegal_actions`` so far."""
        count = self.illegal_actions
        return {agent: {**info, "illegal_actions": count} for agent, info in self.env.infos.items()}


class _SpaceHolder(gym.Env):
    """A stand-in env that only has spaces, so ``FlattenForSB3`` can flatten one agent's."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        self.observation_space, self.action_space = observation_space, action_space


class FlatWorld(BaseParallelWrapper):
    """A world (``ParallelEnv``) whose agents observe one float32 ``Box`` and act flat.

    Each agent's observation goes through ``multiagent.wrappers.FlattenForSB3`` (strings
    dropped, padded lists with masks) and then ``gymnasium.spaces.flatten`` (Discrete parts
    one-hot), so RLlib's MLP encoder takes it; its Dict action becomes ``Discrete`` (forage) or
    ``MultiDiscrete`` (trade: floats binned) the same way SB3 training does. Agents may see
    different variables (trade's observability matrix), so each vector is zero-padded at the end
    to the widest agent's: parameter sharing needs one space for all (as SuperSuit's
    ``pad_observations`` does).

    Example:
        >>> from multiagent import parallel_env
        >>> env = FlatWorld(parallel_env("forage", observability=True))
        >>> observations, _ = env.reset(seed=0)
        >>> env.observation_space("Forager_1").shape, env.action_space("Forager_1")
        ((267,), Discrete(5))
        >>> env.observation_space("Forager_1").contains(observations["Forager_1"])
        True
    """

    def __init__(self, env: ParallelEnv) -> None:
        from multiagent.wrappers import FlattenForSB3

        super().__init__(env)
        self._flatteners = {
            agent: FlattenForSB3(
                _SpaceHolder(env.observation_space(agent), env.action_space(agent))
            )
            for agent in env.possible_agents
        }
        boxes = [_flat_box(f.observation_space) for f in self._flatteners.values()]
        self.width = max(box.shape[0] for box in boxes)
        low = np.min([_padded(box.low, self.width) for box in boxes], axis=0)
        high = np.max([_padded(box.high, self.width) for box in boxes], axis=0)
        self._space = spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)

    def observation_space(self, agent: str) -> spaces.Box:
        return self._space

    def action_space(self, agent: str) -> spaces.Space:
        return self._flatteners[agent].action_space

    def _flat(self, agent: str, observation: Any) -> np.ndarray:
        flattener = self._flatteners[agent]
        leaves = flattener.observation(observation)
        flat = spaces.flatten(flattener.observation_space, leaves)
        assert isinstance(flat, np.ndarray)  # the space flattens to a Box (see _flat_box)
        return _padded(flat, self.width).astype(np.float32)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return {agent: self._flat(agent, obs) for agent, obs in observations.items()}, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        inner = {agent: self._flatteners[agent].action(a) for agent, a in actions.items()}
        observations, rewards, terminations, truncations, infos = self.env.step(inner)
        flat = {agent: self._flat(agent, obs) for agent, obs in observations.items()}
        return flat, rewards, terminations, truncations, infos


def _flat_box(space: spaces.Space[Any]) -> spaces.Box:
    """``FlattenForSB3``'s observation space flattened: its leaves are Box and Discrete, so one
    Box."""
    box = spaces.flatten_space(space)
    assert isinstance(box, spaces.Box) and box.shape is not None
    return box


def _padded(vector: np.ndarray, width: int) -> np.ndarray:
    """``vector`` with zeros appended up to ``width``."""
    return np.pad(vector, (0, width - vector.shape[0]))


def agent_ids(name: str) -> tuple[str, ...]:
    """The agents of a multi-agent env (one policy each with ``policies="per_agent"``).

    Example:
        >>> agent_ids("chess:selfplay")
        ('player_0', 'player_1')
    """
    if not is_multi_agent(name):
        raise ValueError(f"{name!r} is a single-agent env")
    if name == CHESS_AEC:
        from chess_env.core.aec import AGENTS

        return tuple(AGENTS)
    from multiagent.worlds import load_world

    return tuple(load_world(name.removeprefix(WORLD_PREFIX)).agent_names)


def make_raw_env(name: str, env_config: dict[str, Any] | None = None) -> Any:
    """The env ``name`` wrapped for RLlib's spaces, before RLlib's own PettingZoo adapters.

    ``env_config`` goes to the underlying env: ``ChessEnv``'s arguments (``opponent``,
    ``max_plies``, ...; ``obs_mode`` is always "dict", ``illegal_action`` defaults to
    "terminate"), ``aec_env``'s (``max_plies``, ``claim_draws``) or ``parallel_env``'s (e.g.
    ``invalid_action``).
    """
    kwargs = dict(env_config or {})
    if check_env_name(name) == CHESS_SINGLE:
        import chess_env  # noqa: F401  (registers chess_env/Chess-v0 in a fresh env runner)

        kwargs = {"illegal_action": "terminate", **kwargs, "obs_mode": "dict"}
        return RLlibChessObservation(gym.make(CHESS_SINGLE, **kwargs))
    if name == CHESS_AEC:
        from chess_env import aec_env

        return RLlibChessAEC(aec_env(**kwargs))
    from multiagent import parallel_env

    world = name.removeprefix(WORLD_PREFIX)
    return FlatWorld(parallel_env(world, observability=True, **kwargs))


def check_env_config(name: str, env_config: dict[str, Any] | None = None) -> None:
    """Build the env once in the caller's process, so a bad ``env_config`` fails here with
    the env's name instead of inside a remote env runner."""
    try:
        env = make_raw_env(name, env_config)
    except (TypeError, ValueError) as error:
        raise ValueError(f"env_config {env_config or {}} does not fit {name}: {error}") from None
    env.close()


def make_env(name: str, env_config: dict[str, Any] | None = None) -> Any:
    """The env ``name`` as RLlib runs it: a Gymnasium env, or RLlib's ``PettingZooEnv`` (AEC
    chess) / ``ParallelPettingZooEnv`` (worlds) around ``make_raw_env``'s. Needs ray."""
    env = make_raw_env(name, env_config)
    if not is_multi_agent(name):
        return env
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv

    return PettingZooEnv(env) if name == CHESS_AEC else ParallelPettingZooEnv(env)


def _creator(name: str) -> Any:
    def create(env_config: dict[str, Any]) -> Any:
        return make_env(name, dict(env_config))

    create.__name__ = f"make_{name}"
    return create


def register_envs() -> tuple[str, ...]:
    """Register every name of ``ENV_NAMES`` with RLlib (``ray.tune.register_env``)."""
    from ray.tune.registry import register_env

    for name in ENV_NAMES:
        register_env(name, _creator(name))
    return ENV_NAMES
