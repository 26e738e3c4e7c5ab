"""The base of every DTO, and schema migrations on plain dicts.

- ``FrozenDTO``: a pydantic model that cannot change after construction, rejects unknown keys and
  carries a ``schema_version`` (each subclass sets its current version as the default).
- ``MigrationRegistry``: ``dict -> dict`` handlers between schema versions. A stored payload of any
  version loads as a dict, walks the shortest chain of handlers to the current version, and only
  then validates into its DTO, so a DTO class never has to know its old shapes.
- ``Migration`` (one registered step) and ``MigrationError``.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["FrozenDTO", "Migration", "MigrationError", "MigrationHandler", "MigrationRegistry"]

MigrationHandler = Callable[[dict[str, Any]], dict[str, Any]]


class FrozenDTO(BaseModel):
    """Immutable, strict about keys and versioned: the contract at every public boundary.

    A payload of another schema version is refused here: it goes through a ``MigrationRegistry``
    first, so an old shape never half-validates into the new one.

    Example:
        >>> class Score(FrozenDTO):
        ...     points: int = Field(description="Points scored")
        >>> Score(points=3).model_dump()
        {'schema_version': 1, 'points': 3}
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = Field(default=1, ge=1, description="Version of this DTO's shape")

    @field_validator("schema_version")
    @classmethod
    def _current_version(cls, version: int) -> int:
        current = cls.model_fields["schema_version"].default
        if version != current:
            raise ValueError(
                f"{cls.__name__} is at schema version {current}, got {version}; "
                "migrate the payload first"
            )
        return version


class MigrationError(ValueError):
    """No chain of migrations between two versions, or a payload a migration cannot handle."""


@dataclass(frozen=True)
class Migration:
    """One registered step: ``handler`` turns a payload of ``from_version`` into ``to_version``.

    Example:
        >>> def add_seed(data):
        ...     '''Add the seed.'''
        ...     return {**data, "seed": 0}
        >>> step = MigrationRegistry().add(1, 2, add_seed)
        >>> step.name, step.handler({"turn": 3})
        ('1->2: Add the seed', {'turn': 3, 'seed': 0})
    """

    from_version: int
    to_version: int
    handler: MigrationHandler

    @property
    def name(self) -> str:
        """``"1->2: <first docstring line or function name>"``, as recorded in a snapshot."""
        doc = (self.handler.__doc__ or "").strip()
        label = doc.splitlines()[0].strip().rstrip(".") if doc else self.handler.__name__
        return f"{self.from_version}->{self.to_version}: {label}"


class MigrationRegistry:
    """Migrations between schema versions of one kind of payload, and the shortest way through.

    Example:
        >>> registry = MigrationRegistry()
        >>> @registry.register(from_version=1, to_version=2)
        ... def add_seed(data):
        ...     '''add the seed'''
        ...     return {**data, "seed": 0}
        >>> registry.apply({"turn": 3}, to_version=2)
        ({'turn': 3, 'seed': 0, 'schema_version': 2}, ['1->2: add the seed'])
    """

    def __init__(self) -> None:
        self._edges: dict[int, dict[int, Migration]] = {}

    def add(self, from_version: int, to_version: int, handler: MigrationHandler) -> Migration:
        """Register ``handler`` from one version to another (downgrades included)."""
        if from_version == to_version:
            raise MigrationError(f"a migration must change the version (got {from_version} twice)")
        if to_version in self._edges.get(from_version, {}):
            raise MigrationError(
                f"a migration from version {from_version} to {to_version} is already registered"
            )
        migration = Migration(from_version, to_version, handler)
        self._edges.setdefault(from_version, {})[to_version] = migration
        return migration

    def register(
        self, *, from_version: int, to_version: int
    ) -> Callable[[MigrationHandler], MigrationHandler]:
        """The decorator form of ``add``; the function stays as it was."""

        def decorate(handler: MigrationHandler) -> MigrationHandler:
            self.add(from_version, to_version, handler)
            return handler

        return decorate

    def find_path(self, from_version: int, to_version: int) -> list[Migration]:
        """The fewest migrations from one version to another (breadth-first, so cycles end)."""
        if from_version == to_version:
            return []
        came_by: dict[int, Migration] = {}
        queue = deque([from_version])
        while queue:
            version = queue.popleft()
            for target, migration in self._edges.get(version, {}).items():
                if target == from_version or target in came_by:
                    continue
                came_by[target] = migration
                if target == to_version:
                    return self._walk_back(came_by, from_version, to_version)
                queue.append(target)
        known = ", ".join(
            f"{m.from_version}->{m.to_version}"
            for edges in self._edges.values()
            for m in edges.values()
        )
        raise MigrationError(
            f"no migration path from schema version {from_version} to {to_version} "
            f"(registered: {known or 'none'})"
        )

    @staticmethod
    def _walk_back(came_by: dict[int, Migration], start: int, end: int) -> list[Migration]:
        path = []
        while end != start:
            path.append(came_by[end])
            end = came_by[end].from_version
        return path[::-1]

    def apply(self, data: dict[str, Any], to_version: int) -> tuple[dict[str, Any], list[str]]:
        """``data`` migrated to ``to_version`` and the names of the steps taken.

        The version is read from ``data["schema_version"]`` (absent means 1, the payloads written
        before versions existed). ``data`` itself is never changed: the handlers work on a deep
        copy, so one may edit its argument in place and return it.
        """
        version = data.get("schema_version", 1)
        if not isinstance(version, int) or isinstance(version, bool):
            raise MigrationError(f"schema_version must be an integer, got {version!r}")
        current, applied = copy.deepcopy(data), []
        for migration in self.find_path(version, to_version):
            try:
                result = migration.handler(current)
            except Exception as error:
                raise MigrationError(f"migration {migration.name!r} failed: {error!r}") from error
            if not isinstance(result, dict):
                raise MigrationError(
                    f"migration {migration.name!r} returned {type(result).__name__}, not a dict"
                )
            current = {**result, "schema_version": migration.to_version}
            applied.append(migration.name)
        current["schema_version"] = to_version
        return current, applied
