"""The clients against a token-protected live server: both transports carry the token."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chess_env.serving.app import create_chess_app
from envkit.client import AsyncEnvClient, EnvClient, ServerError

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from live_server import live_address

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with live_address(create_chess_app(token=TOKEN)) as address:
        yield f"http://{address}"


def test_http_client_with_the_token_plays_and_without_it_is_refused(base_url: str) -> None:
    with EnvClient(base_url, token=TOKEN) as client:
        first = client.reset(seed=1)
        result = client.step({"move": first.observation["legal_moves"][0]})
        assert result.observation["fen"] != first.observation["fen"]
    with EnvClient(base_url) as anonymous, pytest.raises(ServerError) as refused:
        anonymous.reset(seed=1)
    assert refused.value.status == 401


def test_websocket_client_with_the_token_plays_and_without_it_is_refused(base_url: str) -> None:
    async def play() -> str:
        async with AsyncEnvClient(base_url, token=TOKEN) as client:
            first = await client.reset(seed=1)
            result = await client.step({"move": first.observation["legal_moves"][0]})
            return str(result.observation["fen"])

    async def anonymous() -> None:
        async with AsyncEnvClient(base_url) as client:
            await client.reset(seed=1)

    assert asyncio.run(play())
    with pytest.raises(ServerError, match="403"):
        asyncio.run(anonymous())
