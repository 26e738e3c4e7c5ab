"""Learning curves as PNG files: episode returns and evaluation scores over timesteps.

- ``EpisodePoint``: one finished training episode (timesteps when it ended, return, length).
- ``EvalPoint``: one evaluation (timesteps, value, optional interval, e.g. Wilson's 95%).
- ``moving_average(values, window)``: the trailing mean the curve draws over noisy returns.
- ``plot_learning_curve(...)``: two panels sharing the timestep axis, returns above and
  evaluations below, with optional vertical markers (the anneal's stage boundaries).

The figure is drawn on matplotlib's Agg canvas through ``matplotlib.figure.Figure``, never through
``pyplot``: no display is needed and no global figure state is touched.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["EpisodePoint", "EvalPoint", "moving_average", "plot_learning_curve"]

# (timesteps, value) or (timesteps, value, low, high), as an EvalPoint is
_Evaluation = tuple[float, float] | tuple[float, float, float | None, float | None]


class EpisodePoint(NamedTuple):
    """A finished training episode; ``timesteps`` counts every env's steps when it ended.

    Example:
        >>> episodes = [EpisodePoint(180, 1.0, 180), EpisodePoint(390, -1.0, 210)]
        >>> moving_average([episode.reward for episode in episodes], window=50).tolist()
        [1.0, 0.0]
    """

    timesteps: int
    reward: float
    length: int


class EvalPoint(NamedTuple):
    """An evaluation at ``timesteps``: a score (or mean return) and its interval if it has one.

    Example:
        >>> EvalPoint(4096, 0.62, 0.52, 0.71)  # a score with its Wilson interval
        EvalPoint(timesteps=4096, value=0.62, low=0.52, high=0.71)
        >>> EvalPoint(4096, 21.5)  # a mean return: no interval
        EvalPoint(timesteps=4096, value=21.5, low=None, high=None)
    """

    timesteps: int
    value: float
    low: float | None = None
    high: float | None = None


def moving_average(values: Sequence[float], window: int) -> np.ndarray:
    """The mean of each value and up to ``window - 1`` before it (shorter at the start).

    Example:
        >>> moving_average([1.0, 2.0, 3.0, 4.0], 2).tolist()
        [1.0, 1.5, 2.5, 3.5]
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    data = np.asarray(values, dtype=np.float64)
    sums = np.concatenate([[0.0], np.cumsum(data)])
    ends = np.arange(1, len(data) + 1)
    starts = np.maximum(ends - window, 0)
    return (sums[ends] - sums[starts]) / (ends - starts)


def plot_learning_curve(
    episode_points: Sequence[tuple[float, ...]],
    eval_points: Sequence[_Evaluation],
    path: str | os.PathLike[str],
    title: str,
    *,
    stages: Sequence[tuple[int, str]] = (),
    window: int = 50,
    eval_label: str = "evaluation score",
) -> Path:
    """Draw the curve and save it as a PNG at ``path`` (its folder is created); returns the path.

    Args:
        episode_points: ``(timesteps, return, ...)`` per finished episode, e.g. ``EpisodePoint``.
        eval_points: ``(timesteps, value)`` or ``(timesteps, value, low, high)``, e.g.
            ``EvalPoint``; the interval is drawn as error bars where both bounds are set.
        path: the PNG file to write.
        title: the figure's title.
        stages: ``(timesteps, label)`` markers, drawn as dashed vertical lines on both panels.
        window: episodes in the moving average drawn over the raw returns.
        eval_label: the evaluation panel's y label, e.g. ``score vs random``.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     png = plot_learning_curve([(10, 0.0), (25, 1.0)], [(30, 0.5, 0.2, 0.8)],
        ...                               Path(folder) / "curve.png", "demo", stages=[(0, "bc")])
        ...     png.read_bytes()[:4]
        b'\\x89PNG'
    """
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 6), layout="constrained")
    returns_axes, eval_axes = figure.subplots(2, 1, sharex=True)
    figure.suptitle(title)
    _draw_returns(returns_axes, episode_points, window)
    _draw_evaluations(eval_axes, eval_points, eval_label)
    for index, (timesteps, label) in enumerate(stages):
        for axes in (returns_axes, eval_axes):
            axes.axvline(timesteps, color="grey", linestyle="--", linewidth=1)
        # A BC stage takes no timesteps: its marker shares the next stage's, so labels step down.
        shared = sum(1 for earlier, _ in stages[:index] if earlier == timesteps)
        returns_axes.annotate(
            label,
            (timesteps, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, -12 - 11 * shared),
            textcoords="offset points",
            fontsize=8,
            color="grey",
        )
    eval_axes.set_xlabel("timesteps")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, format="png", dpi=100)
    return target


def _draw_returns(axes: Axes, points: Sequence[tuple[float, ...]], window: int) -> None:
    axes.set_ylabel("episode return")
    if not points:
        _empty(axes, "no episode finished")
        return
    steps = [point[0] for point in points]
    returns = [point[1] for point in points]
    axes.plot(steps, returns, ".", alpha=0.3, color="tab:blue", label="episode")
    average = moving_average(returns, window)
    axes.plot(steps, average, color="tab:blue", label=f"mean of last {window}")
    axes.legend(loc="lower right", fontsize=8)


def _draw_evaluations(axes: Axes, points: Sequence[_Evaluation], label: str) -> None:
    axes.set_ylabel(label)
    if not points:
        _empty(axes, "no evaluation")
        return
    evals = [_with_interval(point) for point in points]
    steps, values = [point[0] for point in evals], [point[1] for point in evals]
    axes.plot(steps, values, "o-", color="tab:orange")
    bounded = [
        (t, v, low, high) for t, v, low, high in evals if low is not None and high is not None
    ]
    if bounded:
        axes.errorbar(
            [t for t, _, _, _ in bounded],
            [v for _, v, _, _ in bounded],
            yerr=[
                [max(0.0, v - low) for _, v, low, _ in bounded],
                [max(0.0, high - v) for _, v, _, high in bounded],
            ],
            fmt="none",
            ecolor="tab:orange",
            alpha=0.6,
            capsize=3,
        )


def _with_interval(point: _Evaluation) -> tuple[float, float, float | None, float | None]:
    """``(timesteps, value, low, high)``: a bound the point does not give is None."""
    low = point[2] if len(point) > 2 else None
    high = point[3] if len(point) > 3 else None
    return point[0], point[1], low, high


def _empty(axes: Axes, text: str) -> None:
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes, color="grey")
