"""``LLMWorldPlayer``: a chat model plays a seat (``openai:MODEL?...``, or a local checkpoint,
``hf:PATH?...``) through ``envkit.llm``.

Each turn the model reads the seat's ``ObservationEnvelope`` as text (what the text wrapper
shows; agents the seat is unaware of are absent, values carry the configured noise) and answers
with the world's action as JSON, or through an ``act`` tool with ``tool_calling=true``, validated
against the world's action signature (``multiagent.signatures.world_signature``). An answer that
does not validate goes back to the model with the reasons, up to ``retries`` times (default 2),
before the env sees anything; if none validates, the last answer is passed on as it is and the env
refuses it. A refusal by the env (``SeatTurn.feedback``) opens the next turn's prompt: "Your last
action was refused: ...".

Endpoint failures are not caught: ``act`` raises ``envkit.llm.ChatError`` (``ChatTimeout`` when
the model does not answer in time) after the client's own retries of HTTP 429, 5xx and lost
connections; a harness decides what the seat does then (e.g. ``fallback_action``). Every decision
is recorded (``decisions``, ``last_decision``), the failed ones too.

``hf:PATH`` answers with ``envkit.llm.local.LocalChatClient``; with ``tool_calling=yes`` it is
offered the ``act`` tool ``training.llm_rl.WorldToolEnv`` trains, so a checkpoint trained on a
seat plays in ``multiagent run`` and ``eval`` in the format it learnt.
"""

from __future__ import annotations

from typing import Any, cast

from envkit.llm import LLMAgent, LLMSettings, ReasoningStep
from envkit.llm.local import LOCAL_OPTIONS, LocalChatClient, local_settings
from envkit.llm.spec_settings import SETTINGS_OPTIONS, settings_from_spec
from envkit.player_spec import PlayerSpec
from multiagent.config import SimulationConfig
from multiagent.players.base import SeatTurn, WorldPlayer
from multiagent.signatures import world_signature

__all__ = [
    "HF_OPTIONS",
    "LLM_OPTIONS",
    "LLMWorldPlayer",
    "hf_world_agent",
    "hf_world_settings",
    "llm_world_agent",
    "llm_world_settings",
    "world_system_prompt",
]

LLM_OPTIONS = (*SETTINGS_OPTIONS, "retries", "max_tokens")
"""The options of ``openai:MODEL``: the shared LLM settings, ``retries`` (answers fed back per
decision when they do not validate, 0..10) and ``max_tokens`` (most tokens in one reply)."""
HF_OPTIONS = (*LOCAL_OPTIONS, "retries")
"""The options of ``hf:PATH``: ``envkit.llm.local.LOCAL_OPTIONS`` (``max_tokens`` defaults to 128
here) and ``retries`` as for ``openai:``."""


def world_system_prompt(config: SimulationConfig) -> str:
    """The instructions an LLM seat is given for ``config``'s world.

    Example:
        >>> from multiagent.worlds import load_world
        >>> world_system_prompt(load_world("forage")).split(".")[0]
        "You play one agent in the multi-agent world 'forage'"
    """
    return (
        f"You play one agent in the multi-agent world {config.simulation.name!r}. Each turn you "
        "are shown what your agent observes (agents you cannot see are absent; observed values "
        "may be noisy) and you choose your agent's action for the turn."
    )


def llm_world_settings(spec: PlayerSpec, system_prompt: str | None = None) -> LLMSettings:
    """The ``LLMSettings`` of ``spec`` (``openai:MODEL?...``, options ``LLM_OPTIONS``); a bad
    option is the spec's error naming the key.

    Example:
        >>> from envkit.player_spec import parse_spec
        >>> spec = parse_spec("openai:m?retries=0&max_tokens=64", ["openai"])
        >>> settings = llm_world_settings(spec)
        >>> settings.max_self_corrections, settings.max_tokens
        (0, 64)
    """
    spec.reject_extras(argument=True, keys=LLM_OPTIONS)
    fields: dict[str, Any] = {}
    retries = spec.integer("retries", 0, 10)
    if retries is not None:
        fields["max_self_corrections"] = retries
    max_tokens = spec.integer("max_tokens", 1, 1_000_000)
    if max_tokens is not None:
        fields["max_tokens"] = max_tokens
    return settings_from_spec(spec, system_prompt=system_prompt, **fields)


def llm_world_agent(spec: PlayerSpec, config: SimulationConfig) -> LLMAgent:
    """The ``LLMAgent`` of ``spec`` for ``config``'s world: its settings, the world's system
    prompt and the world's action signature.

    Example:
        >>> from envkit.player_spec import parse_spec
        >>> from multiagent.worlds import load_world
        >>> agent = llm_world_agent(parse_spec("openai:m", ["openai"]), load_world("forage"))
        >>> agent.schema.params.entries[0].key
        'move'
    """
    settings = llm_world_settings(spec, world_system_prompt(config))
    return LLMAgent(settings, signature=world_signature(config))


def hf_world_settings(spec: PlayerSpec, system_prompt: str = "") -> tuple[LLMSettings, int]:
    """The settings and sampling seed of ``spec`` (``hf:PATH?...``, options ``HF_OPTIONS``).

    Example:
        >>> from envkit.player_spec import parse_spec
        >>> spec = parse_spec("hf:runs/fisher?tool_calling=yes&retries=0", ["hf"])
        >>> settings, seed = hf_world_settings(spec)
        >>> settings.tool_calling, settings.max_self_corrections, settings.max_tokens, seed
        (True, 0, 128, 0)
    """
    spec.reject_extras(argument=True, keys=HF_OPTIONS)
    settings, seed = local_settings(spec, system_prompt=system_prompt, max_tokens=128)
    retries = spec.integer("retries", 0, 10)
    if retries is not None:
        settings = settings.model_copy(update={"max_self_corrections": retries})
    return settings, seed


def hf_world_agent(spec: PlayerSpec, config: SimulationConfig) -> LLMAgent:
    """The ``LLMAgent`` of ``spec`` (``hf:PATH?...``) for ``config``'s world: the checkpoint
    answers locally; a folder that cannot be loaded is the spec's error."""
    settings, seed = hf_world_settings(spec, world_system_prompt(config))
    try:
        client = LocalChatClient(settings.model_name, settings, seed=seed)
    except (OSError, ValueError) as error:
        raise spec.error(f"cannot load the checkpoint: {error}") from None
    return LLMAgent(settings, signature=world_signature(config), client=client)  # type: ignore[arg-type]


class LLMWorldPlayer(WorldPlayer):
    """A chat model choosing a seat's actions (see the module doc).

    Args:
        agent: the ``LLMAgent`` that decides (``llm_world_agent`` builds it from a spec).
        name: the player's name (default: the agent's).
    """

    calls_endpoint = True

    def __init__(self, agent: LLMAgent, name: str | None = None) -> None:
        self.agent = agent
        self.name = name or agent.name
        self.scope = ""

    @property
    def decisions(self) -> list[ReasoningStep]:
        """Every decision since the player was made, in order (prompt, replies, cost)."""
        return self.agent.reasoning

    @property
    def last_decision(self) -> ReasoningStep | None:
        """The latest decision, or None before the first."""
        return self.agent.reasoning[-1] if self.agent.reasoning else None

    def reset(self, seed: int | None, *, scope: str = "") -> None:
        """Start an episode; ``scope`` (the episode and seat label) becomes the client's
        ``cache_scope``, so a ``ReplayCache`` answers each seat of each episode as it was
        answered before, whatever the order the seats were asked in."""
        self.scope = scope
        self.agent.client.cache_scope = scope

    def act(self, turn: SeatTurn) -> dict[str, Any]:
        prompt = turn.envelope.to_text()
        if turn.feedback:
            prompt = f"Your last action was refused: {turn.feedback}\n{prompt}"
        # An answer that never validated is passed on as it is, so the env names what is wrong.
        return cast(dict[str, Any], self.agent.decide(prompt))

    def close(self) -> None:
        self.agent.close()
