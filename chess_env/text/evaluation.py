"""Evaluating a text agent: ``evaluate_agent(agent, opponent, games) -> EvaluationReport``.

- ``evaluate_agent``: plays ``ChessTextEnv`` games (seeded, colours alternating or fixed) and
  counts results, moves, thinking time, illegal attempts and timeouts.
- ``GameRecord``: one game's result, outcome and counts; ``EvaluationReport``: all of them, the
  ``AgentStats`` over them and one PGN per game.
- ``write_report``: ``report.json`` and ``games.pgn`` in a directory.

A game ends as the env ends it (checkmate, a draw, an illegal answer with no retry left, the ply
limit) or when the agent raises ``TimeoutError``, which loses it with the outcome "timeout". A
game stopped at the ply limit counts as a draw in the stats (its PGN result stays "*").
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Literal

import chess
import chess.pgn
from pydantic import Field

from chess_env.core.game import AgentStats
from chess_env.core.pgn import set_tags
from chess_env.core.players import PlayerLike, make_player
from chess_env.text.agents import TextPlayer
from chess_env.text.env import ChessTextEnv
from chess_env.text.prompt_conditions import PromptCondition
from envkit.dto import FrozenDTO
from envkit.ports import PolicyBackend

__all__ = ["COLOR_SCHEDULES", "EvaluationReport", "GameRecord", "evaluate_agent", "write_report"]

COLOR_SCHEDULES = ("alternate", "white", "black")
_TERMINATION = {"timeout": "time forfeit", "illegal_move": "rules infraction"}  # PGN's words
_SCORES = ("win", "loss", "draw")
Color = Literal["white", "black"]


class GameRecord(FrozenDTO):
    """One evaluation game from the agent's side.

    Example:
        >>> from chess_env.text.agents import RandomTextAgent
        >>> game = evaluate_agent(RandomTextAgent(), games=1, max_plies=6, progress=False).games[0]
        >>> game.agent_color, game.result, game.outcome, game.score, game.plies, game.moves
        ('white', '*', 'max_plies', 'draw', 6, 3)
    """

    seed: int = Field(description="The seed the env was reset with")
    agent_color: Color = Field(description="The colour the agent played")
    result: str = Field(description='PGN result: "1-0", "0-1", "1/2-1/2" or "*" (unfinished)')
    outcome: str = Field(
        description='Why it ended: "checkmate", ..., "illegal_move", "max_plies" or "timeout"'
    )
    score: Literal["win", "loss", "draw"] = Field(description="The result for the agent")
    plies: int = Field(ge=0, description="Plies on the board at the end, both sides")
    moves: int = Field(ge=0, description="Moves the agent played")
    illegal_attempts: int = Field(ge=0, description="Illegal or unreadable answers")
    timed_out: bool = Field(description="Whether the agent ran out of time")
    thinking_time: float = Field(
        ge=0, description="Seconds spent deciding the moves played (their illegal attempts too)"
    )


class EvaluationReport(FrozenDTO):
    """Every game of one evaluation, the stats over them and their PGNs.

    Example:
        >>> from chess_env.text.agents import RandomTextAgent
        >>> report = evaluate_agent(RandomTextAgent(), "greedy", 2, max_plies=10, progress=False)
        >>> report.opponent, [game.agent_color for game in report.games], report.stats.games_drawn
        ('greedy', ['white', 'black'], 2)
        >>> report.pgns[0].splitlines()[0]
        '[Event "polyarena eval"]'
    """

    agent: str = Field(description="The agent's name")
    opponent: str = Field(description="The opponent, as given")
    games: list[GameRecord] = Field(description="The games, in the order played")
    stats: AgentStats = Field(description="The agent's stats over the games")
    pgns: list[str] = Field(description="One PGN per game, in the same order")


def evaluate_agent(
    agent: PolicyBackend,
    opponent: PlayerLike = "random",
    games: int = 10,
    *,
    colors: str = "alternate",
    seed: int = 0,
    retries: int = 1,
    max_plies: int | None = 200,
    progress: bool = True,
    prompt: str | PromptCondition | None = None,
) -> EvaluationReport:
    """Play ``games`` games of ``agent`` against ``opponent`` in ``ChessTextEnv``.

    Args:
        agent: any ``PolicyBackend`` taking the text observation; its action may be text, a
            ``chess.Move`` or ``{"move": ...}`` (see ``chess_env.text.agents.move_text``).
        opponent: any player (``chess_env.core.players``), as for ``ChessTextEnv``.
        games: how many games.
        colors: "alternate" (white first), "white" or "black".
        seed: game ``i`` resets the env and the agent with ``seed + i``.
        retries: further answers a move gets after an illegal one (the env's budget).
        max_plies: stop a game after this many plies (None: no cap).
        progress: show a tqdm bar ticking once per game.
        prompt: what the agent is shown: a preset name or a ``PromptCondition``
            (``chess_env.text.prompt_conditions``); None: the agent's own ``condition`` when it
            carries one (an "openai:MODEL?prompt=..." agent does), else "default".
    """
    if colors not in COLOR_SCHEDULES:
        raise ValueError(f"colors must be one of {list(COLOR_SCHEDULES)}, got {colors!r}")
    if games < 1:
        raise ValueError(f"games must be >= 1, got {games}")
    player, rival = TextPlayer(agent), make_player(opponent)
    opponent_name = opponent if isinstance(opponent, str) else rival.name
    schedule: list[Color] = [_color(colors, index) for index in range(games)]
    if prompt is None:
        prompt = getattr(agent, "condition", None) or "default"
    envs = {
        color: ChessTextEnv(
            rival, agent_color=color, retries=retries, max_plies=max_plies, prompt=prompt
        )
        for color in set(schedule)
    }
    records: list[GameRecord] = []
    pgns: list[str] = []
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=games, desc=f"{player.name} vs {opponent_name}", unit="game")
    try:
        for index, color in enumerate(schedule):
            record = _play(player, envs[color], seed + index)
            records.append(record)
            pgns.append(_pgn(envs[color].board, record, player.name, opponent_name, index + 1))
            if bar is not None:
                bar.update()
                bar.set_postfix(
                    {score: sum(r.score == score for r in records) for score in _SCORES}
                )
    finally:
        for env in envs.values():
            env.close()
        if bar is not None:
            bar.close()
    return EvaluationReport(
        agent=player.name, opponent=opponent_name, games=records, stats=_stats(records), pgns=pgns
    )


def _color(schedule: str, index: int) -> Color:
    if schedule == "alternate":
        return "white" if index % 2 == 0 else "black"
    return "white" if schedule == "white" else "black"


def _play(player: TextPlayer, env: ChessTextEnv, seed: int) -> GameRecord:
    """One game; thinking time is summed per move played, its illegal attempts included."""
    observation, info = env.reset(seed=seed)
    player.reset(seed=seed)
    moves, thinking, pending = 0, 0.0, 0.0
    timed_out = ended = False
    while not ended:
        try:
            text, seconds = player.move(observation)
        except TimeoutError:
            timed_out = True
            break
        pending += seconds
        observation, _, terminated, truncated, info = env.step(text)
        ended = terminated or truncated
        if info["agent_move"] is not None:
            moves, thinking, pending = moves + 1, thinking + pending, 0.0
    color: Color = info["agent_color"]
    if timed_out:
        outcome, result = "timeout", ("0-1" if color == "white" else "1-0")
    else:
        outcome, result = info["outcome"], info["result"]
    return GameRecord(
        seed=seed,
        agent_color=color,
        result=result,
        outcome=outcome,
        score=_score(result, color),
        plies=env.board.ply(),
        moves=moves,
        illegal_attempts=info["illegal_attempts"],
        timed_out=timed_out,
        thinking_time=thinking,
    )


def _score(result: str, color: Color) -> Literal["win", "loss", "draw"]:
    winner = {"1-0": "white", "0-1": "black"}.get(result)
    if winner is None:
        return "draw"
    return "win" if winner == color else "loss"


def _pgn(board: chess.Board, record: GameRecord, agent: str, opponent: str, round_: int) -> str:
    game = chess.pgn.Game.from_board(board)
    white, black = (agent, opponent) if record.agent_color == "white" else (opponent, agent)
    set_tags(
        game,
        Event="polyarena eval",
        Date=datetime.date.today().strftime("%Y.%m.%d"),
        Round=str(round_),
        White=white,
        Black=black,
        Result=record.result,
        Termination=_TERMINATION.get(
            record.outcome, "unterminated" if record.result == "*" else "normal"
        ),
    )
    return str(game)


def _stats(records: list[GameRecord]) -> AgentStats:
    moves = sum(record.moves for record in records)
    thinking = sum(record.thinking_time for record in records)
    return AgentStats(
        games_played=len(records),
        games_won=sum(record.score == "win" for record in records),
        games_lost=sum(record.score == "loss" for record in records),
        games_drawn=sum(record.score == "draw" for record in records),
        total_moves=moves,
        average_thinking_time=thinking / moves if moves else 0.0,
        illegal_moves_attempted=sum(record.illegal_attempts for record in records),
        timeouts=sum(record.timed_out for record in records),
    )


def write_report(report: EvaluationReport, directory: str | Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``games.pgn`` (one game after another) into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    report_path, pgn_path = directory / "report.json", directory / "games.pgn"
    report_path.write_text(report.model_dump_json(indent=2) + "\n")
    pgn_path.write_text("\n\n".join(report.pgns) + "\n")
    return report_path, pgn_path
