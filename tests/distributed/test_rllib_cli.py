"""``python -m training rllib`` end to end, in fresh processes: a local Ray, then a cluster.

Each run is a subprocess, as a user runs it: it starts (or joins) Ray itself and must leave
nothing running; stdout is the result DTO and nothing else.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from training.rllib import RLlibTrainingResult

pytest.importorskip("ray", reason="needs ray[rllib]: make test-distributed")

BIN = Path(sys.executable).parent
BUDGET = [
    *("--set", "train_batch_size=128", "--set", "minibatch_size=64", "--set", "num_epochs=1"),
    *("--set", "fcnet_hiddens=[32]", "--set", "env_config.max_plies=16"),
]


def _cli(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "training", "rllib", *args, *BUDGET],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_cli_trains_on_a_local_ray_and_prints_the_dto(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["--env", "chess:selfplay", "--num-env-runners", "0", "--iterations", "1"]
    done = _cli([*args, "--out", str(out)])
    assert done.returncode == 0, done.stderr[-3000:]
    printed = RLlibTrainingResult.model_validate_json(done.stdout)
    assert printed.cluster == "local" and printed.num_env_runners == 0
    assert printed.iterations == 1 and printed.illegal_actions == 0
    assert RLlibTrainingResult.model_validate_json((out / "result.json").read_text()) == printed
    assert printed.checkpoint == str((out / "checkpoint").resolve())
    assert (out / "checkpoint" / "rllib_checkpoint.json").exists()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def ray_head() -> Iterator[tuple[str, dict[str, str]]]:
    """A one-node Ray cluster, as ``ray start --head`` makes it, with its own token.

    ``--block`` keeps ``ray start`` in the foreground, so ending that one process (by its pid)
    stops the cluster's processes; its own temp dir keeps ``ray_current_cluster`` out of
    /tmp/ray, where a later ``ray.init()`` elsewhere could find it.
    """
    port = _free_port()
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": uuid.uuid4().hex}
    with tempfile.TemporaryDirectory(prefix="ray-", dir="/tmp") as temp_dir:  # short socket paths
        log = Path(temp_dir) / "head.log"
        with log.open("w") as sink:
            head = subprocess.Popen(
                [str(BIN / "ray"), "start", "--head", f"--port={port}", "--num-cpus=2",
                 "--include-dashboard=false", "--disable-usage-stats",
                 f"--temp-dir={temp_dir}", "--block"],
                stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, **auth},
            )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while "Ray runtime started" not in log.read_text():
                if head.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"ray start --head did not come up:\n{log.read_text()[-2000:]}")
                time.sleep(0.5)
            yield f"127.0.0.1:{port}", auth
        finally:
            head.send_signal(signal.SIGTERM)
            try:
                head.wait(timeout=60)
            except subprocess.TimeoutExpired:
                head.kill()
                head.wait()


def test_cli_joins_a_running_cluster(tmp_path: Path, ray_head: tuple[str, dict[str, str]]) -> None:
    address, auth = ray_head
    args = ["--env", "chess_env/Chess-v0", "--num-env-runners", "1", "--iterations", "1"]
    done = _cli([*args, "--address", address, "--out", str(tmp_path)], env=auth)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = RLlibTrainingResult.model_validate_json(done.stdout)
    assert printed.cluster == address and printed.cluster_cpus == 2
    assert printed.config.address == address and printed.illegal_actions == 0
