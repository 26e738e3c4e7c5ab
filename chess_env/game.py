"""Chess game and agent models (the data model's sections 1.4 and 1.5).

- ``AgentConfig``: a chess-playing LLM agent: identity, model, prompt, sampling, timeout, stats.
- ``AgentStats``: an agent's results over games; wins, losses and draws sum to the games played.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from envkit.dto import FrozenDTO

__all__ = ["AgentConfig", "AgentStats"]


class AgentStats(FrozenDTO):
    """Performance over games.

    ``average_thinking_time`` is the total thinking time over ``total_moves`` (0 without moves);
    a move's thinking time includes the illegal attempts before it.

    Example:
        >>> AgentStats(games_played=2, games_won=1, games_drawn=1).games_lost
        0
        >>> AgentStats(games_played=2, games_won=1)
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for AgentStats
          Value error, games_won + games_lost + games_drawn = 1, but games_played = 2 ...
    """

    games_played: int = Field(0, ge=0, description="Games finished")
    games_won: int = Field(0, ge=0, description="Games won")
    games_lost: int = Field(0, ge=0, description="Games lost (checkmate, illegal moves, timeout)")
    games_drawn: int = Field(0, ge=0, description="Games drawn, or cut off unfinished")
    total_moves: int = Field(0, ge=0, description="Moves the agent played")
    average_thinking_time: float = Field(
        0.0, ge=0, description="Mean decision time per move played (seconds)"
    )
    illegal_moves_attempted: int = Field(0, ge=0, description="Illegal or unreadable moves sent")
    timeouts: int = Field(0, ge=0, description="Decisions that ran out of time")

    @model_validator(mode="after")
    def _results_add_up(self) -> AgentStats:
        decided = self.games_won + self.games_lost + self.games_drawn
        if decided != self.games_played:
            raise ValueError(
                f"games_won + games_lost + games_drawn = {decided}, "
                f"but games_played = {self.games_played}"
            )
        return self


class AgentConfig(FrozenDTO):
    """A chess agent: who it is, which model plays for it and how.

    Example:
        >>> AgentConfig(agent_id="white", name="Aggressive Alpha", personality="aggressive",
        ...     model_name="Qwen/Qwen2.5-32B-Instruct", system_prompt="Attack.").stats.games_played
        0
    """

    agent_id: str = Field(min_length=1, description="Unique per game, typically 'white'/'black'")
    name: str = Field(min_length=1, max_length=50, description="Display name")
    personality: str = Field(description="Playing style, e.g. 'aggressive', 'defensive'")
    model_name: str = Field(min_length=1, description="LLM model identifier")
    system_prompt: str = Field(description="The agent's instructions (plain text)")
    temperature: float = Field(0.7, ge=0.0, le=2.0, description="Sampling temperature")
    max_tokens: int = Field(2048, gt=0, description="Most tokens in one reply")
    timeout_seconds: float = Field(30.0, gt=0, description="Move decision timeout (seconds)")
    stats: AgentStats = Field(default_factory=AgentStats, description="Results so far")
