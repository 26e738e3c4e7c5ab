"""The player spec grammar chess and the worlds share: round trips, every refusal, the checks."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chess_env.errors import PlayerSpecError as ChessPlayerSpecError
from envkit.errors import PlayerSpecError
from envkit.player_spec import PlayerSpec, parse_spec

KINDS = ["random", "stockfish", "scripted", "openai"]
WORD = st.text(string.ascii_letters + string.digits + "_.-/", min_size=1, max_size=12)


class MySpecError(PlayerSpecError):
    """A registry's own error class."""


@given(
    kind=st.sampled_from(KINDS),
    argument=st.none() | st.text(string.ascii_letters + string.digits + "_.:-/", min_size=1),
    options=st.dictionaries(WORD.filter(lambda k: "=" not in k), WORD, max_size=4),
)
def test_a_written_spec_parses_back_to_its_parts(
    kind: str, argument: str | None, options: dict[str, str]
) -> None:
    text = kind + (f":{argument}" if argument is not None else "")
    if options:
        text += "?" + "&".join(f"{key}={value}" for key, value in options.items())
    spec = parse_spec(text, KINDS)
    assert (spec.kind, spec.argument, dict(spec.options), spec.text) == (
        kind,
        argument,
        options,
        text,
    )


@given(st.text(max_size=30))
def test_any_text_parses_or_is_refused_as_a_spec_error(text: str) -> None:
    try:
        spec = parse_spec(text, KINDS, error_type=MySpecError)
    except MySpecError as error:
        assert repr(text) in str(error)
    else:
        assert spec.kind in KINDS and spec.text == text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("random?depth", "expected KEY=VALUE after '?', got 'depth'"),
        ("random?=3", "expected KEY=VALUE after '?', got '=3'"),
        ("random?a=", "expected KEY=VALUE after '?', got 'a='"),
        ("random?a=1&a=2", "option 'a' is given twice"),
        ("stockfish:", "nothing after ':'"),
    ],
)
def test_a_malformed_spec_names_itself_the_problem_and_the_forms(text: str, problem: str) -> None:
    with pytest.raises(MySpecError) as caught:
        parse_spec(text, KINDS, error_type=MySpecError, forms="forms: random")
    assert str(caught.value) == f"player {text!r}: {problem}; forms: random"


def test_an_unknown_kind_suggests_the_closest_and_keeps_the_rest_of_the_spec() -> None:
    with pytest.raises(PlayerSpecError, match=r"unknown player 'stokfish:3' \(did you mean "):
        parse_spec("stokfish:3", KINDS)
    with pytest.raises(PlayerSpecError) as caught:
        parse_spec("zzz", KINDS, forms="hint")
    assert str(caught.value) == "unknown player 'zzz'; hint"


def test_a_spec_that_is_not_text_is_refused() -> None:
    with pytest.raises(MySpecError, match="a player spec is text, got int"):
        parse_spec(3, KINDS, error_type=MySpecError)  # type: ignore[arg-type]


def test_the_checks_read_options_in_range_and_refuse_the_rest() -> None:
    spec = parse_spec("stockfish:5?skill=3&movetime=0.5&ponder=yes", KINDS, error_type=MySpecError)
    assert spec.integer("depth", 1, 30, from_argument=True) == 5
    assert spec.integer("skill", 0, 20) == 3
    assert spec.number("movetime", 0.0, 60.0) == 0.5
    assert spec.flag("ponder") is True
    assert spec.integer("elo", 0, 3000) is None
    with pytest.raises(MySpecError, match=r"skill must be in 4\.\.20, got 3"):
        spec.integer("skill", 4, 20)
    with pytest.raises(MySpecError, match=r"movetime must be above 0\.5 and at most 1\.0"):
        spec.number("movetime", 0.5, 1.0)
    with pytest.raises(MySpecError, match="unknown option 'movetime'"):
        spec.reject_extras(argument=True, keys=("skill", "ponder"))
    with pytest.raises(MySpecError, match="stockfish takes no ':' argument"):
        spec.reject_extras(argument=False, keys=("skill", "movetime", "ponder"))
    bad = parse_spec("random?n=x&f=maybe&d=1", ["random"], error_type=MySpecError)
    with pytest.raises(MySpecError, match="n must be a whole number, got 'x'"):
        bad.integer("n", 0, 9)
    with pytest.raises(MySpecError, match="n must be a number, got 'x'"):
        bad.number("n", 0, 9)
    with pytest.raises(MySpecError, match="f must be true or false, got 'maybe'"):
        bad.flag("f")
    twice = parse_spec("stockfish:5?depth=6", KINDS)
    with pytest.raises(PlayerSpecError, match=r"the depth is given twice \(5 and 6\)"):
        twice.integer("depth", 1, 30, from_argument=True)


def test_equality_and_repr_ignore_the_registry_parts() -> None:
    ours = parse_spec("random", ["random"], error_type=MySpecError, forms="x")
    assert ours == PlayerSpec("random", None, {}, "random")
    assert repr(ours) == "PlayerSpec(kind='random', argument=None, options={}, text='random')"


def test_chess_spec_errors_are_the_shared_kind() -> None:
    from chess_env.core.players import parse_player

    assert issubclass(ChessPlayerSpecError, PlayerSpecError)
    with pytest.raises(PlayerSpecError):
        parse_player("no-such-player")
