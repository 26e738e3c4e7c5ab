"""``log_of_one_minus`` and ``cos_of_turns``: numpy functions with the same bits on every machine.

Gaussian noise needs a logarithm and a cosine (Box-Muller). numpy's own ``np.log1p`` and
``np.cos`` run SIMD kernels on CPUs that have AVX-512 and the C library's elsewhere, and the two
differ in the last bits: the same seed would give different noise on different machines. These are
built from ``+ - * /``, ``frexp`` and ``rint`` alone, each an exact IEEE operation wherever numpy
runs, so their results are the same everywhere (within a few units in the last place of the true
value).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["cos_of_turns", "log_of_one_minus"]

FloatArray = npt.NDArray[np.float64]

_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that e * _LN2_HI is exact for |e| < 2**11
_LN2_LO = 1.90821492927058770002e-10
# 2 atanh(s) = log((1 + s) / (1 - s)) = 2 (s + s^3/3 + s^5/5 + ...); |s| < 0.172 here, so 13
# terms reach far below a double's precision.
_ATANH_TERMS = tuple(1.0 / (2 * k + 1) for k in range(13))
_COS_TERMS = tuple((-1.0) ** k / math.factorial(2 * k) for k in range(12))  # on |x| <= pi/4
_SIN_TERMS = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(12))
_TWO_PI = 2.0 * math.pi


def _horner(terms: tuple[float, ...], x: FloatArray) -> FloatArray:
    """sum(terms[k] * x**k), highest power first."""
    total = np.full_like(x, terms[-1])
    for term in reversed(terms[:-1]):
        total *= x
        total += term
    return total


def log_of_one_minus(u: FloatArray) -> FloatArray:
    """``log(1 - u)`` for ``u`` in [0, 1).

    Example:
        >>> values = np.array([0.0, 0.25, 0.5, 0.999])
        >>> bool(np.allclose(log_of_one_minus(values), np.log1p(-values), rtol=1e-14, atol=0))
        True
    """
    x = 1.0 - u
    rounding = (1.0 - x) - u  # what 1 - u lost to rounding, exactly: put back at the end
    mantissa, exponent = np.frexp(x)  # x = mantissa * 2**exponent, mantissa in [0.5, 1)
    low = mantissa < math.sqrt(0.5)
    mantissa = np.where(low, 2.0 * mantissa, mantissa)  # now in [sqrt(1/2), sqrt(2))
    powers = exponent.astype(np.float64) - low
    s = (mantissa - 1.0) / (mantissa + 1.0)
    log_mantissa = 2.0 * s * _horner(_ATANH_TERMS, s * s)
    return powers * _LN2_HI + (log_mantissa + powers * _LN2_LO + rounding / x)


def cos_of_turns(u: FloatArray) -> FloatArray:
    """``cos(2 pi u)`` for ``u`` in [0, 1): a quarter turn at a time, then a polynomial.

    Example:
        >>> turns = np.array([0.0, 0.1, 0.25, 0.6, 0.9])
        >>> bool(np.allclose(cos_of_turns(turns), np.cos(2 * np.pi * turns), atol=1e-15))
        True
    """
    quarters = np.rint(4.0 * u)  # the nearest quarter turn: 0 .. 4
    x = (u - 0.25 * quarters) * _TWO_PI  # what is left, in [-pi/4, pi/4]
    squared = x * x
    cos_x = _horner(_COS_TERMS, squared)
    sin_x = x * _horner(_SIN_TERMS, squared)
    quadrant = quarters.astype(np.int64) % 4
    # cos(x + q pi/2) is cos x, -sin x, -cos x, sin x for q = 0, 1, 2, 3.
    result: FloatArray = np.select(
        [quadrant == 0, quadrant == 1, quadrant == 2], [cos_x, -sin_x, -cos_x], sin_x
    )
    return result
