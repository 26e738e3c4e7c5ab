"""OpenEnv's own code against the chess server under uvicorn: its clients, models and validators.

DESIGN says OpenEnv's clients must drive our server; these tests use theirs, not ours. Needs the
``compat`` extra (``pip install -e .[compat]``; ``make test`` installs it); skipped without it.

- ``GenericEnvClient`` (WebSocket ``/ws``, sync and async) plays whole games with UCI, SAN and
  index actions, and surfaces refusals as the ``RuntimeError`` its users catch.
- ``MCPToolClient`` lists and calls the ``move`` tool over HTTP ``/mcp``; ``AutoEnv`` finds the
  server by its ``/health``.
- ``openenv validate --url`` (``validate_running_environment``) and the RFC 008 runtime graders
  (observation schema, state contract, reward) pass.
- Our HTTP and WebSocket payloads parse as OpenEnv's pydantic models (stateless HTTP included).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import chess
import httpx
import pytest

pytest.importorskip("openenv", reason="OpenEnv is the compat extra: pip install -e .[compat]")

from openenv.auto import AutoEnv
from openenv.cli._validation import validate_running_environment
from openenv.core.env_server import types as openenv_types
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient
from openenv.core.sync_client import SyncEnvClient
from openenv.validation.graders.runtime import (
    ObservationSchemaGrader,
    RewardWellFormedGrader,
    StateContractGrader,
)
from openenv.validation.manifest import RewardDeclaration
from openenv.validation.runtime.collector import collect_runtime_evidence
from openenv.validation.runtime.contracts import RuntimePlan, RuntimeReset
from openenv.validation.types import CheckStatus
from websockets.sync.client import connect

from chess_env.core.encoding import encode_move
from chess_env.serving.app import ChessAction, ChessAdapter, create_chess_app
from envkit.client import WSEnvClient

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from live_server import live_address

RESULTS = ("1-0", "0-1", "1/2-1/2")


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    with live_address(create_chess_app()) as served:
        yield served


@pytest.fixture
def env(address: str) -> Iterator[SyncEnvClient]:
    with GenericEnvClient(base_url=f"http://{address}").sync() as client:
        yield client


def action_for(move: chess.Move, board: chess.Board, turn: int) -> dict[str, Any]:
    """The three action forms in turn: UCI text, SAN text, the AlphaZero index."""
    form = turn % 3
    if form == 0:
        return {"move": move.uci()}
    if form == 1:
        return {"move": board.san(move)}
    return {"action": encode_move(move, board.turn)}


def test_a_whole_game_through_generic_env_client(env: SyncEnvClient) -> None:
    rng = random.Random(5)
    result = env.reset(seed=5, opponent="greedy", episode_id="game-5")
    observation = result.observation
    assert observation["fen"] == chess.STARTING_FEN and result.reward is None and not result.done
    board = chess.Board()
    assert sorted(observation["legal_moves"]) == sorted(m.uci() for m in board.legal_moves)
    steps = 0
    while not result.done:
        move = chess.Move.from_uci(rng.choice(observation["legal_moves"]))
        result = env.step(action_for(move, board, steps))
        steps += 1
        board.push(move)
        observation = result.observation
        if observation["opponent_move"] is not None:  # None only when our move ended the game
            reply = chess.Move.from_uci(observation["opponent_move"])
            assert reply in board.legal_moves
            board.push(reply)
        assert observation["fen"] == board.fen()
        assert sorted(observation["legal_moves"]) == sorted(m.uci() for m in board.legal_moves)
    outcome = board.outcome(claim_draw=True)
    assert outcome is not None and observation["result"] == outcome.result() in RESULTS
    assert result.reward == {chess.WHITE: 1.0, chess.BLACK: -1.0, None: 0.0}[outcome.winner]
    assert observation["legal_moves"] == [] and observation["outcome"]
    replayed = chess.Board()
    for move in board.move_stack:
        replayed.push_uci(move.uci())
    assert replayed.fen() == observation["fen"]
    state = env.state()
    assert state["step_count"] == steps and state["episode_id"] == "game-5"
    assert state["done"] is True and state["fen"] == observation["fen"]
    assert state["result"] == observation["result"] and state["opponent"] == "greedy"
    with pytest.raises(RuntimeError, match=r"episode is over.*\(code: EXECUTION_ERROR\)"):
        env.step({"move": "e4"})


@pytest.mark.parametrize(
    ("action", "said"),
    [
        ({"move": "e5e6"}, "no piece on e5"),
        ({"move": "Ke2"}, "king on e1 cannot move to e2"),
        ({"action": encode_move(chess.Move.from_uci("e2e5"), chess.WHITE)}, "illegal"),
        ({"action": 10**6}, "action"),
        ({"move": "e4", "action": 1}, "exactly one"),
        ({"pawn": "e4"}, "pawn"),
    ],
)
def test_a_refused_action_raises_and_the_game_goes_on(
    env: SyncEnvClient, action: dict[str, Any], said: str
) -> None:
    env.reset(seed=1)
    with pytest.raises(RuntimeError, match=r"\(code: VALIDATION_ERROR\)") as refused:
        env.step(action)
    assert said in str(refused.value)
    state = env.state()
    assert state["step_count"] == 0 and state["fen"] == chess.STARTING_FEN
    result = env.step({"move": "e4"})
    assert result.observation["ply"] == 2 and env.state()["step_count"] == 1


def test_a_step_before_any_reset_is_an_execution_error(env: SyncEnvClient) -> None:
    with pytest.raises(RuntimeError, match=r"reset first \(code: EXECUTION_ERROR\)"):
        env.step({"move": "e4"})
    assert env.reset().observation["ply"] == 0


def test_reset_options_reach_the_env(env: SyncEnvClient) -> None:
    result = env.reset(seed=2, opponent="greedy", agent_color="black", include_tensor=True)
    observation = result.observation
    assert observation["agent_color"] == "black" and observation["ply"] == 1
    assert observation["opponent_move"] in {m.uci() for m in chess.Board().legal_moves}
    assert len(observation["board_tensor"]) == 8
    with pytest.raises(RuntimeError, match="opponent"):
        env.reset(opponent="magnus")


def test_the_async_client_and_parallel_sessions(address: str) -> None:
    async def play() -> tuple[int, int]:
        async with (
            GenericEnvClient(base_url=f"ws://{address}") as first,
            GenericEnvClient(base_url=f"ws://{address}") as second,
        ):
            await asyncio.gather(first.reset(seed=1), second.reset(seed=1))
            await first.step({"move": "e4"})
            await first.step({"move": "d4"})
            await second.step({"move": "Nf3"})
            states = await asyncio.gather(first.state(), second.state())
            return states[0]["step_count"], states[1]["step_count"]

    assert asyncio.run(play()) == (2, 1)


def test_a_full_server_refuses_the_next_session_with_capacity_reached() -> None:
    with (
        live_address(create_chess_app(max_sessions=1)) as small,
        GenericEnvClient(base_url=f"http://{small}").sync() as holder,
    ):
        holder.reset()
        with (
            GenericEnvClient(base_url=f"http://{small}").sync() as refused,
            pytest.raises(RuntimeError, match="CAPACITY_REACHED"),
        ):
            refused.reset()
        assert holder.step({"move": "e4"}).observation["ply"] == 2


def test_auto_env_finds_the_server_by_its_health_route(address: str) -> None:
    client = AutoEnv.from_env("chess", base_url=f"http://{address}", skip_install=True)
    assert isinstance(client, GenericEnvClient)
    with client.sync() as env:
        assert env.reset(seed=0).observation["fen"] == chess.STARTING_FEN


def test_mcp_tool_client_lists_and_calls_the_move_tool(address: str) -> None:
    with MCPToolClient(base_url=f"http://{address}").sync() as env:
        (tool,) = env.list_tools()
        assert tool.name == "move" and "move" in tool.input_schema["properties"]
        played = env.call_tool("move", move="e4")
        assert played["isError"] is False
        assert played["structuredContent"]["observation"]["ply"] == 2
        refused = env.call_tool("move", move="a1a8")
        assert refused["isError"] is True and refused["structuredContent"]["reason"]
        # Its WebSocket (/ws?session_id=) resets the env its HTTP tool calls play in.
        assert env.reset(seed=8, agent_color="black").observation.agent_color == "black"
        replied = env.call_tool("move", move="e5")
        assert replied["isError"] is False
        assert replied["structuredContent"]["observation"]["agent_color"] == "black"
        assert env.state().step_count == 1


def test_the_benchmark_peer_is_our_env_under_openenv_create_app() -> None:
    """benchmarks.server_throughput's OpenEnv create_app server: the same games as ours."""
    from benchmarks.server_throughput import live_server, openenv_app

    with (
        closing(ChessAdapter()) as adapter,
        live_server(openenv_app, same_process=False) as peer,
        GenericEnvClient(base_url=f"http://{peer}").sync() as env,
    ):
        ours, theirs = adapter.reset(seed=4), env.reset(seed=4)
        assert theirs.observation["fen"] == ours.observation.fen
        for turn in range(30):
            move = ours.observation.legal_moves[turn % len(ours.observation.legal_moves)]
            ours, theirs = adapter.step(ChessAction(move=move)), env.step({"move": move})
            assert theirs.observation["fen"] == ours.observation.fen
            assert theirs.observation["ascii"] == ours.observation.ascii
            assert (theirs.reward, theirs.done) == (ours.reward, ours.done)
            if ours.done:
                break
        assert env.state()["step_count"] == turn + 1


def test_envkit_ws_client_drives_openenv_own_server_and_ours() -> None:
    """``WSEnvClient`` against OpenEnv's ``create_app`` and ours (two of the benchmark's set-ups):
    the same game as in process, then game after game through the benchmark's contender."""
    from benchmarks.server_throughput import envkit_client_contender, live_server, openenv_app

    with (
        closing(ChessAdapter()) as adapter,
        live_server(openenv_app, same_process=False) as peer,
        live_server(create_chess_app, same_process=False) as ours_address,
        WSEnvClient(f"http://{peer}") as client,
    ):
        ours, theirs = adapter.reset(seed=5), client.reset(seed=5)
        for turn in range(30):
            assert theirs.observation["fen"] == ours.observation.fen
            assert (theirs.reward, theirs.done) == (ours.reward, ours.done)
            move = ours.observation.legal_moves[turn % len(ours.observation.legal_moves)]
            ours, theirs = adapter.step(ChessAction(move=move)), client.step({"move": move})
        assert client.state()["step_count"] == 30
        for address in (peer, ours_address):
            with closing(envkit_client_contender(address)(3)) as stream:
                latencies = list(itertools.islice(stream, 400))  # over a game's end
            assert len(latencies) == 400 and min(latencies) > 0


def test_openenv_validate_url_passes(address: str) -> None:
    report = validate_running_environment(f"http://{address}")
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert report["passed"] and not failed, failed
    assert report["mode"] == "simulation" and report["standard_profile"] == "openenv-http/1.x"


def scripted_moves(seed: int, count: int) -> list[dict[str, Any]]:
    """``count`` actions that stay legal against the seeded greedy opponent (played in process)."""
    with closing(ChessAdapter()) as adapter:
        result = adapter.reset(seed=seed, opponent="greedy")
        actions = []
        for _ in range(count):
            move = result.observation.legal_moves[0]
            actions.append({"move": move})
            result = adapter.step(ChessAction(move=move))
        return actions


@pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager")
def test_the_rfc_008_runtime_graders_pass(address: str) -> None:
    plan = RuntimePlan(
        plan_schema_version="1",
        reset=RuntimeReset(episode_id="probe-1", seed=3, options={"opponent": "greedy"}),
        actions=scripted_moves(3, 12),
    )
    evidence = collect_runtime_evidence(f"http://{address}", plan, episode_timeout_s=30)
    assert evidence.failure_reason is None
    assert [e.operation for e in evidence.exchanges].count("step") == 12
    manifest = SimpleNamespace(reward=RewardDeclaration(range=(-1.0, 1.0), floor_margin=0.0))
    subject = SimpleNamespace(runtime_evidence=evidence, manifest=manifest)
    for grader in (ObservationSchemaGrader(), StateContractGrader(), RewardWellFormedGrader()):
        check = grader.run(subject)
        assert check.status == CheckStatus.PASS, (grader.check_id, check.evidence)


def test_http_payloads_parse_as_openenv_models(address: str) -> None:
    with httpx.Client(base_url=f"http://{address}") as http:
        openenv_types.HealthResponse.model_validate(http.get("/health").json())
        metadata = openenv_types.EnvironmentMetadata.model_validate(http.get("/metadata").json())
        assert metadata.name == "chess" and metadata.version
        schema = openenv_types.SchemaResponse.model_validate(http.get("/schema").json())
        assert {"move", "action"} <= set(schema.action["properties"])
        # Stateless HTTP, as OpenEnv's: without a session each call gets a fresh, reset env.
        request = openenv_types.StepRequest(action={"move": "e4"}, timeout_s=5, request_id="r1")
        stepped = http.post("/step", json=request.model_dump(exclude_none=True)).json()
        step = openenv_types.StepResponse.model_validate(stepped)
        assert step.observation["ply"] == 2 and step.reward == 0.0 and not step.done
        state = openenv_types.State.model_validate(http.get("/state").json())
        assert state.step_count == 0 and state.model_extra["fen"] == chess.STARTING_FEN
        # Our extension: /reset opens a session and names it; the rest is OpenEnv's shape.
        reset = http.post("/reset", json=openenv_types.ResetRequest(seed=1).model_dump()).json()
        session_id = reset.pop("session_id")
        assert openenv_types.ResetResponse.model_validate(reset).observation["ply"] == 0
        assert http.delete(f"/sessions/{session_id}").status_code == 204


def test_websocket_frames_parse_as_openenv_models(address: str) -> None:
    with connect(f"ws://{address}/ws") as ws:

        def ask(message: Any) -> dict[str, Any]:
            ws.send(message.model_dump_json())
            frame: dict[str, Any] = json.loads(ws.recv(timeout=10))
            return frame

        reset = ask(openenv_types.WSResetMessage(data={"seed": 1, "episode_id": "e"}))
        openenv_types.WSObservationResponse.model_validate(reset)
        step = ask(openenv_types.WSStepMessage(data={"move": "e4"}))
        openenv_types.WSObservationResponse.model_validate(step)
        state = openenv_types.WSStateResponse.model_validate(ask(openenv_types.WSStateMessage()))
        assert state.data["episode_id"] == "e" and state.data["step_count"] == 1
        error = ask(openenv_types.WSStepMessage(data={"move": "a1a8"}))
        refusal = openenv_types.WSErrorResponse.model_validate(error).data
        assert refusal["code"] in {code.value for code in openenv_types.WSErrorCode}


@pytest.mark.parametrize("awaited", [False, True], ids=["sync", "awaited"])
def test_the_benchmarks_generic_client_contenders_play_games_to_the_end(
    address: str, awaited: bool
) -> None:
    """The benchmark's GenericEnvClient set-ups: OpenEnv's client, game after game."""
    from benchmarks.server_throughput import generic_client_contender

    stream = generic_client_contender(address, awaited=awaited)(2)
    with closing(stream):
        latencies = list(
            itertools.islice(stream, 400)
        )  # a game ends within 256 steps (512-ply cap)
    assert len(latencies) == 400 and min(latencies) > 0
