"""Learning-curve PNGs: real images from any mix of points, markers, and the moving average."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from training.curves import EpisodePoint, EvalPoint, moving_average, plot_learning_curve


def open_png(path: Path) -> tuple[int, int]:
    with Image.open(path) as image:
        assert image.format == "PNG"
        image.verify()
        return image.size


def test_a_full_curve_with_stages_is_a_png(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    episodes = [EpisodePoint(10 * i, float(rng.normal()), 10) for i in range(1, 300)]
    evals = [
        EvalPoint(500 * i, 0.1 * i, 0.1 * i - 0.05, min(1.0, 0.1 * i + 0.05)) for i in range(6)
    ]
    path = plot_learning_curve(
        episodes, evals, tmp_path / "deep" / "curve.png", "PPO", stages=[(0, "bc"), (1500, "ppo")]
    )
    assert path == tmp_path / "deep" / "curve.png"
    assert open_png(path) == (800, 600)


@pytest.mark.parametrize(
    ("episodes", "evals"),
    [
        ([], []),
        ([(5, 1.0)], []),
        ([], [(100, 0.5)]),
        ([(5, 1.0), (9, 0.0)], [(100, 0.5), (200, 0.75, None, None), (300, 1.0, 0.7, 1.0)]),
    ],
)
def test_sparse_or_plain_tuple_points_still_draw(
    tmp_path: Path, episodes: list[tuple], evals: list[tuple]
) -> None:
    open_png(plot_learning_curve(episodes, evals, tmp_path / "curve.png", "sparse"))


def test_same_points_same_image(tmp_path: Path) -> None:
    points = ([(1, 0.0), (2, 1.0)], [(2, 0.5, 0.1, 0.9)])
    first = plot_learning_curve(*points, tmp_path / "a.png", "t")
    second = plot_learning_curve(*points, tmp_path / "b.png", "t")
    with Image.open(first) as a, Image.open(second) as b:
        assert np.array_equal(np.asarray(a), np.asarray(b))


@given(st.lists(st.floats(-1e6, 1e6), max_size=40), st.integers(1, 12))
def test_moving_average_is_the_mean_of_the_trailing_window(
    values: list[float], window: int
) -> None:
    expected = [np.mean(values[max(0, i - window + 1) : i + 1]) for i in range(len(values))]
    assert moving_average(values, window) == pytest.approx(expected, rel=1e-9, abs=1e-6)


def test_moving_average_needs_a_window() -> None:
    with pytest.raises(ValueError, match="window"):
        moving_average([1.0], 0)
