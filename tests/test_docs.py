"""The documentation site: its code runs, its world reference says what the code does, it builds.

- Every ```python block of ``docs/*.md`` runs, page by page, in order, in one namespace per page,
  in an empty folder. A block that cannot run in the tests (it needs Stockfish, an endpoint or a
  long run) is marked by the line ``<!-- no-test: the reason -->`` right before its fence.
- ``docs/worlds.md``'s reference of variable types is held against ``multiagent``: a section per
  type, each type's field list equal to the fields the code accepts for it, each limit's number
  equal to the code's constant, each YAML example loading.
- ``mkdocs build --strict`` passes (skipped when the ``docs`` extra is not installed; ``make docs``
  runs the same build).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
NO_TEST = re.compile(r"<!--\s*no-test:\s*(.*?)\s*-->\s*$")


def code_blocks(text: str, language: str) -> list[tuple[str, str | None]]:
    """(code, no-test reason or None) of each fenced block in ``language``, in order."""
    blocks = []
    for match in FENCE.finditer(text):
        if match.group(1) != language:
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NO_TEST.search(before)
        blocks.append((match.group(2), marker.group(1) if marker else None))
    return blocks


PAGES = sorted(p for p in DOCS.glob("*.md") if code_blocks(p.read_text("utf-8"), "python"))


def test_the_pages_have_code_to_run() -> None:
    names = {page.name for page in PAGES}
    assert {"chess.md", "worlds.md", "llm-arena.md", "serving.md", "training.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=[page.stem for page in PAGES])
def test_page_python_blocks_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a reader would run them: in order, sharing names, in an empty folder."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    for index, (code, skip_reason) in enumerate(code_blocks(page.read_text("utf-8"), "python")):
        if skip_reason is not None:
            assert skip_reason, f"{page.name} block {index}: no-test needs a reason"
            continue
        exec(compile(code, f"{page.name} [python block {index}]", "exec"), namespace)


def test_no_test_markers_give_reasons() -> None:
    for page in DOCS.glob("*.md"):
        for marker in re.findall(r"<!--\s*no-test(.*?)-->", page.read_text("utf-8")):
            assert marker.strip(": ").strip(), f"{page.name}: a no-test marker without a reason"


# -- the world reference against the code -------------------------------------------------------

WORLDS = (DOCS / "worlds.md").read_text("utf-8")
REFERENCE = WORLDS[WORLDS.index("## Variable definitions") :]


def type_sections() -> dict[str, str]:
    """Type name -> the text of its ``### `type``` section."""
    parts = re.split(r"^### `(\w+)`\n", REFERENCE, flags=re.MULTILINE)
    pairs = zip(parts[1::2], parts[2::2], strict=True)
    return {name: body.split("\n### ")[0] for name, body in pairs}


def test_every_variable_type_has_a_section() -> None:
    from multiagent.variables import VariableType

    assert sorted(type_sections()) == sorted(typing.get_args(VariableType))


# A value of the right shape for each optional field, to ask the code whether a type takes it.
FIELD_SAMPLES: dict[str, object] = {
    "min": 0,
    "max": 1,
    "values": ["a"],
    "key_type": "str",
    "value_type": "int",
    "keys": ["a"],
    "item_type": "int",
    "item_types": ["int"],
    "schema": {"a": "int"},
    "pattern": "a",
    "max_length": 1,
}


def accepted_fields(kind: str) -> set[str]:
    """The optional fields the code does not refuse as "does not apply" for ``kind``."""
    from pydantic import ValidationError

    from multiagent.variables import VariableDefinition

    accepted = {"default"}
    for name, sample in FIELD_SAMPLES.items():
        try:
            VariableDefinition.model_validate({"type": kind, name: sample})
        except ValidationError as error:
            if "does not apply" in str(error):
                continue
        accepted.add(name)
    return accepted


def test_field_sample_list_covers_the_model() -> None:
    from multiagent.variables import VariableDefinition

    fields = {f.alias or name for name, f in VariableDefinition.model_fields.items()}
    assert fields == {"type", "default", *FIELD_SAMPLES}


@pytest.mark.parametrize("kind", list(type_sections()))
def test_each_type_lists_the_fields_the_code_accepts(kind: str) -> None:
    line = re.search(r"^Fields: (.*)\.$", type_sections()[kind], re.MULTILINE)
    assert line, f"the {kind} section has no 'Fields:' line"
    documented = set(re.findall(r"`(\w+)`", line.group(1)))
    assert documented == accepted_fields(kind)


def test_every_limit_is_documented_with_the_code_value() -> None:
    import multiagent.spaces
    import multiagent.variables

    rows = dict(re.findall(r"^\| `(MAX_\w+)` \| ([\d,]+) \|", REFERENCE, re.MULTILINE))
    constants = {
        name: getattr(module, name)
        for module in (multiagent.variables, multiagent.spaces)
        for name in module.__all__
        if name.startswith("MAX_")
    }
    assert set(rows) == set(constants)
    for name, value in rows.items():
        assert int(value.replace(",", "")) == constants[name], name
    # The numbers the prose repeats say the same.
    assert "dict nesting depth 5 exceeds the limit of 4" in REFERENCE
    assert constants["MAX_DICT_DEPTH"] == 4 and constants["MAX_LIST_ITEMS"] == 1000


def test_reference_yaml_examples_load() -> None:
    """Each type's YAML example is a valid set of agent variables."""
    from multiagent import load_config

    for kind, section in type_sections().items():
        examples = code_blocks(section, "yaml")
        assert examples, f"the {kind} section has no YAML example"
        for code, _ in examples:
            variables = yaml.safe_load(code)
            load_config(
                {
                    "simulation": {"name": "docs", "max_turns": 1},
                    "agents": [{"name": "A"}],
                    "state_variables": {"agent_vars": variables},
                }
            )


# -- the build ----------------------------------------------------------------------------------


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None
    or importlib.util.find_spec("mkdocstrings_handlers") is None,
    reason="the docs extra is not installed (pip install -e '.[docs]'); make docs builds the site",
)
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    """Warnings are errors: a broken link, anchor or API reference fails the build."""
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true", "PATH": ""},
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    assert (tmp_path / "reference" / "chess_env" / "index.html").exists()
