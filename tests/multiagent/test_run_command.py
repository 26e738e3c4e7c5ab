"""``python -m multiagent run``: episodes with a player in every seat, a table or JSON out,
progress on stderr, and one line with exit status 2 for a bad world, seat or spec."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from multiagent.__main__ import main
from multiagent.play import play_episode
from multiagent.players import make_world_player
from multiagent.worlds import load_world, world_path

PROG = "python -m multiagent run"


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict]:
    assert main(["run", *args, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err.count("\n") == len(json.loads(out))  # one progress line per episode
    return json.loads(out)


def test_json_holds_one_outcome_per_episode_as_play_episode_gives_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    episodes = run_json(
        ["forage", "--episodes", "2", "--seed", "5", "--players", "Forager_2=noop"], capsys
    )
    config = load_world("forage")
    for index, episode in enumerate(episodes):
        players = {seat: make_world_player("random", config) for seat in config.agent_names}
        players["Forager_2"] = make_world_player("noop", config)
        expected = play_episode(config, players, seed=5 + index, scope=f"ep-{index}")
        assert episode == expected.model_dump(mode="json")


def test_the_same_command_gives_the_same_episodes(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["trade", "--episodes", "2", "--default-player", "random", "--observability", "full"]
    assert run_json(args, capsys) == run_json(args, capsys)


def test_the_table_shows_each_seat_and_the_lengths(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "forage", "--episodes", "2", "--default-player", "noop"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split() == ["seat", "player", "mean", "return", "invalid", "actions"]
    assert [line.split()[:2] for line in lines[1:4]] == [
        [f"Forager_{n}", "noop"] for n in (1, 2, 3)
    ]
    assert lines[4] == "episodes: 2, lengths: mean 200.0, min 200, max 200, truncated 2"
    assert err.splitlines() == [
        "episode 1/2 (seed 0): 200 turns",
        "episode 2/2 (seed 1): 200 turns",
    ]


def test_a_scripted_player_is_found_next_to_the_world_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(world_path("forage"), tmp_path / "forage.yaml")
    (tmp_path / "polyarena_run_policies.py").write_text(
        "def up(turn):\n    return {'move': 'up'}\n"
    )
    try:
        episodes = run_json(
            [
                str(tmp_path / "forage.yaml"),
                "--default-player",
                "scripted:polyarena_run_policies:up",
            ],
            capsys,
        )
    finally:
        sys.modules.pop("polyarena_run_policies", None)
        if str(tmp_path) in sys.path:
            sys.path.remove(str(tmp_path))
    assert episodes[0]["invalid_actions"] == dict.fromkeys(
        ["Forager_1", "Forager_2", "Forager_3"], 0
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["forage", "--players", "Nobody=noop"], "--players 'Nobody=noop': no seat 'Nobody'"),
        (["forage", "--players", "Forager_1"], "--players 'Forager_1': expected SEAT=SPEC"),
        (
            ["forage", "--players", "Forager_1=noop", "Forager_1=random"],
            "--players: seat 'Forager_1' is given twice",
        ),
        (
            ["forage", "--players", "Forager_3=radnom"],
            "--players (seat Forager_3): unknown player 'radnom' (did you mean 'random'?)",
        ),
        (["forage", "--default-player", "noop:1"], "--default-player (seat Forager_1): player"),
        (
            ["forage", "--default-player", "scripted:no_such_policies:act"],
            "seat Forager_1 (scripted:no_such_policies:act): player",
        ),
        (["forage", "--episodes", "0"], "--episodes must be at least 1, got 0"),
        (["no/such/world.yaml"], "no/such/world.yaml: no such file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    first = err.splitlines()[0]
    assert first.startswith(f"{PROG}: error: {message}")


def test_a_world_file_that_fails_to_load_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("simulation: {name: bad}\nagents: []\n", encoding="utf-8")
    assert main(["run", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"{PROG}: error: {bad}: ")
