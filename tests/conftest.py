"""Settings every test shares.

Hypothesis runs without its per-example deadline: a deadline is a timing assertion, and on a
loaded two-core CI machine one slow example would fail a correct property at random. Speed is
measured in ``benchmarks/``, never in tests.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("polyarena", deadline=None)
settings.load_profile("polyarena")
