"""The observability conditions an evaluation compares, as transformed world configs.

A condition is what the focal players may see; the background players always see what the world
configures, so a difference between conditions is the value of the information to the focal
players, not a change of the world around them. The focal seats see:

- ``configured``: the world's matrix as written;
- ``full``: every other agent and the global state as insiders, without noise;
- ``none``: nothing but themselves (every other agent and the global state unaware). Messages
  follow the matrix (``multiagent.messages``), so they hear nobody either: the condition removes
  communication to them too, as GovSim's ablation does;
- ``configured@noise=X``: the configured matrix with their noise multiplied by X (capped at 1,
  the most a noise level may be).

The condition is written into the config as explicit matrix rows for the focal observers (their
view of every target, the default's included), so the rest of the matrix is left as it was.

Example:
    >>> from multiagent.worlds import load_world
    >>> forage = load_world("forage")
    >>> condition_label("configured", 0.5), condition_label("full", 1.0)
    ('configured@noise=0.5', 'full')
    >>> noisier = condition_config(forage, "configured", 2.0, focal=["Forager_1"])
    >>> plan = ObservabilityPlan(noisier)
    >>> plan.view("Forager_1", "Forager_2").noise, plan.view("Forager_2", "Forager_1").noise
    (0.4, 0.2)
    >>> blind = ObservabilityPlan(condition_config(forage, "none", 1.0, focal=["Forager_1"]))
    >>> blind.view("Forager_1", "global"), blind.view("Forager_1", "Forager_1").level.value
    (None, 'insider')
"""

from __future__ import annotations

from collections.abc import Collection

from multiagent.config import (
    GLOBAL_TARGET,
    ObservabilityConfig,
    ObservabilityEntry,
    ObservabilityLevel,
    SimulationConfig,
)
from multiagent.observability import ObservabilityPlan

__all__ = ["OBSERVABILITY_CONDITIONS", "condition_config", "condition_label"]

OBSERVABILITY_CONDITIONS = ("configured", "full", "none")


def condition_label(observability: str, noise_scale: float) -> str:
    """The condition's name in records and tables."""
    if observability != "configured" or noise_scale == 1.0:
        return observability
    return f"configured@noise={noise_scale:g}"


def condition_config(
    config: SimulationConfig, observability: str, noise_scale: float, *, focal: Collection[str]
) -> SimulationConfig:
    """``config`` with the ``focal`` observers' rows as the condition says (a new config).

    ``noise_scale`` applies to the configured matrix only: ``full`` and ``none`` have no noise.
    """
    if observability not in OBSERVABILITY_CONDITIONS:
        allowed = ", ".join(OBSERVABILITY_CONDITIONS)
        raise ValueError(f"observability must be one of {allowed}, got {observability!r}")
    if not 0 <= noise_scale < float("inf"):
        raise ValueError(f"a noise scale is a finite number >= 0, got {noise_scale!r}")
    if observability == "configured" and noise_scale == 1.0:
        return config
    plan = ObservabilityPlan(config)
    targets = [*config.agent_names, GLOBAL_TARGET]
    rows = []
    for observer in focal:
        for target in targets:
            if target == observer:
                continue  # an agent's view of itself is not information about the others
            rows.append(_row(plan, observer, target, observability, noise_scale))
    section = config.observability or ObservabilityConfig()
    kept = [
        row for row in section.matrix if row.observer not in focal or row.target == row.observer
    ]
    matrix = [*kept, *rows]
    if config.observability is None or not config.observability.enabled:
        # everyone saw everything: the others still do
        others = [o for o in config.agent_names if o not in focal]
        matrix += [_entry(o, t, ObservabilityLevel.INSIDER, 0.0)
                   for o in others for t in targets if t != o]  # fmt: skip
    changed = section.model_copy(update={"matrix": matrix, "enabled": True})
    return SimulationConfig.model_validate(
        {**config.model_dump(by_alias=True), "observability": changed}
    )


def _row(
    plan: ObservabilityPlan, observer: str, target: str, observability: str, noise_scale: float
) -> ObservabilityEntry:
    if observability == "full":
        return _entry(observer, target, ObservabilityLevel.INSIDER, 0.0)
    view = plan.view(observer, target)
    if observability == "none" or view is None:
        return _entry(observer, target, ObservabilityLevel.UNAWARE, 0.0)
    return _entry(observer, target, view.level, min(1.0, view.noise * noise_scale))


def _entry(
    observer: str, target: str, level: ObservabilityLevel, noise: float
) -> ObservabilityEntry:
    return ObservabilityEntry(observer=observer, target=target, level=level, noise=noise)
