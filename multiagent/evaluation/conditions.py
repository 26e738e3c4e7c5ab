"""The observability conditions an evaluation compares, as transformed world configs.

A condition is what the focal players may see: the world's configured matrix (``configured``),
everything exactly (``full``: every observer an insider of every target, no noise), or nothing
but themselves (``none``: every other target and the globals unaware). The configured matrix may
also have its noise multiplied (``configured@noise=0.5``; the result is capped at 1, the most a
noise level may be). Messages follow the same matrix (``multiagent.messages``), so under ``none``
nobody hears anybody: the condition removes communication too, as GovSim's ablation does.

Example:
    >>> from multiagent.worlds import load_world
    >>> forage = load_world("forage")
    >>> condition_label("configured", 0.5), condition_label("full", 1.0)
    ('configured@noise=0.5', 'full')
    >>> noisier = condition_config(forage, "configured", 2.0)
    >>> [row.noise for row in noisier.observability.matrix][2:5]
    [0.0, 0.4, 0.4]
    >>> condition_config(forage, "full", 1.0).observability is None
    True
"""

from __future__ import annotations

from multiagent.config import (
    DefaultObservability,
    ObservabilityConfig,
    ObservabilityLevel,
    SimulationConfig,
)

__all__ = ["OBSERVABILITY_CONDITIONS", "condition_config", "condition_label"]

OBSERVABILITY_CONDITIONS = ("configured", "full", "none")


def condition_label(observability: str, noise_scale: float) -> str:
    """The condition's name in records and tables."""
    if observability != "configured" or noise_scale == 1.0:
        return observability
    return f"configured@noise={noise_scale:g}"


def condition_config(
    config: SimulationConfig, observability: str, noise_scale: float
) -> SimulationConfig:
    """``config`` with its observability section as the condition says (a new, checked config).

    ``noise_scale`` applies to the configured matrix only: ``full`` and ``none`` have no noise.
    """
    if observability not in OBSERVABILITY_CONDITIONS:
        allowed = ", ".join(OBSERVABILITY_CONDITIONS)
        raise ValueError(f"observability must be one of {allowed}, got {observability!r}")
    if not noise_scale >= 0 or noise_scale == float("inf"):
        raise ValueError(f"a noise scale is a finite number >= 0, got {noise_scale!r}")
    section = config.observability
    if observability == "full":
        return _with(config, None)
    if observability == "none":
        internal = section.variable_visibility if section is not None else None
        blind = ObservabilityConfig(
            default=DefaultObservability(level=ObservabilityLevel.UNAWARE),
            **({"variable_visibility": internal} if internal is not None else {}),
        )
        return _with(config, blind)
    if section is None or noise_scale == 1.0:
        return config
    scaled = section.model_copy(
        update={
            "matrix": [
                row.model_copy(update={"noise": min(1.0, row.noise * noise_scale)})
                for row in section.matrix
            ],
            "default": section.default.model_copy(
                update={"noise": min(1.0, section.default.noise * noise_scale)}
            ),
        }
    )
    return _with(config, scaled)


def _with(config: SimulationConfig, section: ObservabilityConfig | None) -> SimulationConfig:
    return SimulationConfig.model_validate(
        {**config.model_dump(by_alias=True), "observability": section}
    )
