"""Statistics of evaluations over seeds: inequality and intervals, the same for the same seed.

What it holds:

- ``gini``: the Gini coefficient of non-negative totals (GovSim's equality is ``1 - gini``).
- ``Interval``: an estimate with its two-sided interval, confidence, sample size and method.
- ``bootstrap_statistic``: the percentile bootstrap of any statistic of samples paired by seed.
- ``bootstrap_mean`` and ``paired_bootstrap``: the mean, and the mean difference of a pair.
- ``t_interval``: Student's t interval of the mean (GovSim's method), for comparison.
- ``wilson_interval``: the Wilson score interval of a score fraction.
- ``check_confidence``: the one check of a confidence level.

An evaluation plays every condition on the same seeds, so the i-th value of each sample comes
from seed i. The bootstrap resamples seed indices and keeps a seed's values together: what the
conditions share on a seed (the world's draw) then cancels in a difference, which is why a paired
interval is narrower than an unpaired one when the samples are correlated. The interval is the
percentile one (Efron): the ``(1 - c) / 2`` and ``(1 + c) / 2`` quantiles of the statistic over
the resamples. It assumes no normal shape and works for ratios such as a normalised score; with
few seeds it covers a little less than nominal (about 93% for 95% at 30 seeds of normal data,
less for skewed data; the test suite measures it), and the t interval a little more.

Degenerate samples: no values, or a NaN or infinite value, is a ``ValueError`` naming the sample
(and the value's index). A single value gives an interval equal to its estimate: with one seed
there is nothing to resample, so the width is unknown, not zero. Randomness comes only from
``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "Interval",
    "bootstrap_mean",
    "bootstrap_statistic",
    "check_confidence",
    "gini",
    "paired_bootstrap",
    "t_interval",
    "wilson_interval",
]

# A block of resamples holds at most this many values, so memory stays bounded for many seeds.
_BLOCK_VALUES = 1 << 20


def check_confidence(confidence: float) -> None:
    """Refuse a confidence level outside (0, 1), naming it.

    Example:
        >>> check_confidence(95)
        Traceback (most recent call last):
        ...
        ValueError: confidence must lie strictly between 0 and 1, got 95
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


def wilson_interval(points: float, games: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a score fraction ``points / games``.

    Draws count half a point, so ``points`` may be a half-integer. The interval treats the
    score as a binomial proportion; draws make a score less variable than that, so with draws
    the interval errs on the wide side. It always holds ``points / games``; no games: (0, 1).

    Example:
        >>> [round(bound, 3) for bound in wilson_interval(50, 100)]
        [0.404, 0.596]
        >>> wilson_interval(0, 0)
        (0.0, 1.0)
    """
    check_confidence(confidence)
    if not 0 <= points <= games:
        raise ValueError(f"points must lie between 0 and the games, got {points!r} of {games!r}")
    if games == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p, z2n = points / games, z * z / games
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / games + z2n / (4 * games))
    # The bounds hold p exactly, and [0, 1]; the clamps only undo rounding.
    return min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half))


def gini(values: ArrayLike) -> float:
    """The Gini coefficient of non-negative totals: 0 when all are equal, (n - 1) / n when one
    value holds everything.

    It is the mean absolute difference over all ordered pairs over twice the mean,
    ``sum |x_i - x_j| / (2 n^2 mean)``, read off the sorted values. Negative totals are refused:
    with them the coefficient leaves [0, 1) (it can pass 1, and has no value at mean 0), so
    ``1 - gini`` no longer reads as equality; a caller may shift totals only where the world
    gives the shift a meaning. All zeros is 0: everyone holds the same.

    Example:
        >>> gini([5, 5, 5]), gini([0, 0, 0, 12]), round(gini([1, 2, 3]), 4)
        (0.0, 0.75, 0.2222)
        >>> gini([3, -1])
        Traceback (most recent call last):
        ...
        ValueError: values[1] is -1.0: the Gini coefficient is defined for values >= 0
    """
    sample = _sample(values, "values")
    negative = np.flatnonzero(sample < 0)
    if negative.size:
        first = negative[0]
        raise ValueError(
            f"values[{first}] is {sample[first]}: the Gini coefficient is defined for values >= 0"
        )
    total = sample.sum()
    if total == 0:
        return 0.0
    n = sample.size
    rank_weight = 2 * np.arange(1, n + 1) - n - 1
    # The clamp only undoes rounding: equal values can sum to a coefficient of -1e-17.
    return max(0.0, float(rank_weight @ np.sort(sample) / (n * total)))


@dataclass(frozen=True)
class Interval:
    """An estimate with its two-sided interval.

    Attributes:
        estimate: the statistic of the samples themselves.
        low, high: the bounds; both equal ``estimate`` when ``n`` is 1 (the width is unknown).
        confidence: the nominal coverage, in (0, 1).
        n: the number of seeds (values per sample).
        method: ``"bootstrap"`` (percentile, over seeds) or ``"t"`` (Student's t).

    Example:
        >>> interval = bootstrap_mean([1.0, 2.0, 3.0, 4.0], resamples=500)
        >>> interval.estimate, interval.n, interval.method, interval.contains(0.0)
        (2.5, 4, 'bootstrap', False)
    """

    estimate: float
    low: float
    high: float
    confidence: float
    n: int
    method: Literal["bootstrap", "t"]

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies inside the interval, its bounds included."""
        return self.low <= value <= self.high


def bootstrap_statistic(
    groups: Sequence[ArrayLike],
    statistic: Callable[..., float | np.ndarray],
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Interval:
    """The percentile bootstrap interval of ``statistic`` over seeds.

    A resample draws ``n`` seed indices with replacement and hands every sample, taken at those
    seeds, to ``statistic``: a seed's values stay together. ``statistic(*samples)`` reduces the
    last axis: it gets the 1-D samples once (its answer is the estimate) and then blocks of
    resamples, 2-D arrays of shape ``(rows, n)``, for which it returns one value per row; numpy
    reductions with ``axis=-1`` do both.

    Args:
        groups: the samples, one value per seed each: ``groups[k][i]`` is sample k on seed i.
        statistic: the samples -> the quantity, e.g. a normalised score
            ``lambda f, r, s: (f.mean(-1) - r.mean(-1)) / (s.mean(-1) - r.mean(-1))``.
        resamples: the number of bootstrap resamples (default 2000).
        seed: the seed of ``numpy.random.default_rng``; the same seed gives the same interval.
        confidence: the nominal coverage, in (0, 1) (default 0.95).

    Raises:
        ValueError: naming the sample that is empty, holds a NaN or infinite value or differs in
            length; or when the statistic is not finite (a ratio over a zero denominator), or
            does not return one value per resample.

    Example:
        >>> focal, random, strong = [3.0, 5.0, 4.0, 6.0], [1.0, 2.0, 1.0, 2.0], [5.0, 6.0, 6.0, 7.0]
        >>> def normalised(f, r, s):
        ...     return (f.mean(-1) - r.mean(-1)) / (s.mean(-1) - r.mean(-1))
        >>> interval = bootstrap_statistic([focal, random, strong], normalised, resamples=1000)
        >>> round(interval.estimate, 3), interval.low < 0.667 < interval.high
        (0.667, True)
    """
    samples = [_sample(group, f"groups[{k}]") for k, group in enumerate(groups)]
    if not samples:
        raise ValueError("groups: no samples; give at least one sequence of values")
    n = samples[0].size
    for k, sample in enumerate(samples[1:], start=1):
        if sample.size != n:
            raise ValueError(
                f"groups[{k}]: {sample.size} values, but groups[0] has {n}: "
                "every sample needs one value per seed"
            )
    if isinstance(resamples, bool) or not isinstance(resamples, int | np.integer) or resamples < 1:
        raise ValueError(f"resamples must be an integer >= 1, got {resamples!r}")
    check_confidence(confidence)
    estimate = np.asarray(statistic(*samples), dtype=float)
    if estimate.shape != () or not np.isfinite(estimate):
        raise ValueError(f"statistic of the samples must be one finite number, got {estimate!r}")
    if n == 1:
        return Interval(
            float(estimate), float(estimate), float(estimate), confidence, 1, "bootstrap"
        )
    values = _resampled(samples, statistic, resamples, seed)
    low, high = np.percentile(values, [50 * (1 - confidence), 50 * (1 + confidence)])
    return Interval(float(estimate), float(low), float(high), confidence, n, "bootstrap")


def _resampled(
    samples: list[np.ndarray],
    statistic: Callable[..., float | np.ndarray],
    resamples: int,
    seed: int,
) -> np.ndarray:
    """``statistic`` over ``resamples`` draws of the seeds, computed in blocks of rows."""
    n = samples[0].size
    rng = np.random.default_rng(seed)
    values = np.empty(resamples)
    rows = max(1, _BLOCK_VALUES // n)
    for start in range(0, resamples, rows):
        stop = min(start + rows, resamples)
        seeds = rng.integers(n, size=(stop - start, n))
        block = np.asarray(statistic(*(sample[seeds] for sample in samples)), dtype=float)
        if block.shape != seeds.shape[:1]:
            raise ValueError(
                f"statistic must return one value per resample (reduce axis -1): got shape "
                f"{block.shape} for samples of shape {seeds.shape}"
            )
        values[start:stop] = block
    bad = np.count_nonzero(~np.isfinite(values))
    if bad:
        raise ValueError(
            f"statistic is not finite in {bad} of {resamples} resamples "
            "(a ratio whose denominator can be 0?)"
        )
    return values


def _mean(sample: np.ndarray) -> np.ndarray:
    return np.mean(sample, axis=-1)


def _mean_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.mean(a - b, axis=-1)


def bootstrap_mean(
    values: ArrayLike, *, resamples: int = 2000, seed: int = 0, confidence: float = 0.95
) -> Interval:
    """The percentile bootstrap interval of the mean of one value per seed.

    Example:
        >>> interval = bootstrap_mean([2.0, 4.0, 3.0, 5.0, 1.0], resamples=1000, seed=1)
        >>> interval.estimate, interval.low < 3.0 < interval.high
        (3.0, True)
    """
    sample = _sample(values, "values")
    return bootstrap_statistic(
        [sample], _mean, resamples=resamples, seed=seed, confidence=confidence
    )


def paired_bootstrap(
    a: ArrayLike,
    b: ArrayLike,
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Interval:
    """The percentile bootstrap interval of ``mean(a - b)``, where ``a[i]`` and ``b[i]`` were
    played on the same seed i: the seeds are resampled, each keeping its pair.

    Example:
        >>> full, configured = [5.0, 7.0, 6.0, 9.0], [4.0, 6.5, 5.0, 8.0]
        >>> interval = paired_bootstrap(full, configured, resamples=1000)
        >>> interval.estimate, interval.contains(0.0)
        (0.875, False)
    """
    first, second = _sample(a, "a"), _sample(b, "b")
    if first.size != second.size:
        raise ValueError(
            f"a has {first.size} values and b {second.size}: paired samples need one value "
            "each per seed"
        )
    return bootstrap_statistic(
        [first, second], _mean_difference, resamples=resamples, seed=seed, confidence=confidence
    )


def t_interval(values: ArrayLike, confidence: float = 0.95) -> Interval:
    """Student's t interval of the mean, ``mean +- t(n - 1) * sd / sqrt(n)`` (GovSim's).

    Example:
        >>> interval = t_interval([2.0, 4.0, 3.0, 5.0, 1.0])
        >>> interval.estimate, round(interval.low, 3), round(interval.high, 3), interval.method
        (3.0, 1.037, 4.963, 't')
    """
    check_confidence(confidence)
    sample = _sample(values, "values")
    mean = float(sample.mean())
    if sample.size == 1:
        return Interval(mean, mean, mean, confidence, 1, "t")
    # scipy.special loads here, not with the module: the Wilson interval above is imported by
    # result DTOs that have no use for it.
    from scipy.special import stdtrit

    quantile = float(stdtrit(sample.size - 1, 0.5 + confidence / 2))
    half = quantile * float(sample.std(ddof=1)) / math.sqrt(sample.size)
    return Interval(mean, mean - half, mean + half, confidence, sample.size, "t")


def _sample(values: ArrayLike, name: str) -> np.ndarray:
    """``values`` as a 1-D float array with at least one value, every one finite."""
    try:
        sample = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}: expected numbers, one per seed ({error})") from None
    if sample.ndim != 1:
        raise ValueError(f"{name}: expected one value per seed (1-D), got shape {sample.shape}")
    if sample.size == 0:
        raise ValueError(f"{name}: no values (n=0); a statistic needs at least one")
    bad = np.flatnonzero(~np.isfinite(sample))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] is {sample[bad[0]]}: every value must be finite")
    return sample
