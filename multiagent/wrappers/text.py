"""The view LLM agents read: observation DTOs, as text or JSON.

``observation_envelope`` turns an observer's view of the world into an ``ObservationEnvelope``
(targets it is unaware of are absent, as in the original design) with the messages it heard;
``TextObservationWrapper`` makes that the observation of every agent of a world env
(``format="text"`` or ``"json"``), with the messages delivered by the last step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gymnasium import spaces
from pettingzoo import ParallelEnv

from multiagent.dto import AgentObservation, GlobalObservation, Message, ObservationEnvelope
from multiagent.observability import GLOBAL_TARGET, ObservabilityPlan, observe_all
from multiagent.spaces import CHARSET
from multiagent.world_state import WorldState
from multiagent.wrappers.world_view import WorldViewWrapper

__all__ = ["TextObservationWrapper", "observation_envelope"]

MAX_TEXT = 100_000


def observation_envelope(
    observer: str, view: WorldState, plan: ObservabilityPlan, messages: Iterable[Message] = ()
) -> ObservationEnvelope:
    """``observer``'s view (from ``observe_all``) as the DTO an LLM agent is given, with the
    ``messages`` it heard since the last turn (default: none)."""
    views = {v.target: v for v in plan.views[observer]}
    agents = {
        target: AgentObservation(
            name=target,
            variables={k: v for k, v in values.items() if k != "name"},
            level=views[target].level.value,
            noise=views[target].noise,
        )
        for target, values in view.agents.items()
    }
    global_view = views.get(GLOBAL_TARGET)
    global_context = (
        GlobalObservation(
            variables=view.global_state, level=global_view.level.value, noise=global_view.noise
        )
        if global_view is not None
        else None
    )
    return ObservationEnvelope(
        turn=view.turn,
        observer=observer,
        agents=agents,
        global_context=global_context,
        messages=list(messages),
    )


class TextObservationWrapper(WorldViewWrapper):
    """Each agent's observation becomes its ``ObservationEnvelope`` as text or JSON.

    Uses the config's observability (filter and noise) unless ``full=True``. Spaces are
    ``Text`` (the envelope is printable ASCII when the world's strings and messages are). Each
    envelope holds the messages its observer heard in the last step (``env.messages_sent``).

    Example:
        >>> from multiagent import parallel_env
        >>> env = TextObservationWrapper(parallel_env("forage"), format="json")
        >>> observations, _ = env.reset(seed=0)
        >>> '"observer":"Forager_1"' in observations["Forager_1"]
        True
    """

    def __init__(self, env: ParallelEnv, format: str = "text", full: bool = False) -> None:
        if format not in ("text", "json"):
            raise ValueError(f"format must be 'text' or 'json', got {format!r}")
        super().__init__(env)
        self.format = format
        self.plan = ObservabilityPlan(self.world_env.config, full=full)
        self._space = spaces.Text(MAX_TEXT, min_length=0, charset=CHARSET)

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._space

    def envelopes(self, observers: list[str]) -> dict[str, ObservationEnvelope]:
        world = self.world_env.world
        views = observe_all(world, self.plan, seed=self.world_env.seed_value, observers=observers)
        heard: dict[str, list[Message]] = {a: [] for a in observers}
        for sent in self.world_env.messages_sent:
            for recipient in sent.recipients:
                if recipient in heard:
                    heard[recipient].append(Message.model_validate(sent.envelope()))
        return {a: observation_envelope(a, views[a], self.plan, heard[a]) for a in observers}

    def observe(self, observers: list[str]) -> dict[str, Any]:
        envelopes = self.envelopes(observers)
        render = (lambda e: e.to_json()) if self.format == "json" else (lambda e: e.to_text())
        return {agent: render(envelope) for agent, envelope in envelopes.items()}
