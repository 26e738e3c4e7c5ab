"""Snapshots on disk: ``save_checkpoint`` writes atomically, ``load_checkpoint`` migrates, checks.

- ``save_checkpoint(snapshot, path)``: JSON written to a temporary file beside the target, synced,
  then renamed over it, so a crash or a full disk leaves the previous checkpoint whole.
- ``load_checkpoint(path, *, config=None)``: reads any schema version (``SNAPSHOT_MIGRATIONS``
  brings it to the current one and the steps are recorded in ``migrations``); with a config, the
  state is validated against its variable definitions (tuples come back as tuples) and a snapshot
  of another world is refused.
- ``CheckpointError``: a file that cannot load, with the line, the field path or the hashes.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envkit.dto import MigrationError
from multiagent.config import SimulationConfig
from multiagent.dto import SNAPSHOT_MIGRATIONS, UNKNOWN, SimulationSnapshot
from multiagent.errors import StateValidationError
from multiagent.state import StateValidator

__all__ = ["CheckpointError", "load_checkpoint", "save_checkpoint"]

_CURRENT_VERSION: int = SimulationSnapshot.model_fields["schema_version"].default


class CheckpointError(ValueError):
    """A checkpoint file that cannot load: the message names the file and what is wrong where."""


def save_checkpoint(snapshot: SimulationSnapshot, path: str | os.PathLike[str]) -> Path:
    """Write ``snapshot`` as JSON to ``path`` atomically and return the path.

    The text is built before the disk is touched; it goes to a temporary file in the same
    directory (so the rename stays on one file system), is flushed and fsynced, and only then
    replaces the target. Any failure removes the temporary file and leaves the target as it was.
    """
    target = Path(path)
    text = snapshot.model_dump_json(indent=2)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        # Mode "x" creates the file (with the umask's permissions) and refuses an existing one.
        with open(temporary, "x", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _fsync_directory(target.parent)
    return target


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable; some platforms cannot open a directory, which is fine."""
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def load_checkpoint(
    path: str | os.PathLike[str], *, config: SimulationConfig | None = None
) -> SimulationSnapshot:
    """The snapshot stored at ``path``, migrated to the current schema version.

    With ``config``, the agents and the global state are validated against its variable
    definitions (the snapshot holds the validated values: tuples as tuples, nulls as None), and a
    snapshot recorded for another config (``config_hash`` differs and is not ``"unknown"``) is
    refused.
    """
    source = Path(path)
    data = _read(source)
    try:
        migrated, applied = SNAPSHOT_MIGRATIONS.apply(data, _CURRENT_VERSION)
    except MigrationError as error:
        raise CheckpointError(f"checkpoint {str(source)!r}: {error}") from error
    if applied:
        migrated["migrations"] = [*migrated.get("migrations", []), *applied]
    try:
        snapshot = SimulationSnapshot.model_validate(migrated)
    except ValidationError as error:
        raise CheckpointError(f"invalid checkpoint {str(source)!r}:\n{_describe(error)}") from None
    if config is None:
        return snapshot
    return _against_config(snapshot, config, source)


def _read(source: Path) -> dict[str, Any]:
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"no checkpoint file at {str(source)!r}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise CheckpointError(
            f"invalid JSON in checkpoint {str(source)!r} at line {error.lineno}, "
            f"column {error.colno}: {error.msg}"
        ) from None
    if not isinstance(data, dict):
        raise CheckpointError(
            f"checkpoint {str(source)!r} must hold a JSON object, got {type(data).__name__}"
        )
    return data


def _describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors(include_url=False):
        path = ""
        for part in item["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        lines.append(f"  {path or '(top level)'}: {item['msg']}")
    return "\n".join(lines)


def _against_config(
    snapshot: SimulationSnapshot, config: SimulationConfig, source: Path
) -> SimulationSnapshot:
    if snapshot.config_hash not in (UNKNOWN, config.config_hash):
        raise CheckpointError(
            f"checkpoint {str(source)!r} was taken with config hash {snapshot.config_hash}, "
            f"but the config given has hash {config.config_hash} "
            f"({config.simulation.name!r}); load it with the config it was taken with"
        )
    strangers = sorted(set(snapshot.agents) - set(config.agent_names))
    if strangers:
        raise CheckpointError(
            f"checkpoint {str(source)!r} holds agents the config does not define: {strangers}"
        )
    variables = config.state_variables
    validator = StateValidator(variables.agent_vars, variables.global_vars)
    try:
        agents = validator.agents(snapshot.agents)
        global_state = validator.global_state(snapshot.global_state)
    except StateValidationError as error:
        raise CheckpointError(
            f"checkpoint {str(source)!r} does not match the config's variables:\n{error}"
        ) from error
    return snapshot.model_copy(update={"agents": agents, "global_state": global_state})
