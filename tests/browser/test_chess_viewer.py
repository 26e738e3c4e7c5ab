"""The chess viewer in a real browser (headless Chromium): the game list, a live game, a person
playing, a refused move, replays of a PGN file and of an arena run; every position on screen is
compared with python-chess's. Screenshots of each page go to ``artifacts/browser/``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import chess
import httpx
import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from chess_env.arena.results import ArenaGame

WAIT = 10  # seconds a page may take to show what a test waits for (the claims have their own)
LIVE_MOVE_DEADLINE = 1.0  # a move made through the API shows on the game page within this
REMOTE = {"player": "remote", "name": "Remote"}
SEAT = "X-Seat-Token"


@pytest.fixture
def api(served: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served, timeout=10) as client:
        yield client


@pytest.fixture(autouse=True)
def no_script_errors(browser: WebDriver) -> Iterator[None]:
    """No page breaks its Content-Security-Policy or throws (refused requests are expected)."""
    browser.get_log("browser")  # what earlier tests left
    yield
    errors = [
        entry["message"]
        for entry in browser.get_log("browser")
        if entry["level"] == "SEVERE" and "Failed to load resource" not in entry["message"]
    ]
    assert errors == []


def create_game(api: httpx.Client, white: dict[str, Any], black: dict[str, Any]) -> dict[str, Any]:
    created = api.post("/service/games", json={"white": white, "black": black})
    assert created.status_code == 201, created.text
    return created.json()


def until(browser: WebDriver, condition: Callable[[], Any], timeout: float = WAIT) -> Any:
    """Wait for ``condition()`` to be truthy; its value."""
    return WebDriverWait(browser, timeout, poll_frequency=0.02).until(lambda _: condition())


def fen_on_screen(browser: WebDriver) -> str:
    return browser.find_element(By.ID, "fen").text


def until_fen(browser: WebDriver, fen: str, timeout: float = WAIT) -> None:
    until(browser, lambda: fen_on_screen(browser) == fen, timeout)


def square_offset(browser: WebDriver, square: str) -> tuple[Any, int, int]:
    """The board's <svg> (which stays while its squares are redrawn) and the offset of
    ``square``'s centre from the board's centre, as the board is oriented."""
    board = browser.find_element(By.CSS_SELECTOR, "svg.board")
    side = board.size["width"] / 8
    col, row = "abcdefgh".index(square[0]), 8 - int(square[1])
    if board.get_attribute("data-orientation") == "black":
        col, row = 7 - col, 7 - row
    return board, round((col - 3.5) * side), round((row - 3.5) * side)


def click_square(browser: WebDriver, square: str) -> None:
    board, dx, dy = square_offset(browser, square)
    ActionChains(browser).move_to_element_with_offset(board, dx, dy).click().perform()


def drag(browser: WebDriver, source: str, target: str) -> None:
    board, dx, dy = square_offset(browser, source)
    _, tx, ty = square_offset(browser, target)
    actions = ActionChains(browser).move_to_element_with_offset(board, dx, dy).click_and_hold()
    actions.move_to_element_with_offset(board, (dx + tx) // 2, (dy + ty) // 2)
    actions.move_to_element_with_offset(board, tx, ty).release().perform()


def click(browser: WebDriver, css: str) -> None:
    """Click the element ``css`` selects, again if the page redrew it meanwhile (the game list
    is redrawn every 1.5 s)."""

    def clicked() -> bool:
        try:
            browser.find_element(By.CSS_SELECTOR, css).click()
        except StaleElementReferenceException:
            return False
        return True

    until(browser, clicked)


def read(browser: WebDriver, script: str) -> Any:
    """What ``script`` returns, read in one go (the page redraws as frames arrive)."""
    return browser.execute_script(script)


MOVES_SHOWN = (
    "return [...document.querySelectorAll('#moves li.ply:not(.start) .san')]"
    ".map(e => e.textContent)"
)
LAST_MOVE = (
    "return [...document.querySelectorAll('svg.board rect.last-move')]"
    ".map(r => r.parentNode.dataset.square).sort()"
)


def press(browser: WebDriver, key: str) -> None:
    browser.find_element(By.TAG_NAME, "body").send_keys(key)


def fens(start: str, ucis: list[str]) -> list[str]:
    """python-chess's FEN before the first move and after each."""
    board = chess.Board(start)
    positions = [board.fen()]
    for uci in ucis:
        board.push_uci(uci)
        positions.append(board.fen())
    return positions


# -- the game list and a live game -------------------------------------------------------------


def test_the_game_list_shows_a_new_game(
    browser: WebDriver, served: str, api: httpx.Client, screenshot: Callable[[str], Path]
) -> None:
    browser.get(f"{served}/viewer/")
    until(browser, lambda: "No game" in browser.find_element(By.ID, "live-status").text)
    created = create_game(api, REMOTE, {"player": "greedy", "name": "Greedy"})
    game_id = created["game"]["game_id"]
    row = f'#games tr[data-game-id="{game_id}"]'
    text = until(
        browser, lambda: read(browser, f"return document.querySelector('{row}')?.innerText")
    )
    assert "Remote" in text and "Greedy" in text and "playing" in text
    screenshot("game-list")
    click(browser, f"{row} a.open")
    until(browser, lambda: "game.html" in browser.current_url)
    until_fen(browser, chess.STARTING_FEN)


def test_a_move_made_through_the_api_shows_on_the_game_page_within_a_second(
    browser: WebDriver, served: str, api: httpx.Client, screenshot: Callable[[str], Path]
) -> None:
    created = create_game(api, REMOTE, REMOTE)
    game_id, tokens = created["game"]["game_id"], created["tokens"]
    browser.get(f"{served}/viewer/game.html?id={game_id}")
    until_fen(browser, chess.STARTING_FEN)
    # The page follows the game's WebSocket once it counts as a spectator.
    until(browser, lambda: api.get(f"/service/games/{game_id}/session").json()["spectators"] == 1)
    board = chess.Board()
    for san, color in (("e4", "white"), ("c5", "black"), ("Nf3", "white")):
        played = api.post(
            f"/service/games/{game_id}/moves", json={"move": san}, headers={SEAT: tokens[color]}
        )
        assert played.status_code == 200, played.text
        board.push_san(san)
        until_fen(browser, board.fen(), timeout=LIVE_MOVE_DEADLINE)
    # Read in one go: the page redraws the moves when the replay it fetches after a frame comes.
    until(browser, lambda: read(browser, MOVES_SHOWN) == ["e4", "c5", "Nf3"])
    assert read(browser, LAST_MOVE) == ["f3", "g1"]
    assert "Black to move" in browser.find_element(By.ID, "game-status").text
    screenshot("live-game")
    resigned = api.post(
        f"/service/games/{game_id}/resign", json={}, headers={SEAT: tokens["black"]}
    )
    assert resigned.status_code == 200
    until(browser, lambda: "1-0" in browser.find_element(By.ID, "game-status").text)
    assert "resigned" in browser.find_element(By.ID, "game-status").text
    press(browser, Keys.HOME)
    until_fen(browser, chess.STARTING_FEN)


# -- a person plays ----------------------------------------------------------------------------


def start_playing(browser: WebDriver, served: str, opponent: str) -> str:
    """Start a game as White against ``opponent`` on the play page; the game's id."""
    browser.get(f"{served}/viewer/play.html")
    field = browser.find_element(By.ID, "opponent")
    field.clear()
    field.send_keys(opponent)
    browser.find_element(By.ID, "color-white").click()
    browser.find_element(By.ID, "start").click()
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "svg.board.interactive"))
    until_fen(browser, chess.STARTING_FEN)
    query = parse_qs(urlsplit(browser.current_url).query)
    assert set(query) == {"id"}  # the game's id, and no token, in the address
    return query["id"][0]


def test_a_click_move_is_played_and_the_opponent_answers(
    browser: WebDriver, served: str, api: httpx.Client, screenshot: Callable[[str], Path]
) -> None:
    game_id = start_playing(browser, served, "greedy")
    click_square(browser, "e2")
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "svg.board circle.hint"))
    click_square(browser, "e4")
    until(browser, lambda: browser.find_element(By.ID, "ply").text == "2")
    game = api.get(f"/service/games/{game_id}").json()
    played = [move["uci_notation"] for move in game["move_history"]]
    assert played[0] == "e2e4" and len(played) == 2
    board = chess.Board()
    for uci in played:
        board.push_uci(uci)
    until_fen(browser, board.fen())
    assert game["move_history"][0]["thinking_time"] > 0  # the person's time, measured
    screenshot("play")
    # A second move, dragged this time, and one typed in SAN.
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "svg.board.interactive"))
    drag(browser, "g1", "f3")
    until(browser, lambda: browser.find_element(By.ID, "ply").text == "4")
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "svg.board.interactive"))
    box = browser.find_element(By.ID, "move-text")
    box.send_keys("Bc4", Keys.ENTER)
    until(browser, lambda: browser.find_element(By.ID, "ply").text == "6")
    played = [
        m["uci_notation"] for m in api.get(f"/service/games/{game_id}").json()["move_history"]
    ]
    assert played[2] == "g1f3" and played[4] == "f1c4"
    until_fen(browser, fens(chess.STARTING_FEN, played)[-1])


def test_an_illegal_click_is_refused_with_the_servers_reason_and_the_position_stays(
    browser: WebDriver, served: str, api: httpx.Client, screenshot: Callable[[str], Path]
) -> None:
    game_id = start_playing(browser, served, "random")
    click_square(browser, "e2")
    click_square(browser, "e5")
    message = browser.find_element(By.ID, "message")
    until(browser, lambda: message.is_displayed() and message.get_attribute("data-reason"))
    assert message.get_attribute("data-reason") == "cannot_move_there"
    assert "cannot_move_there" in message.text and "e2" in message.text and "e5" in message.text
    assert fen_on_screen(browser) == chess.STARTING_FEN
    assert api.get(f"/service/games/{game_id}").json()["move_history"] == []
    screenshot("illegal-move")
    # The page still plays: the refusal left the seat as it was.
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "svg.board.interactive"))
    click_square(browser, "d2")
    click_square(browser, "d4")
    until(browser, lambda: browser.find_element(By.ID, "ply").text == "2")
    assert not browser.find_element(By.ID, "message").is_displayed()


# -- replays -----------------------------------------------------------------------------------

PGN = """[Event "Viewer test"]
[White "Ann"]
[Black "Bob"]
[Result "1-0"]
[Termination "normal"]

1. e4 { [%eval 0.30] [%emt 0:00:03.5] The centre first. } 1... e5 { [%emt 0:00:01] }
2. Bc4 { [%eval 0.25] } 2... Nc6 3. Qh5 Nf6 { [%eval #1] Hopeless. } 4. Qxf7# 1-0

[White "Cy"]
[Black "Di"]
[Result "0-1"]

1. f3 e5 2. g4 Qh4# 0-1
"""
PGN_UCIS = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]


def open_file(browser: WebDriver, served: str, path: Path) -> None:
    browser.get(f"{served}/viewer/replay.html")
    browser.find_element(By.ID, "file").send_keys(str(path))
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#game-list tbody tr.selected"))


def test_a_pgn_replay_steps_forward_and_back_with_comments_and_times(
    browser: WebDriver, served: str, tmp_path: Path, screenshot: Callable[[str], Path]
) -> None:
    path = tmp_path / "two games.pgn"
    path.write_text(PGN)
    open_file(browser, served, path)
    rows = browser.find_elements(By.CSS_SELECTOR, "#game-list tbody tr")
    assert [row.text.split()[:4] for row in rows] == [
        ["1", "Ann", "Bob", "1-0"],
        ["2", "Cy", "Di", "0-1"],
    ]
    expected = fens(chess.STARTING_FEN, PGN_UCIS)
    until_fen(browser, expected[0])
    for ply in range(1, len(PGN_UCIS) + 1):  # forward with the arrow key
        press(browser, Keys.ARROW_RIGHT)
        until_fen(browser, expected[ply])
        if ply == 1:
            assert browser.find_element(By.ID, "ply-comment").text == "The centre first."
            assert browser.find_element(By.ID, "ply-time").text == "3.5 s"
            assert browser.find_element(By.ID, "ply-eval").text == "+0.30"
            screenshot("replay-pgn")
    press(browser, Keys.ARROW_RIGHT)  # past the end: stays
    until_fen(browser, expected[-1])
    for ply in range(len(PGN_UCIS) - 1, -1, -1):  # back with the button
        browser.find_element(By.ID, "prev").click()
        until_fen(browser, expected[ply])
    browser.find_element(By.ID, "last").click()
    until_fen(browser, expected[-1])
    browser.find_element(By.ID, "first").click()
    until_fen(browser, expected[0])
    browser.find_element(By.ID, "next").click()
    until_fen(browser, expected[1])
    press(browser, Keys.ARROW_LEFT)
    until_fen(browser, expected[0])
    browser.find_element(By.CSS_SELECTOR, '#moves button[data-ply="6"]').click()  # jump
    until_fen(browser, expected[6])
    assert browser.find_element(By.ID, "ply-comment").text == "Hopeless."
    assert browser.find_element(By.ID, "ply-eval").text == "#1"
    assert browser.find_element(By.ID, "eval-bar").is_displayed()
    press(browser, Keys.END)
    until_fen(browser, expected[-1])
    assert "1-0" in browser.find_element(By.ID, "game-status").text
    # The second game, from the list.
    rows[1].click()
    second = fens(chess.STARTING_FEN, ["f2f3", "e7e5", "g2g4", "d8h4"])
    until_fen(browser, second[0])
    press(browser, Keys.END)
    until_fen(browser, second[-1])


def shuffling_game(number: int, plies: int) -> str:
    """A PGN game of ``plies`` plies: the knights going out and back, no rule ending it."""
    loop = ["Nf3", "Nf6", "Ng1", "Ng8"]
    moves = " ".join(loop[ply % 4] for ply in range(plies))
    return f'[White "W{number}"]\n[Black "B{number}"]\n[Result "*"]\n\n{moves} *\n\n'


def test_a_long_file_pages_by_the_plies_each_reply_holds(
    browser: WebDriver, served: str, tmp_path: Path
) -> None:
    """30 games of 200 plies: a reply stops after the game reaching 5,000 plies, so a page holds
    25; "later" starts after the games shown and "earlier" goes back to where that page began."""
    path = tmp_path / "long.pgn"
    path.write_text("".join(shuffling_game(n, 200) for n in range(30)))
    open_file(browser, served, path)

    def page() -> tuple[str, int]:  # the label's dash is an en dash: read as a hyphen here
        label = browser.find_element(By.ID, "window").text.replace("\u2013", "-")
        return label, len(browser.find_elements(By.CSS_SELECTOR, "#game-list tbody tr"))

    until(browser, lambda: page() == ("games 1-25 of 30", 25))
    browser.find_element(By.ID, "later").click()
    until(browser, lambda: page() == ("games 26-30 of 30", 5))
    assert not browser.find_element(By.ID, "later").is_displayed()
    browser.find_element(By.ID, "earlier").click()
    until(browser, lambda: page() == ("games 1-25 of 30", 25))
    assert not browser.find_element(By.ID, "earlier").is_displayed()


@pytest.fixture(scope="module")
def arena_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from chess_env import arena

    out = tmp_path_factory.mktemp("arena")
    arena.run(["greedy", "random"], anchors=[], openings="startpos", games_per_pair=2, out=out,
              progress=False, bootstrap=0)  # fmt: skip
    return out


def test_an_arena_runs_games_open_on_the_replay_page_and_step_both_ways(
    browser: WebDriver, served: str, arena_run: Path, screenshot: Callable[[str], Path]
) -> None:
    lines = (arena_run / "games.jsonl").read_text().splitlines()
    games = [ArenaGame.model_validate_json(line) for line in lines]
    open_file(browser, served, arena_run / "games.jsonl")
    rows = browser.find_elements(By.CSS_SELECTOR, "#game-list tbody tr")
    listed = [
        [
            row.find_element(By.CSS_SELECTOR, f"td.{name}").text
            for name in ("white-name", "black-name", "result")
        ]
        for row in rows
    ]
    assert listed == [[g.white, g.black, g.result] for g in games]
    assert "games.jsonl: 2 games" in browser.find_element(By.ID, "picker-summary").text
    for index, game in enumerate(games):
        rows[index].click()
        ucis = [move.uci for move in game.moves]
        expected = fens(game.root_fen, ucis)
        until_fen(browser, expected[0])
        for ply in range(1, min(len(ucis), 12) + 1):
            browser.find_element(By.ID, "next").click()
            until_fen(browser, expected[ply])
            shown = browser.find_element(By.ID, "ply-time").text
            assert shown.endswith(("µs", "ms", " s")), shown  # the record's time
        for ply in range(min(len(ucis), 12) - 1, -1, -1):
            press(browser, Keys.ARROW_LEFT)
            until_fen(browser, expected[ply])
        press(browser, Keys.END)
        until_fen(browser, expected[-1])
        if index == 0:
            screenshot("replay-arena")


def test_a_finished_game_leaves_memory_and_replays_from_the_archive(
    browser: WebDriver, served: str, api: httpx.Client, screenshot: Callable[[str], Path]
) -> None:
    created = create_game(api, REMOTE, REMOTE)
    game_id, tokens = created["game"]["game_id"], created["tokens"]
    for san, color in (("f3", "white"), ("e5", "black"), ("g4", "white"), ("Qh4#", "black")):
        api.post(
            f"/service/games/{game_id}/moves", json={"move": san}, headers={SEAT: tokens[color]}
        )
    browser.get(f"{served}/viewer/")
    row = f'#archive tr[data-game-id="{game_id}"]'
    # Finished games are archived at once; the page lists them with the service's own.
    until(
        browser,
        lambda: browser.find_elements(By.CSS_SELECTOR, f'#games tr[data-game-id="{game_id}"]'),
    )
    assert not browser.find_elements(By.CSS_SELECTOR, row)  # listed once, as the service's
    archived = api.get(f"/viewer/api/archive/{game_id}")
    assert archived.status_code == 200 and len(archived.json()["move_history"]) == 4
    browser.get(f"{served}/viewer/game.html?id={game_id}")
    until_fen(browser, fens(chess.STARTING_FEN, ["f2f3", "e7e5", "g2g4", "d8h4"])[-1])
    assert "0-1" in browser.find_element(By.ID, "game-status").text
    assert "checkmate" in browser.find_element(By.ID, "game-status").text
    screenshot("finished-game")
