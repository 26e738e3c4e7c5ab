"""Messages between agents: the ``channels`` section of a world, and who hears what.

A world may declare channels; each is ``broadcast`` (to everyone who can hear the sender) or
``direct`` (to one agent), with a ``max_length`` in characters (default 280)::

    channels:
      talk: {kind: broadcast, max_length: 280}
      whisper: {kind: direct, max_length: 280}

A message is an optional extra key of an agent's action, one per channel, next to the action's
fields: ``{"move": "up", "talk": "stock is low"}`` or ``{"whisper": {"to": "B", "text": "..."}}``.
``None`` (or an empty text) on a channel says nothing. Messages are not part of the Gymnasium
action space (RL policies do not talk); LLM agents see them as optional parameters of the action
signature (``multiagent.signatures.action_signature``). A message that is not a string, is longer
than ``max_length``, or is sent to an unknown agent or to the sender makes the whole action
invalid, as any bad field does (its error names the path, ``actions[A].talk: ...``).

Delivery rule. Messages sent on turn t arrive with the step that produces turn t+1 (in
``infos[recipient]["messages"]``, as ``{"turn": t, "sender", "channel", "text"}``). Who receives
one follows the configured observability (``ObservabilityPlan(config)``: the matrix, its default,
and the implicit self row), never the sender itself:

- broadcast: every other agent live on turn t whose level toward the sender is not ``unaware``;
- direct: the addressee, if it is live on turn t and not unaware of the sender.

A world without an observability section (or with it disabled): everyone hears. An agent that
finishes on the step that delivers still gets the message in its last infos.

- ``ChannelConfig``: one entry of ``channels``; ``check_channels``: the section's cross checks.
- ``Outgoing``: a validated message before delivery; ``parse_messages``: an action's messages,
  validated; ``split_action``: an action's fields apart from its messages.
- ``SentMessage``: a delivered message with its recipients (what ``env.messages_sent`` and the
  episode log hold); ``deliver``: the recipients of each outgoing message.
"""

from __future__ import annotations

import keyword
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from multiagent.observability import ObservabilityPlan

__all__ = [
    "ChannelConfig",
    "Outgoing",
    "SentMessage",
    "check_channels",
    "deliver",
    "parse_messages",
    "split_action",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class ChannelConfig(BaseModel):
    """One entry of ``channels``: broadcast or direct, and the longest text it carries.

    Example:
        >>> ChannelConfig(kind="direct").max_length
        280
    """

    model_config = _STRICT
    kind: Literal["broadcast", "direct"] = Field(
        description="broadcast: to everyone who can hear the sender; direct: to one agent"
    )
    max_length: int = Field(280, ge=1, le=100_000, description="Longest text, in characters")


def check_channels(channels: Mapping[str, ChannelConfig], actions: Iterable[str]) -> list[str]:
    """Problems of the ``channels`` section, each naming its path: names must be identifiers
    (they become parameter names of the action signature) and differ from the action fields.

    Example:
        >>> check_channels({"move": ChannelConfig(kind="broadcast")}, ["move"])
        ["channels.move: 'move' is already an action field; a channel needs a name of its own"]
    """
    problems = []
    fields = set(actions)
    for name in channels:
        path = f"channels.{name}"
        if not name.isidentifier() or keyword.iskeyword(name):
            problems.append(f"{path}: a channel name must be an identifier, got {name!r}")
        elif name in fields:
            problems.append(
                f"{path}: {name!r} is already an action field; a channel needs a name of its own"
            )
    return problems


def split_action(action: Any, channels: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``action`` without its channel keys, and those keys; anything not a mapping is all
    fields.

    Example:
        >>> split_action({"move": "up", "talk": "hi"}, {"talk": None})
        ({'move': 'up'}, {'talk': 'hi'})
    """
    if not isinstance(action, Mapping) or not channels:
        return action, {}
    fields = {key: value for key, value in action.items() if key not in channels}
    return fields, {key: value for key, value in action.items() if key in channels}


@dataclass(frozen=True)
class Outgoing:
    """A validated message, before delivery: ``to`` is the addressee of a direct one."""

    sender: str
    channel: str
    text: str
    to: str | None = None


def parse_messages(
    sender: str,
    given: Mapping[str, Any],
    channels: Mapping[str, ChannelConfig],
    agents: Sequence[str],
) -> list[Outgoing]:
    """The messages of ``sender``'s action (channel -> value), in channel order, or
    ``ValueError`` naming the path of the first bad one.

    Example:
        >>> channels = {"talk": ChannelConfig(kind="broadcast", max_length=5)}
        >>> parse_messages("A", {"talk": "hi"}, channels, ["A", "B"])
        [Outgoing(sender='A', channel='talk', text='hi', to=None)]
        >>> parse_messages("A", {"talk": "hello!"}, channels, ["A", "B"])
        Traceback (most recent call last):
        ...
        ValueError: actions[A].talk: 6 characters, longer than the channel's max_length 5
    """
    messages = []
    for name, channel in channels.items():
        value = given.get(name)
        if value is None:
            continue
        path = f"actions[{sender}].{name}"
        if channel.kind == "broadcast":
            text, to = _text(value, path, channel.max_length), None
        else:
            text, to = _direct(value, path, channel.max_length, sender, agents)
        if text:
            messages.append(Outgoing(sender, name, text, to))
    return messages


def _text(value: Any, path: str, max_length: int) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{path}: a message is a string, got {type(value).__name__}")
    if len(value) > max_length:
        raise ValueError(
            f"{path}: {len(value)} characters, longer than the channel's max_length {max_length}"
        )
    return value


def _direct(
    value: Any, path: str, max_length: int, sender: str, agents: Sequence[str]
) -> tuple[str, str]:
    if not isinstance(value, Mapping):
        raise ValueError(
            f'{path}: a direct message is {{"to": agent, "text": string}}, got '
            f"{type(value).__name__}"
        )
    unknown = sorted(str(key) for key in value if key not in ("to", "text"))
    if unknown:
        raise ValueError(f"{path}.{unknown[0]}: unknown key (a direct message has to and text)")
    for key in ("to", "text"):
        if key not in value:
            raise ValueError(f"{path}.{key}: missing")
    to = value["to"]
    if not isinstance(to, str) or to not in agents:
        raise ValueError(f"{path}.to: {to!r} is not an agent; agents are {list(agents)}")
    if to == sender:
        raise ValueError(f"{path}.to: {to!r} is the sender; a message goes to another agent")
    return _text(value["text"], f"{path}.text", max_length), to


class SentMessage(BaseModel):
    """A message as sent and delivered: its turn, sender, channel, text, addressee (direct
    channels) and who received it.

    Example:
        >>> sent = SentMessage(turn=3, sender="A", channel="talk", text="hi", recipients=["B"])
        >>> sent.envelope()
        {'turn': 3, 'sender': 'A', 'channel': 'talk', 'text': 'hi'}
    """

    model_config = _STRICT
    turn: int = Field(ge=0, description="The turn it was sent on (delivered with the next)")
    sender: str = Field(min_length=1, description="The agent that sent it")
    channel: str = Field(min_length=1, description="The channel's name")
    text: str = Field(description="What was said")
    to: str | None = Field(None, description="The addressee of a direct message")
    recipients: list[str] = Field(
        default_factory=list, description="The agents it was delivered to, in the config's order"
    )

    def envelope(self) -> dict[str, Any]:
        """What a recipient is given: turn, sender, channel and text (``multiagent.dto.Message``
        reads it)."""
        return {"turn": self.turn, "sender": self.sender, "channel": self.channel,
                "text": self.text}  # fmt: skip


def deliver(
    outgoing: Iterable[Outgoing], plan: ObservabilityPlan, live: Sequence[str], turn: int
) -> list[SentMessage]:
    """Each message with its recipients by the delivery rule (module docstring): agents of
    ``live`` other than the sender that are not unaware of it under ``plan``, and for a direct
    message only its addressee.

    Example:
        >>> from multiagent.config import load_config
        >>> from multiagent.observability import ObservabilityPlan
        >>> config = load_config({
        ...     "simulation": {"name": "demo", "max_turns": 3}, "engine": {"dynamics": None},
        ...     "agents": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
        ...     "observability": {"matrix": [["B", "A", "external"]]}})  # C is unaware of A
        >>> sent = deliver([Outgoing("A", "talk", "hi")], ObservabilityPlan(config), "ABC", 0)
        >>> sent[0].recipients
        ['B']
    """
    sent = []
    for message in outgoing:
        hearers = [
            agent
            for agent in live
            if agent != message.sender
            and (message.to is None or agent == message.to)
            and plan.can_ever_see(agent, message.sender)
        ]
        sent.append(
            SentMessage(
                turn=turn,
                sender=message.sender,
                channel=message.channel,
                text=message.text,
                to=message.to,
                recipients=hearers,
            )
        )
    return sent
