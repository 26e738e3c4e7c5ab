"""chess_env.core.players: one grammar, accepted everywhere a player is named, refused the same way
everywhere, with engines that can neither hang a game nor crash it."""

from __future__ import annotations

import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chess
import gymnasium as gym
import numpy as np
import pytest

from chess_env import ChessEnv
from chess_env.__main__ import main as chess_env_main
from chess_env.core.alphabeta import AlphaBetaOpponent
from chess_env.core.human import HumanPlayer
from chess_env.core.opponents import (
    CallableOpponent,
    GreedyOpponent,
    Opponent,
    PolicyOpponent,
    RandomOpponent,
    StockfishOpponent,
)
from chess_env.core.players import (
    check_player,
    make_player,
    parse_player,
    register_player,
    stockfish_installed,
    unregister_player,
)
from chess_env.errors import PlayerFailedError, PlayerSpecError
from chess_env.text.agents import make_text_agent
from chess_env.text.evaluation import evaluate_agent
from chess_env.text.llm_player import TextBackendOpponent
from chess_env.text.play import play_game
from training.evaluation import evaluate

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from chat_server import ChatServer

needs_stockfish = pytest.mark.skipif(
    not stockfish_installed(), reason="Stockfish is not installed (apt-get install stockfish)"
)


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A small untrained MaskablePPO saved as a user's run would save it."""
    from sb3_contrib import MaskablePPO

    model = MaskablePPO(
        "MlpPolicy", ChessEnv(), n_steps=8, batch_size=8, policy_kwargs={"net_arch": [8]}, seed=0
    )
    path = tmp_path_factory.mktemp("run") / "model.zip"
    model.save(path)
    return str(path)


# -- one table: every form, in every place a player is named -----------------------------------

SPECS: list[Any] = [
    pytest.param("random", RandomOpponent, {}, id="random"),
    pytest.param("greedy", GreedyOpponent, {}, id="greedy"),
    pytest.param("alphabeta:1", AlphaBetaOpponent, {"depth": 1}, id="alphabeta:1"),
    pytest.param("alphabeta?depth=1", AlphaBetaOpponent, {"depth": 1}, id="alphabeta?depth"),
    pytest.param("Alphabeta", AlphaBetaOpponent, {"depth": 2}, id="kind-case"),
    pytest.param(
        "stockfish:1",
        StockfishOpponent,
        {"depth": 1},
        id="stockfish:1",
        marks=[needs_stockfish, pytest.mark.stockfish],
    ),
    pytest.param(
        "stockfish?skill=3&depth=2&movetime=0.05",
        StockfishOpponent,
        {"depth": 2, "skill": 3, "movetime": 0.05},
        id="stockfish?query",
        marks=[needs_stockfish, pytest.mark.stockfish],
    ),
    pytest.param("{model}", PolicyOpponent, {}, id="PATH.zip"),
    pytest.param("model:{model}", PolicyOpponent, {}, id="model:PATH"),
]


def _spec(spec: str, model: str) -> str:
    return spec.replace("{model}", model)


def _random_text_game(env: gym.Env) -> dict[str, Any]:
    """A random legal agent to the end; the last info."""
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=1)
    done = False
    while not done:
        legal = info["legal_moves"]
        action = legal[int(rng.integers(len(legal)))]
        _, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    return info


def _in_chess_env(spec: str) -> str:
    env = gym.make("chess_env/Chess-v0", opponent=spec, agent_color="black", max_plies=6)
    _, info = env.reset(seed=1)
    assert info["opponent_move"] is not None  # the player moved first, as white
    while True:
        action = env.action_space.sample(mask=info["action_mask"])
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            env.close()
            return info["outcome"]


def _in_text_env(spec: str) -> str:
    env = gym.make("chess_env/ChessText-v0", opponent=spec, max_plies=6)
    info = _random_text_game(env)
    env.close()
    return info["outcome"]


def _as_evaluated_opponent(spec: str) -> str:
    result = evaluate("random", spec, games=2, seed=0, max_plies=6)
    return str(sorted(result.terminations))


def _as_evaluated_agent(spec: str) -> str:
    result = evaluate(spec, "random", games=2, seed=0, max_plies=6)
    return str(sorted(result.terminations))


def _as_text_agent(spec: str) -> str:
    agent = make_text_agent(spec)
    report = evaluate_agent(agent, "random", 1, max_plies=6, progress=False)
    agent.close()
    return report.games[0].outcome


def _in_play_game(spec: str) -> str:
    return play_game(spec, spec, max_plies=6).describe()


def _in_chess_env_cli(spec: str) -> str:
    assert chess_env_main(["demo", "--white", spec, "--max-plies", "4"]) == 0
    return "demo"


def _in_chess_env_eval_cli(spec: str) -> str:
    argv = ["eval", "--agent", spec, "--opponent", spec, "--games", "1", "--max-plies", "4"]
    assert chess_env_main(argv) == 0
    return "eval"


def _in_training_eval_cli(spec: str) -> str:
    from training.__main__ import main as training_main

    settings = ["games=1", "max_plies=4", "out_dir=null", "progress_bar=false"]
    settings += [f"model={spec}", f"opponent={spec}"]
    assert training_main(["eval", *[f"--set={setting}" for setting in settings]]) == 0
    return "eval"


CONTEXTS: dict[str, Callable[[str], str]] = {
    "ChessEnv(opponent=)": _in_chess_env,
    "ChessText-v0(opponent=)": _in_text_env,
    "evaluate(opponent)": _as_evaluated_opponent,
    "evaluate(agent)": _as_evaluated_agent,
    "make_text_agent": _as_text_agent,
    "play_game": _in_play_game,
    "python -m chess_env demo --white": _in_chess_env_cli,
    "python -m chess_env eval": _in_chess_env_eval_cli,
    "python -m training eval": _in_training_eval_cli,
}


@pytest.mark.parametrize(("spec", "kind", "attributes"), SPECS)
def test_make_player_builds_each_form(
    spec: str, kind: type[Opponent], attributes: dict[str, Any], saved_model: str
) -> None:
    spec = _spec(spec, saved_model)
    player = make_player(spec)
    try:
        assert type(player) is kind
        assert player.name == spec  # reports and PGNs name it as it was written
        for name, value in attributes.items():
            assert getattr(player, name) == value
        player.reset(seed=0)
        assert player(chess.Board()) in chess.Board().legal_moves
    finally:
        player.close()
    assert check_player(spec).kind == parse_player(spec).kind


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize(("spec", "kind", "attributes"), SPECS)
def test_every_form_is_accepted_everywhere(
    context: str, spec: str, kind: type[Opponent], attributes: dict[str, Any], saved_model: str
) -> None:
    assert CONTEXTS[context](_spec(spec, saved_model))


BAD_SPECS = [
    ("stokfish", "did you mean 'stockfish'"),
    ("stockfsh:3", "did you mean 'stockfish:3'"),
    ("alphabet:2", "did you mean 'alphabeta:2'"),
    ("kasparov", "unknown player 'kasparov'"),
    ("", "unknown player ''"),
    ("stockfish:99", "depth must be in 1..30, got 99"),
    ("stockfish:0", "depth must be in 1..30"),
    ("stockfish:x", "depth must be a whole number"),
    ("stockfish:", "nothing after ':'"),
    ("stockfish:2?depth=3", "the depth is given twice"),
    ("stockfish?depth=2&depth=3", "option 'depth' is given twice"),
    ("stockfish?skill=21", "skill must be in 0..20"),
    ("stockfish?elo=strong", "elo must be a whole number"),
    ("stockfish?movetime=0", "movetime must be above 0"),
    ("stockfish?ponder=1", "unknown option 'ponder'"),
    ("stockfish?depth", "expected KEY=VALUE"),
    ("alphabeta:9", "depth must be in 1..4, got 9"),
    ("random:2", "random takes no ':' argument"),
    ("greedy?seed=1", "unknown option 'seed'"),
    ("human:1", "human takes no ':' argument"),
    ("model:", "expected model:PATH"),
    ("runs/nowhere/model.zip", "no saved model at 'runs/nowhere/model.zip'"),
    ("openai:", "nothing after ':'"),
    ("openai:gpt?retries=many", "retries must be a whole number"),
    ("openai:gpt?endpoint_retries=11", "endpoint_retries must be in 0..10"),
    ("openai:gpt?board=svg", r"board must be one of \['ascii', 'unicode', 'fen', 'none'\]"),
    ("openai:gpt?prompt=game_arena&history=none&board=none", "board=none needs history=pgn"),
]


@pytest.mark.parametrize(("spec", "message"), BAD_SPECS)
def test_a_bad_spec_is_one_error_everywhere(spec: str, message: str) -> None:
    """The same error, naming the spec and listing the valid forms, from every entry point,
    before anything starts (no engine process, no env)."""
    makers: list[Callable[[], Any]] = [
        lambda: make_player(spec),
        lambda: ChessEnv(opponent=spec),
        lambda: gym.make("chess_env/ChessText-v0", opponent=spec),
        lambda: evaluate("random", spec, games=1),
        lambda: make_text_agent(spec),
    ]
    for make in makers:
        with pytest.raises(PlayerSpecError, match=message) as caught:
            make()
        assert repr(spec) in str(caught.value)
        if not spec.endswith(".zip"):  # a missing file is not a malformed spec
            assert "a player is one of: random, greedy, stockfish" in str(caught.value)
    if not spec.endswith(".zip"):  # checking a path needs no file either way
        with pytest.raises(PlayerSpecError, match=message):
            check_player(spec)


def test_the_command_line_refuses_a_bad_spec_with_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert chess_env_main(["play", "--white", "stockfsh:3", "--black", "random"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m chess_env play: error: unknown player 'stockfsh:3'")
    assert "did you mean 'stockfish:3'" in err and err.count("\n") == 1
    assert chess_env_main(["eval", "--opponent", "stockfish:99", "--games", "1"]) == 2


@pytest.mark.parametrize(
    "player", [42, None, ["random"], object()], ids=["int", "None", "list", "object"]
)
def test_objects_that_are_no_player_are_refused(player: Any) -> None:
    with pytest.raises(PlayerSpecError, match="cannot make a player of a"):
        make_player(player)


def test_objects_are_players_too(saved_model: str) -> None:
    from chess_env.core.model_player import load_sb3_model

    model = load_sb3_model(saved_model)
    greedy = GreedyOpponent()
    assert make_player(greedy) is greedy
    assert type(make_player(model)) is PolicyOpponent
    assert type(make_player(model.policy)) is PolicyOpponent  # a policy without its model
    assert type(make_player(lambda board: next(iter(board.legal_moves)))) is CallableOpponent
    env = ChessEnv(opponent=model, max_plies=4)  # the README's policy opponent
    _, info = env.reset(seed=0)
    env.step(env.action_space.sample(mask=info["action_mask"]))
    assert evaluate(model, greedy, games=2, max_plies=4).games == 2
    assert evaluate(Path(saved_model), "greedy", games=2, max_plies=4).games == 2


def test_a_saved_model_plays_as_its_own_policy(saved_model: str) -> None:
    """The path, the model: spec and the loaded model make the same moves."""
    from chess_env.core.model_player import load_sb3_model

    players = [make_player(saved_model), make_player(f"model:{saved_model}")]
    players.append(make_player(load_sb3_model(saved_model)))
    board = chess.Board()
    for _ in range(6):
        moves = {player(board) for player in players}
        assert len(moves) == 1
        board.push(moves.pop())


def test_a_file_that_is_not_a_model_is_named(tmp_path: Path) -> None:
    fake = tmp_path / "notes.zip"
    fake.write_text("not a model")
    with pytest.raises(PlayerSpecError, match=r"notes.zip' is not a saved model: SB3 saves a .zip"):
        make_player(str(fake))


def test_a_missing_sb3_names_the_train_extra(
    monkeypatch: pytest.MonkeyPatch, saved_model: str
) -> None:
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)  # what a missing package looks like
    with pytest.raises(PlayerSpecError, match=r"pip install 'polyarena\[train\]'"):
        make_player(saved_model)


# -- registered players ----------------------------------------------------------------------


@pytest.fixture
def registered() -> Iterator[list[Any]]:
    seen: list[Any] = []

    def factory(spec: Any) -> Callable[[chess.Board], chess.Move]:
        seen.append(spec)
        return lambda board: max(board.legal_moves, key=lambda move: move.uci())

    register_player("lastmove", factory)
    yield seen
    unregister_player("lastmove")


def test_registered_players_are_accepted_everywhere(registered: list[Any]) -> None:
    for context in CONTEXTS.values():
        assert context("lastmove:x?level=2")
    assert registered[0].argument == "x" and registered[0].options == {"level": "2"}
    assert check_player("lastmove", served=True).kind == "lastmove"
    with pytest.raises(PlayerSpecError, match="did you mean 'lastmove'"):
        make_player("lastmoev")


@pytest.mark.parametrize("name", ["random", "stockfish", "remote", "two words", "a-b", ""])
def test_register_player_refuses_built_in_and_bad_names(name: str) -> None:
    with pytest.raises(ValueError, match=r"built-in|identifier"):
        register_player(name, lambda spec: RandomOpponent())


@pytest.mark.parametrize("spec", ["human", "model:runs/x.zip", "openai:gpt-4o-mini"])
def test_servers_refuse_what_they_must_not_make_for_a_client(spec: str) -> None:
    with pytest.raises(PlayerSpecError, match="a server does not make") as caught:
        check_player(spec, served=True)
    assert "random, greedy, stockfish, alphabeta" in str(caught.value)
    with pytest.raises(PlayerSpecError, match="a player a server makes is one of") as caught:
        check_player("stokfish", served=True)
    assert "model:" not in str(caught.value) and "did you mean 'stockfish'" in str(caught.value)


# -- LLMs and people as players ----------------------------------------------------------------


def test_an_llm_spec_plays_in_the_tensor_env_and_retries_after_an_illegal_move() -> None:
    """openai:MODEL on a scripted endpoint: a refused answer is explained, then a legal one."""
    replies = iter(["Ke2", "[e4]", "d4"])
    with ChatServer(lambda request: next(replies)) as server:
        spec = f"openai:test-model?base_url={server.base_url}&api_key_env=NO_SUCH_KEY"
        env = ChessEnv(opponent=spec, agent_color="black", max_plies=3)
        _, info = env.reset(seed=0)
        assert info["opponent_move"] == "e2e4"
        assert isinstance(env.opponent, TextBackendOpponent)
        second = server.requests[1].json["messages"][-1]["content"]
        assert "rejected (cannot_move_there): the king on e1 cannot move to e2" in second
        assert "FEN: rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1" in second
        env.close()


def test_an_llm_that_never_answers_legally_loses_the_game() -> None:
    with ChatServer(lambda request: "I resign") as server:
        spec = f"openai:m?base_url={server.base_url}&api_key_env=NO_SUCH_KEY&retries=2"
        env = ChessEnv(opponent=spec, max_plies=10)
        _, info = env.reset(seed=0)
        _, reward, terminated, _, info = env.step(env.action_space.sample(mask=info["action_mask"]))
        assert (reward, terminated, info["outcome"]) == (1.0, True, "opponent_failed")
        assert info["result"] == "1-0" and len(server.requests) == 3  # a try and two retries
        env.close()


def test_the_llm_base_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    from chess_env.text.llm_player import llm_settings

    settings, retries = llm_settings(parse_player("openai:m"))
    assert settings.base_url == "http://127.0.0.1:9/v1" and retries == 1
    settings, _ = llm_settings(parse_player("openai:m?base_url=http://x/v1&tool_calling=yes"))
    assert settings.base_url == "http://x/v1" and settings.tool_calling


def test_a_person_types_moves_and_a_refused_move_is_explained() -> None:
    written: list[str] = []
    answers = iter(["e5", "Nf3", "resign"])
    person = HumanPlayer(read=lambda prompt: next(answers), write=written.append)
    played = play_game(person, "random", seed=0, max_plies=20)
    assert played.game.board.move_stack[0] == chess.Move.from_uci("g1f3")
    assert any(line.startswith("not played (") for line in written)  # e5 was refused
    assert played.failed == chess.WHITE and played.result == "0-1"
    assert played.pgn.headers["Termination"] == "white failed: white resigned"


def test_make_player_human_reads_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter(["e4"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    assert make_player("human")(chess.Board()).uci() == "e2e4"


# -- engines cannot hang or crash a game ------------------------------------------------------

FAKE_ENGINE = """#!{python}
import sys, time
for line in sys.stdin:
    command = line.split()[0] if line.split() else ""
    if command == "uci":
        print("id name fake\\noption name Threads type spin default 1 min 1 max 8", flush=True)
        print("uciok", flush=True)
    elif command == "isready":
        print("readyok", flush=True)
    elif command == "go":
        {on_go}
    elif command == "quit":
        break
"""


def fake_engine(tmp_path: Path, on_go: str) -> str:
    script = tmp_path / "engine"
    script.write_text(FAKE_ENGINE.format(python=sys.executable, on_go=on_go))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


@pytest.mark.parametrize(
    ("on_go", "reason"),
    [("sys.exit(3)", "Stockfish failed"), ("time.sleep(60)", "did not answer in time")],
    ids=["dies", "hangs"],
)
def test_an_engine_that_dies_or_hangs_loses_its_game(
    tmp_path: Path, on_go: str, reason: str
) -> None:
    engine = StockfishOpponent(path=fake_engine(tmp_path, on_go), max_seconds=0.5)
    with pytest.raises(PlayerFailedError, match=reason):
        engine(chess.Board())
    env = ChessEnv(opponent=StockfishOpponent(path=engine.path, max_seconds=0.5))
    _, info = env.reset(seed=0)
    action = env.action_space.sample(mask=info["action_mask"])
    _, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert (info["outcome"], info["result"], info["legal_moves"]) == ("opponent_failed", "1-0", [])
    assert not info["action_mask"].any()
    env.close()
    played = play_game("random", StockfishOpponent(path=engine.path, max_seconds=0.5))
    assert played.failed == chess.BLACK and played.result == "1-0"


def test_stockfish_depth_is_capped_and_every_move_has_a_deadline() -> None:
    with pytest.raises(ValueError, match=r"depth must be in 1\.\.30"):
        StockfishOpponent(depth=99, path=sys.executable)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="max_seconds"):
            StockfishOpponent(path=sys.executable, max_seconds=bad)


@needs_stockfish
@pytest.mark.stockfish
def test_an_elo_outside_the_engines_range_is_refused_when_the_player_is_made() -> None:
    with pytest.raises(PlayerSpecError, match="outside this Stockfish's UCI_Elo range"):
        make_player("stockfish?elo=100")
    player = make_player("stockfish?elo=1500")
    try:
        assert player(chess.Board()) in chess.Board().legal_moves
    finally:
        player.close()


@needs_stockfish
@pytest.mark.stockfish
def test_a_deep_stockfish_spec_answers_within_its_deadline() -> None:
    """stockfish:30 would think for minutes; the move time bounds it (here 0.2 s)."""
    player = make_player("stockfish:30?movetime=0.2")
    try:
        assert player(chess.Board()) in chess.Board().legal_moves
    finally:
        player.close()


def test_importing_chess_env_imports_no_torch() -> None:
    import subprocess

    code = "import sys, chess_env, chess_env.core.players; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
