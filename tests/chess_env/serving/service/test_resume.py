"""A restarted service plays on: its clients' tokens still work, its agents still move, an aborted
game stays aborted, and no token is ever written down, only its digest."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from chess_env.serving.game_store import StateManager
from chess_env.serving.service import ChessService, CreateGameRequest, MoveRequest
from chess_env.serving.service.errors import SeatForbiddenError
from envkit.server.errors import EpisodeStateError

REMOTE = {"player": "remote", "name": "Me"}
GREEDY = {"player": "greedy", "name": "G", "seed": 3}


def service_on(archive: Path) -> ChessService:
    return ChessService(StateManager(max_games=10, archive_dir=archive), listing="all")


def test_a_restarted_service_takes_its_games_back_with_their_tokens_and_agents(
    tmp_path: Path,
) -> None:
    async def first_run() -> tuple[str, str, str, str, str]:
        service = service_on(tmp_path)
        request = CreateGameRequest.model_validate({"white": REMOTE, "black": GREEDY})
        created = await service.create(request)
        game_id, tokens = created.game.game_id, created.tokens
        await service.move(game_id, MoveRequest(move="e4"), tokens.white or "")
        both = CreateGameRequest.model_validate({"white": REMOTE, "black": REMOTE})
        other = await service.create(both)
        await service.close()  # unfinished games are resumed, whether closed or killed
        return game_id, tokens.white or "", tokens.creator, other.game.game_id, other.tokens.creator

    game_id, white, creator, other_id, other_creator = asyncio.run(first_run())
    database = (tmp_path / "games.sqlite3").read_bytes()
    for secret in (white, creator, other_creator):
        assert secret.encode() not in database  # only digests are kept

    async def second_run() -> tuple[list[str], str | None]:
        service = service_on(tmp_path)
        await service.start()
        with pytest.raises(SeatForbiddenError):
            await service.move(game_id, MoveRequest(move="d4"), creator)
        game = await service.move(game_id, MoveRequest(move="d4"), white)  # greedy answers
        await service.abort(other_id, other_creator)
        with pytest.raises(EpisodeStateError, match="aborted"):
            await service.move(other_id, MoveRequest(move="e4", color="white"), other_creator)
        summaries = {summary.game_id: summary for summary in service.summaries(None)}
        await service.close()
        return [move.uci_notation for move in game.move_history], summaries[game_id].black_player

    moves, black = asyncio.run(second_run())
    assert moves[:1] == ["e2e4"] and moves[2:3] == ["d2d4"] and len(moves) == 4
    assert black == "greedy"

    async def third_run() -> list[str]:
        service = service_on(tmp_path)
        ids = [game.game_id for game in service.games.list_games()]
        await service.close()
        return ids

    resumed = asyncio.run(third_run())
    assert game_id in resumed and other_id not in resumed  # an aborted game stays down


def test_a_resumed_engine_game_whose_engine_cannot_be_had_is_that_sides_loss(
    tmp_path: Path,
) -> None:
    async def first_run() -> str:
        service = service_on(tmp_path)
        request = CreateGameRequest.model_validate({"white": REMOTE, "black": GREEDY})
        game_id = (await service.create(request)).game.game_id
        await service.close()
        return game_id

    game_id = asyncio.run(first_run())
    manager = StateManager(max_games=10, archive_dir=tmp_path)
    (resumed,) = manager.resumed_games()
    data = resumed.service_data
    assert data is not None
    data["seats"]["black"]["player"] = "no-such-player"  # as if its kind were unregistered
    manager.attach_service_data(game_id, data)
    manager.close()

    async def second_run() -> tuple[str, str | None]:
        service = service_on(tmp_path)
        game = service.get(game_id)
        await service.close()
        return game.status, game.termination

    assert asyncio.run(second_run()) == ("resigned", "agent_error")
