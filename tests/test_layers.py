"""The dependency direction, checked on the real import graph (grimp): training uses chess_env and
multiagent, which both use envkit and never each other; envkit uses none of them. Inside
chess_env: serving uses the arena, the arena the text side, the text side the core, never the
other way."""

from __future__ import annotations

import grimp
import pytest

PACKAGES = ("training", "chess_env", "multiagent", "envkit")
# Highest first: a package may import those below it, never those above or beside it.
LAYERS = [
    grimp.Layer("training"),
    grimp.Layer("chess_env", "multiagent", independent=True),
    grimp.Layer("envkit"),
]
CHESS_LAYERS = ["serving", "arena", "text", "core"]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def describe(dependencies: set[grimp.PackageDependency]) -> list[str]:
    """Each illegal chain of imports as ``importer -> ... -> imported``, for the message."""
    return sorted(
        " -> ".join(("|".join(sorted(route.heads)), *route.middle, "|".join(sorted(route.tails))))
        for dependency in dependencies
        for route in dependency.routes
    )


def test_no_package_imports_one_above_or_beside_it(graph: grimp.ImportGraph) -> None:
    illegal = graph.find_illegal_dependencies_for_layers(layers=LAYERS)
    assert not illegal, describe(illegal)


def test_chess_env_layers_import_only_downwards(graph: grimp.ImportGraph) -> None:
    illegal = graph.find_illegal_dependencies_for_layers(
        layers=CHESS_LAYERS, containers={"chess_env"}
    )
    assert not illegal, describe(illegal)


def test_the_check_catches_an_upward_import_and_one_between_siblings() -> None:
    """Imports added to a fresh graph (the fixture's stays as built) are reported by name."""
    broken = grimp.build_graph(*PACKAGES, cache_dir=None)
    broken.add_import(importer="envkit.dto", imported="training.dto")
    broken.add_import(importer="multiagent.env", imported="chess_env.core.env")
    illegal = broken.find_illegal_dependencies_for_layers(layers=LAYERS)
    assert describe(illegal) == [
        "envkit.dto -> training.dto",
        "multiagent.env -> chess_env.core.env",
    ]
    # A graph of its own: with envkit -> training added above, training's own (legal) imports of
    # chess_env would make more chains that cross chess_env's layers.
    upward = grimp.build_graph(*PACKAGES, cache_dir=None)
    upward.add_import(importer="chess_env.core.players", imported="chess_env.text.llm_player")
    illegal = upward.find_illegal_dependencies_for_layers(
        layers=CHESS_LAYERS, containers={"chess_env"}
    )
    assert describe(illegal) == ["chess_env.core.players -> chess_env.text.llm_player"]
