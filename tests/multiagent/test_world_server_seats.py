"""The world server's seats: served players for the seats no client plays (only the kinds a
server makes), and several clients playing several seats of one episode, each with its seat
token; nobody acts for a seat they do not hold, and every refusal leaves the episode as it was.

Two clients stepping at once run in two threads: a step waits for the other seat's action, and
whichever arrives last advances the turn, so the outcome does not depend on their order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from envkit.server import EpisodeStateError, UnknownSessionError
from multiagent.config import SimulationConfig
from multiagent.play import play_episode
from multiagent.players import (
    ScriptedPlayer,
    SeatTurn,
    WorldPlayer,
    make_world_player,
    register_world_player,
    unregister_world_player,
)
from multiagent.server import WorldAction, WorldAdapter, create_world_app
from multiagent.server_episodes import EpisodeTable
from multiagent.worlds import load_world

TURNS = 12
MOVES = {
    "Forager_1": ["up", "left", "down", "right", "stay"],
    "Forager_2": ["down", "down", "right", "stay", "left", "up", "up"],
    "Forager_3": ["left", "stay", "up"],
}


def short_forage(turns: int = TURNS) -> SimulationConfig:
    world = load_world("forage")
    simulation = world.simulation.model_copy(update={"max_turns": turns})
    return world.model_copy(update={"simulation": simulation})


def move_of(seat: str, turn: int) -> dict[str, str]:
    return {"move": MOVES[seat][turn % len(MOVES[seat])]}


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_world_app(short_forage(), client_seeds=True, max_sessions=1000)


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=4) as executor:
        yield executor


def reset(client: TestClient, **options: Any) -> dict[str, Any]:
    reply = client.post("/reset", json=options)
    assert reply.status_code == 200, reply.text
    return reply.json()


def step(client: TestClient, session_id: str, action: dict[str, Any]) -> dict[str, Any]:
    reply = client.post("/step", json={"action": action, "session_id": session_id})
    assert reply.status_code == 200, reply.text
    return reply.json()


def state(client: TestClient, session_id: str) -> dict[str, Any]:
    reply = client.get("/state", params={"session_id": session_id})
    assert reply.status_code == 200, reply.text
    return reply.json()


def refused(reply: Any, status: int, code: str, reason: str) -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    body: dict[str, Any] = reply.json()
    assert (body["code"], body["reason"]) == (code, reason), body
    return body


def scripted(seat: str, seen: list[dict[str, Any]] | None = None) -> WorldPlayer:
    """The seat's fixed moves; ``seen`` collects the envelope it was shown each turn."""

    def policy(turn: SeatTurn) -> dict[str, str]:
        if seen is not None:
            seen.append(turn.envelope.model_dump(mode="json", exclude_unset=True))
        return move_of(seat, turn.turn)

    return ScriptedPlayer(policy, name=f"moves of {seat}")


def offline_returns(seed: int, players: dict[str, WorldPlayer]) -> dict[str, float]:
    return play_episode(short_forage(), players, seed=seed).returns


# --- served players ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "served",
    [
        {},  # every other seat random, today's behaviour
        {"Forager_2": "noop", "Forager_3": "noop"},
        {"Forager_2": "noop"},  # Forager_3, not named: random
        {"Forager_3": "random"},
    ],
)
def test_served_players_play_as_play_episode_with_the_same_players(
    app: FastAPI, served: dict[str, str]
) -> None:
    client = TestClient(app)
    first = reset(client, agent="Forager_1", seed=5, players=served)
    session = first["session_id"]
    expected_players = {"Forager_2": "random", "Forager_3": "random", **served}
    assert state(client, session)["players"] == expected_players
    envelopes, total, done = [first["observation"]["envelope"]], 0.0, False
    while not done:
        reply = step(client, session, move_of("Forager_1", len(envelopes) - 1))
        envelopes.append(reply["observation"]["envelope"])
        total, done = total + reply["reward"], reply["done"]
    config = short_forage()
    others = {seat: make_world_player(spec, config) for seat, spec in expected_players.items()}
    seen: list[dict[str, Any]] = []
    returns = offline_returns(5, {"Forager_1": scripted("Forager_1", seen), **others})
    assert len(envelopes) == TURNS + 1 and total == pytest.approx(returns["Forager_1"])
    assert envelopes[:-1] == seen  # what the seat saw, turn by turn: the others moved alike
    noop = {seat: make_world_player("noop", config) for seat in ("Forager_2", "Forager_3")}
    unlike: list[dict[str, Any]] = []
    offline_returns(5, {"Forager_1": scripted("Forager_1", unlike), **noop})
    assert (unlike == seen) is (expected_players == {"Forager_2": "noop", "Forager_3": "noop"})


def test_a_registered_kind_is_served_and_a_failing_one_plays_the_fallback(app: FastAPI) -> None:
    class Broken(WorldPlayer):
        def act(self, turn: SeatTurn) -> dict[str, Any]:
            raise RuntimeError("out of order")

    def envelopes_with(spec: str) -> list[dict[str, Any]]:
        client = TestClient(app)
        session = reset(client, seed=2, players={"Forager_2": spec, "Forager_3": "noop"})
        envelopes = [session["observation"]["envelope"]]
        for turn in range(TURNS - 1):
            reply = step(client, session["session_id"], move_of("Forager_1", turn))
            envelopes.append(reply["observation"]["envelope"])
        return envelopes

    def offline(second: WorldPlayer) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        noop = make_world_player("noop", short_forage())
        players = {"Forager_1": scripted("Forager_1", seen), "Forager_2": second, "Forager_3": noop}
        offline_returns(2, players)
        return seen

    register_world_player("wanderer", lambda spec, config: scripted("Forager_2"))
    register_world_player("broken", lambda spec, config: Broken())
    try:
        assert envelopes_with("wanderer") == offline(scripted("Forager_2"))
        fallback = offline(make_world_player("noop", short_forage()))
        assert envelopes_with("broken") == fallback != offline(scripted("Forager_2"))
    finally:
        unregister_world_player("wanderer")
        unregister_world_player("broken")


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("openai:gpt-4o-mini", "openai"),
        ("model:/etc/passwd", "model"),
        ("scripted:os:system", "scripted"),
        ("genius", None),
        ("random:3", None),
    ],
)
def test_kinds_the_server_does_not_make_are_refused_naming_the_seat_and_the_served_kinds(
    app: FastAPI, spec: str, kind: str | None
) -> None:
    client = TestClient(app)
    playing = reset(client, agent="Forager_1", seed=1)["session_id"]
    step(client, playing, {"move": "up"})
    before = state(client, playing)
    reply = client.post(
        "/reset", json={"session_id": playing, "players": {"Forager_2": "noop", "Forager_3": spec}}
    )
    body = refused(reply, 422, "VALIDATION_ERROR", "invalid_player")
    assert body["detail"].startswith("players.Forager_3: ")
    assert [error["loc"] for error in body["errors"]] == [["players", "Forager_3"]]
    if kind is not None:
        assert f"does not make {kind} players" in body["detail"]
        assert "(it makes: random, noop)" in body["detail"]
    else:
        assert "random" in body["detail"] and "noop" in body["detail"]
        assert "openai" not in body["detail"]  # only the kinds a server makes are offered
    assert state(client, playing) == before  # the session's episode goes on, untouched
    assert step(client, playing, {"move": "up"})["observation"]["turn"] == 2


def test_open_and_players_name_other_seats_once(app: FastAPI) -> None:
    client = TestClient(app)
    cases = [
        {"agent": "Forager_1", "open": ["Forager_1"]},
        {"agent": "Forager_1", "open": ["Forager_9"]},
        {"agent": "Forager_1", "open": ["Forager_2", "Forager_2"]},
        {"agent": "Forager_1", "open": ["Forager_2"], "players": {"Forager_2": "noop"}},
    ]
    for options in cases:
        body = refused(
            client.post("/reset", json=options), 422, "VALIDATION_ERROR", "unknown_agent"
        )
        assert body["errors"][0]["loc"] in (["open"], ["players"])


# --- several clients, one episode -----------------------------------------------------------


def open_episode(app: FastAPI, seed: int | None = 7, **options: Any) -> dict[str, Any]:
    """A creator on Forager_1 opening Forager_2, Forager_3 served noop; its reply's parts."""
    creator = TestClient(app)
    fields = {"agent": "Forager_1", "open": ["Forager_2"], "players": {"Forager_3": "noop"}}
    first = reset(creator, **fields, **options, **({} if seed is None else {"seed": seed}))
    metadata = first["metadata"]
    return {
        "client": creator,
        "first": first,
        "session": first["session_id"],
        "episode": metadata["episode_id"],
        "tokens": metadata["seat_tokens"],
    }


def join(app: FastAPI, episode: str, seat: str, token: str | None) -> tuple[TestClient, Any]:
    client = TestClient(app)
    body = {"join": episode, "agent": seat}
    if token is not None:
        body["seat_token"] = token
    return client, client.post("/reset", json=body)


def play_together(
    app: FastAPI, pool: ThreadPoolExecutor, seed: int
) -> dict[str, list[dict[str, Any]]]:
    """Two clients, one seat each, to the end; every reply each got (ids taken out)."""
    created = open_episode(app, seed=seed)
    joiner, joined = join(app, created["episode"], "Forager_2", created["tokens"]["Forager_2"])
    assert joined.status_code == 200, joined.text
    seats = {
        "Forager_1": (created["client"], created["session"]),
        "Forager_2": (joiner, joined.json()["session_id"]),
    }
    replies: dict[str, list[dict[str, Any]]] = {
        "Forager_1": [created["first"]],
        "Forager_2": [joined.json()],
    }
    for turn in range(TURNS):
        futures: dict[str, Future[dict[str, Any]]] = {
            seat: pool.submit(step, client, session, move_of(seat, turn))
            for seat, (client, session) in seats.items()
        }
        for seat, future in futures.items():
            replies[seat].append(future.result(timeout=60))
    for seat, (client, session) in seats.items():
        replies[seat].append(state(client, session))
    strip = {"session_id", "metadata", "episode_id"}
    return {
        seat: [{k: v for k, v in reply.items() if k not in strip} for reply in seat_replies]
        for seat, seat_replies in replies.items()
    }


def test_two_clients_play_two_seats_of_one_episode_to_the_end(
    app: FastAPI, pool: ThreadPoolExecutor
) -> None:
    replies = play_together(app, pool, seed=7)
    for seat, seat_replies in replies.items():
        *steps, final = seat_replies
        for turn, reply in enumerate(steps):
            observation = reply["observation"]
            assert observation["agent"] == observation["envelope"]["observer"] == seat
            assert observation["turn"] == turn
        assert steps[-1]["done"] is True and final["done"] is True and final["turn"] == TURNS
        assert final["clients"] == ["Forager_1", "Forager_2"] and final["waiting_for"] == []
        assert final["players"] == {"Forager_3": "noop"}
    assert "seed" in replies["Forager_1"][-1] and "seed" not in replies["Forager_2"][-1]
    seen: dict[str, list[dict[str, Any]]] = {"Forager_1": [], "Forager_2": []}
    offline = offline_returns(
        7,
        {
            "Forager_1": scripted("Forager_1", seen["Forager_1"]),
            "Forager_2": scripted("Forager_2", seen["Forager_2"]),
            "Forager_3": make_world_player("noop", short_forage()),
        },
    )
    for seat in ("Forager_1", "Forager_2"):
        served_return = sum(reply["reward"] for reply in replies[seat][1:-1])
        assert served_return == pytest.approx(offline[seat])
        assert [reply["observation"]["envelope"] for reply in replies[seat][:-2]] == seen[seat]
    # each seat sees its own envelope: the two views of one turn differ
    assert replies["Forager_1"][3]["observation"] != replies["Forager_2"][3]["observation"]


def test_with_client_seeds_two_clients_replay_the_same_episode(
    app: FastAPI, pool: ThreadPoolExecutor
) -> None:
    assert play_together(app, pool, seed=11) == play_together(app, pool, seed=11)
    assert play_together(app, pool, seed=11) != play_together(app, pool, seed=12)


def test_the_creator_reply_carries_the_tokens_once_and_the_state_never(app: FastAPI) -> None:
    created = open_episode(app)
    tokens = created["tokens"]
    assert sorted(tokens) == ["Forager_1", "Forager_2"] and len(set(tokens.values())) == 2
    assert all(len(token) >= 43 for token in tokens.values())
    shown = state(created["client"], created["session"])
    assert shown["episode_id"] == created["episode"]
    text = str(shown) + str(created["first"]["observation"])
    assert all(token not in text for token in tokens.values())
    solo = reset(TestClient(app), agent="Forager_1")
    assert "metadata" not in solo  # no open seat: no episode to join, no token


def snapshot(created: dict[str, Any], *others: tuple[TestClient, str]) -> list[dict[str, Any]]:
    sessions = [(created["client"], created["session"]), *others]
    return [state(client, session) for client, session in sessions]


def test_joins_without_the_seats_token_are_refused_and_change_nothing(app: FastAPI) -> None:
    created = open_episode(app)
    episode, tokens = created["episode"], created["tokens"]
    joiner, joined = join(app, episode, "Forager_2", tokens["Forager_2"])
    joined_session = (joiner, joined.json()["session_id"])
    before = snapshot(created, joined_session)
    attempts = [
        ("Forager_2", None, 401, "UNAUTHORIZED", "missing_seat_token"),
        ("Forager_2", "", 401, "UNAUTHORIZED", "missing_seat_token"),
        ("Forager_2", "guess", 403, "UNAUTHORIZED", "wrong_seat_token"),
        ("Forager_2", tokens["Forager_2"] + "x", 403, "UNAUTHORIZED", "wrong_seat_token"),
        ("Forager_1", tokens["Forager_2"], 403, "UNAUTHORIZED", "wrong_seat_token"),
        ("Forager_2", tokens["Forager_1"], 403, "UNAUTHORIZED", "wrong_seat_token"),
        ("Forager_3", tokens["Forager_2"], 403, "UNAUTHORIZED", "server_seat"),
        ("Forager_3", "guess", 403, "UNAUTHORIZED", "wrong_seat_token"),
        ("Forager_9", tokens["Forager_2"], 422, "VALIDATION_ERROR", "unknown_agent"),
    ]
    for seat, token, status, code, reason in attempts:
        _, reply = join(app, episode, seat, token)
        body = refused(reply, status, code, reason)
        assert all(secret not in body["detail"] for secret in tokens.values())
        assert snapshot(created, joined_session) == before, (seat, reason)
    _, unknown = join(app, "no-such-episode", "Forager_2", tokens["Forager_2"])
    refused(unknown, 404, "SESSION_ERROR", "unknown_episode")
    own_options: list[tuple[str, Any]] = [
        ("seed", 3),
        ("open", ["Forager_3"]),
        ("players", {"Forager_3": "random"}),
    ]
    for option, value in own_options:
        body = {"join": episode, "agent": "Forager_2", "seat_token": tokens["Forager_2"]}
        reply = TestClient(app).post("/reset", json={**body, option: value})
        errors = refused(reply, 422, "VALIDATION_ERROR", "invalid_option")["errors"]
        assert [error["loc"] for error in errors] == [[option]]
    no_seat = TestClient(app).post("/reset", json={"join": episode, "seat_token": "x"})
    refused(no_seat, 422, "VALIDATION_ERROR", "invalid_option")
    token_alone = TestClient(app).post("/reset", json={"seat_token": tokens["Forager_2"]})
    refused(token_alone, 422, "VALIDATION_ERROR", "invalid_option")
    assert snapshot(created, joined_session) == before


def test_a_hosted_server_refuses_a_joiners_seed_too() -> None:
    hosted = create_world_app(short_forage())
    created = open_episode(hosted, seed=None)
    token = created["tokens"]["Forager_2"]
    body = {"join": created["episode"], "agent": "Forager_2", "seat_token": token, "seed": 3}
    reply = TestClient(hosted).post("/reset", json=body)
    refused(reply, 422, "VALIDATION_ERROR", "invalid_option")
    assert "seed" not in state(created["client"], created["session"])


def wait_until(check: Callable[[], bool]) -> None:
    """Poll the server until ``check()`` holds (what another client's thread has done is
    visible only through the server); fails rather than hangs."""
    for _ in range(10_000):
        if check():
            return
    pytest.fail("the server never reached the expected state")


def test_a_second_action_in_a_turn_is_refused_and_a_taken_over_session_stops(
    app: FastAPI, pool: ThreadPoolExecutor
) -> None:
    created = open_episode(app)
    tokens = created["tokens"]
    joiner, joined = join(app, created["episode"], "Forager_2", tokens["Forager_2"])
    second = joined.json()["session_id"]
    waiting = pool.submit(step, created["client"], created["session"], {"move": "up"})
    wait_until(lambda: state(joiner, second)["waiting_for"] == ["Forager_2"])
    # The creator's seat, taken over with its token (a client coming back), acts again:
    comeback, rejoined = join(app, created["episode"], "Forager_1", tokens["Forager_1"])
    assert rejoined.status_code == 200, rejoined.text
    again = comeback.post(
        "/step", json={"action": {"move": "down"}, "session_id": rejoined.json()["session_id"]}
    )
    body = refused(again, 409, "EXECUTION_ERROR", "already_acted")
    assert "Forager_1 has already acted on turn 0" in body["detail"]
    assert "Forager_2" in body["detail"]
    assert state(joiner, second)["turn"] == 0
    assert state(joiner, second)["waiting_for"] == ["Forager_2"]
    moved = step(joiner, second, {"move": "stay"})
    assert moved["observation"]["turn"] == 1
    assert waiting.result(timeout=60)["observation"]["turn"] == 1  # its action counted
    stale = created["client"].post(
        "/step", json={"action": {"move": "up"}, "session_id": created["session"]}
    )
    refused(stale, 409, "EXECUTION_ERROR", "seat_taken")
    assert state(joiner, second)["turn"] == 1


def test_a_step_that_waits_too_long_is_withdrawn_and_changes_nothing() -> None:
    app = create_world_app(short_forage(), client_seeds=True, turn_timeout=0)
    created = open_episode(app)
    joiner, joined = join(app, created["episode"], "Forager_2", created["tokens"]["Forager_2"])
    before = snapshot(created, (joiner, joined.json()["session_id"]))
    assert before[0]["waiting_for"] == ["Forager_1", "Forager_2"]
    reply = created["client"].post(
        "/step", json={"action": {"move": "up"}, "session_id": created["session"]}
    )
    body = refused(reply, 409, "EXECUTION_ERROR", "turn_timeout")
    assert "waiting for Forager_2" in body["detail"] and "withdrawn" in body["detail"]
    assert snapshot(created, (joiner, joined.json()["session_id"])) == before


def test_an_episode_is_dropped_once_every_client_left_it() -> None:
    table = EpisodeTable()
    world = short_forage()
    creator = WorldAdapter(world, client_seeds=True, episodes=table, turn_timeout=0)
    joiner = WorldAdapter(world, episodes=table, turn_timeout=0)
    tokens = creator.reset(seed=0, agent="Forager_1", open=["Forager_2"]).metadata["seat_tokens"]
    episode = creator.state()["episode_id"]
    joiner.reset(join=episode, agent="Forager_2", seat_token=tokens["Forager_2"])
    assert joiner.state()["episode_id"] == episode and len(table) == 1
    creator.close()
    assert len(table) == 1  # the joiner still plays
    creator.reset(join=episode, agent="Forager_1", seat_token=tokens["Forager_1"])
    creator.reset(agent="Forager_3")  # a new episode: it leaves the shared one
    assert len(table) == 2
    joiner.close()
    assert len(table) == 1  # only the creator's new episode is left
    late = WorldAdapter(world, episodes=table)
    with pytest.raises(UnknownSessionError, match="no episode") as refusal:
        late.reset(join=episode, agent="Forager_2", seat_token=tokens["Forager_2"])
    assert refusal.value.reason == "unknown_episode"


def test_a_joiner_that_takes_another_seat_of_its_episode_leaves_the_first() -> None:
    table = EpisodeTable()
    world = short_forage()
    creator = WorldAdapter(world, client_seeds=True, episodes=table, turn_timeout=0)
    opened = creator.reset(seed=0, agent="Forager_1", open=["Forager_2", "Forager_3"])
    tokens, episode = opened.metadata["seat_tokens"], opened.metadata["episode_id"]
    roamer = WorldAdapter(world, episodes=table, turn_timeout=0)
    roamer.reset(join=episode, agent="Forager_2", seat_token=tokens["Forager_2"])
    roamer.reset(join=episode, agent="Forager_3", seat_token=tokens["Forager_3"])
    other = WorldAdapter(world, episodes=table, turn_timeout=0)
    other.reset(join=episode, agent="Forager_2", seat_token=tokens["Forager_2"])
    assert roamer.state()["agent"] == "Forager_3"
    with pytest.raises(EpisodeStateError, match="waiting for Forager_1, Forager_2;"):
        roamer.step(WorldAction(move="up"))  # Forager_2 is the other session's now
    creator.close()
    other.close()
    assert len(table) == 1  # the roamer still holds Forager_3
    roamer.close()
    assert len(table) == 0


def test_a_joiner_over_the_websocket_plays_with_a_creator_over_http(
    app: FastAPI, pool: ThreadPoolExecutor
) -> None:
    created = open_episode(app)
    token = created["tokens"]["Forager_2"]
    joiner = TestClient(app)
    with joiner.websocket_connect("/ws") as ws:
        join_data = {"join": created["episode"], "agent": "Forager_2", "seat_token": token}
        ws.send_text(json.dumps({"type": "reset", "data": join_data}))
        assert ws.receive_json()["data"]["observation"]["agent"] == "Forager_2"
        for turn in range(3):
            creator_step = pool.submit(
                step, created["client"], created["session"], move_of("Forager_1", turn)
            )
            ws.send_text(json.dumps({"type": "step", "data": move_of("Forager_2", turn)}))
            frame = ws.receive_json()
            assert frame["type"] == "observation", frame
            assert frame["data"]["observation"]["envelope"]["observer"] == "Forager_2"
            mine = creator_step.result(timeout=60)["observation"]
            assert mine["envelope"]["observer"] == "Forager_1" and mine["turn"] == turn + 1
        ws.send_text(json.dumps({"type": "state"}))
        assert ws.receive_json()["data"]["turn"] == 3


def test_clients_talk_and_whisper_and_hear_each_other_with_the_next_turn(
    pool: ThreadPoolExecutor,
) -> None:
    app = create_world_app("commons", client_seeds=True)
    creator = TestClient(app)
    fields = {"agent": "Fisher_1", "open": ["Fisher_2"], "players": {"Fisher_3": "noop"}}
    first = reset(creator, **fields, seed=3)
    metadata = first["metadata"]
    joiner, joined = join(app, metadata["episode_id"], "Fisher_2",
                          metadata["seat_tokens"]["Fisher_2"])  # fmt: skip
    assert joined.status_code == 200, joined.text
    said = {
        "Fisher_1": {"harvest": 5, "talk": "let us take five each"},
        "Fisher_2": {"harvest": 5, "whisper": {"to": "Fisher_1", "text": "agreed"}},
    }
    sessions = {"Fisher_1": (creator, first["session_id"]),
                "Fisher_2": (joiner, joined.json()["session_id"])}  # fmt: skip
    futures = {seat: pool.submit(step, client, session, said[seat])
               for seat, (client, session) in sessions.items()}  # fmt: skip
    heard = {seat: future.result(timeout=60)["observation"]["envelope"]["messages"]
             for seat, future in futures.items()}  # fmt: skip
    assert heard["Fisher_1"] == [
        {"turn": 0, "sender": "Fisher_2", "channel": "whisper", "text": "agreed"}
    ]  # fmt: skip
    assert [(m["sender"], m["channel"], m["text"]) for m in heard["Fisher_2"]] == [
        ("Fisher_1", "talk", "let us take five each")
    ]
    too_long = step_reply(creator, first["session_id"], {"harvest": 5, "talk": "x" * 281})
    assert too_long.status_code == 422 and "talk" in too_long.text


def step_reply(client: TestClient, session_id: str, action: dict[str, Any]) -> Any:
    return client.post("/step", json={"action": action, "session_id": session_id})
