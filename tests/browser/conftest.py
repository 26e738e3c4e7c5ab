"""Fixtures of the browser tests: headless Chromium through Selenium, and a live chess server.

- ``browser``: one headless Chromium (Debian's ``chromium`` and ``chromium-driver``) for the
  session. Without them the tests skip with a reason, except where ``POLYARENA_REQUIRE_BROWSER``
  is set (``make test-browser`` and CI set it): there a missing browser fails the run.
- ``served``: ``python -m chess_env serve --service`` as an app on a free port of 127.0.0.1
  (every game listed, an archive in a temporary folder); its base URL, e.g. "http://127.0.0.1:PORT".
- ``screenshot(name)``: saves the page as ``artifacts/browser/<test>-<name>.png`` (not in git).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from live_server import live_address

ARTIFACTS = Path(__file__).parents[2] / "artifacts" / "browser"
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER = ("/usr/bin/chromedriver",)


def _first(paths: tuple[str, ...], name: str) -> str | None:
    return next((path for path in paths if os.path.exists(path)), None) or shutil.which(name)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    binary, driver_path = _first(CHROMIUM, "chromium"), _first(DRIVER, "chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        binary = None  # reported below, as a missing browser is
    if binary is None or driver_path is None:
        reason = "needs Debian's chromium and chromium-driver, and selenium (make test-browser)"
        if os.environ.get("POLYARENA_REQUIRE_BROWSER"):
            pytest.fail(f"no browser: {reason}")
        pytest.skip(reason)
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--force-device-scale-factor=1"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    from chess_env.serving.app import create_chess_app

    app = create_chess_app(service=True, archive_dir=tmp_path / "archive", listing="all")
    with live_address(app) as address:
        yield f"http://{address}"


@pytest.fixture
def screenshot(browser: object, request: pytest.FixtureRequest) -> Callable[[str], Path]:
    def take(name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{request.node.name}-{name}.png"
        browser.save_screenshot(str(path))  # type: ignore[attr-defined]
        return path

    return take
