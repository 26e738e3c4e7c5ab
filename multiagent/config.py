"""``load_config(path | dict) -> SimulationConfig``: a world definition, checked on load.

Sections: ``simulation``, ``agents``, ``state_variables`` (``agent_vars``, ``global_vars``),
``actions`` (one definition per field of the action each agent takes per turn), ``channels``
(what agents may say to each other, ``multiagent.messages``), ``engine``
(``dynamics: "package.module:function"``, imported at load so a world that cannot run never
loads; its other keys are parameters for the dynamics), ``observability``, and for evaluations
``collapse`` and ``scenarios`` (``multiagent.scenarios``). The ``validator``,
``llm`` and ``logging`` sections of older configs are kept as given, for LLM runners. Every
rejection is a ``WorldConfigError`` naming the field path; a value outside a fixed set (a level, a
type, a distribution) is named with every allowed value.

The dynamics module is imported from ``sys.path`` as any module is; when it is not found there
and the config came from a file, from the file's folder. A world with no ``engine.dynamics`` loads
with a ``WorldConfigWarning``: its state would never change and its rewards stay 0.
``dynamics: null``, written out, says that is meant.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import json
import sys
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from multiagent.errors import (
    CircularSchemaError,
    StateValidationError,
    WorldConfigError,
    WorldConfigWarning,
    not_one_of,
)
from multiagent.messages import ChannelConfig, check_channels
from multiagent.scenarios import (
    CollapseCondition,
    ScenarioConfig,
    check_collapse,
    check_scenarios,
)
from multiagent.state import validate_value
from multiagent.variables import (
    MAX_DICT_DEPTH,
    MAX_LIST_DEPTH,
    MAX_TOTAL_DEPTH,
    VariableDefinition,
    depths,
)

__all__ = [
    "AgentDefinition",
    "DefaultObservability",
    "EngineConfig",
    "ObservabilityConfig",
    "ObservabilityEntry",
    "ObservabilityLevel",
    "SimulationConfig",
    "SimulationSettings",
    "StateVariablesConfig",
    "load_config",
    "resolve_dynamics",
]

GLOBAL_TARGET = "global"
_STRICT = ConfigDict(extra="forbid", frozen=True)
# Configs written before typed state variables named one implicit agent variable.
_LEGACY_AGENT_VARS = {"economic_strength": {"type": "float", "min": 0, "default": 0.0}}


class ObservabilityLevel(str, Enum):
    """How much of a target an observer sees.

    Example:
        >>> ObservabilityLevel("external"), [level.value for level in ObservabilityLevel]
        (<ObservabilityLevel.EXTERNAL: 'external'>, ['unaware', 'external', 'insider'])
    """

    UNAWARE = "unaware"  # nothing: the target is absent
    EXTERNAL = "external"  # its external (public) variables
    INSIDER = "insider"  # everything


def _noise_level(noise: Any) -> Any:
    """Null is no noise; a bool is a YAML slip (``noise: yes``), not a level."""
    if isinstance(noise, bool):
        raise ValueError(f"noise must be a number in [0, 1], got {noise!r}")
    return 0.0 if noise is None else noise


# One number is both a relative error (numbers) and a flip probability (bools, categories):
# beyond 1 it is no probability, and a relative error that flips a value's sign.
NoiseLevel = Annotated[
    float,
    Field(ge=0.0, le=1.0, allow_inf_nan=False, description="Relative error and flip probability"),
    BeforeValidator(_noise_level),  # after Field, or NaN fails as "not >= 0", not as non-finite
]


class SimulationSettings(BaseModel):
    """The ``simulation`` section: the world's name, episode length and default seed.

    Example:
        >>> settings = SimulationSettings(name="market", max_turns=50)
        >>> settings.seed, settings.checkpoint_interval
        (None, None)
        >>> load_config({"simulation": {"name": "market", "max_turns": 0},
        ...              "agents": [{"name": "A"}]})
        Traceback (most recent call last):
        ...
        multiagent.errors.WorldConfigError: simulation.max_turns: Input should be greater than ...
    """

    model_config = _STRICT
    name: str = Field(min_length=1, description="The world's name")
    max_turns: int = Field(ge=1, description="Turns after which the episode truncates")
    seed: int | None = Field(None, description="Default seed when reset() gets none")
    checkpoint_interval: int | None = Field(None, ge=1, description="Turns between checkpoints")
    termination: dict[str, float] | None = Field(None, description="Legacy stop bounds")


class AgentDefinition(BaseModel):
    """One entry of ``agents``: a unique name, a free label and the values it starts with.

    Older configs give start values as ``initial_<variable>`` keys; ``start_values`` merges them.

    Example:
        >>> agent = AgentDefinition(name="Trader_1", initial_state={"gold": 50}, initial_food=3)
        >>> agent.start_values
        {'food': 3, 'gold': 50}
    """

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str = Field(min_length=1, description="Unique agent name")
    type: str | None = Field(None, description="A free label (trader, nation, ...)")
    initial_state: dict[str, Any] = Field(
        default_factory=dict, description="Start values overriding the variables' defaults"
    )

    @property
    def legacy_keys(self) -> dict[str, str]:
        """Variable -> the legacy ``initial_<variable>`` key it was given under."""
        return {key[len("initial_") :]: key for key in self.model_extra or {}
                if key.startswith("initial_") and key != "initial_"}  # fmt: skip

    @property
    def start_values(self) -> dict[str, Any]:
        """``initial_state`` plus the legacy ``initial_<variable>: value`` keys."""
        extra = self.model_extra or {}
        legacy = {var: extra[key] for var, key in self.legacy_keys.items()}
        return {**legacy, **self.initial_state}


class StateVariablesConfig(BaseModel):
    """The ``state_variables`` section: each agent's variables and the global ones, by name.

    Example:
        >>> section = StateVariablesConfig.model_validate(
        ...     {"agent_vars": {"gold": {"type": "int", "min": 0, "default": 10}}}
        ... )
        >>> section.agent_vars["gold"].default, section.global_vars
        (10, {})
    """

    model_config = _STRICT
    agent_vars: dict[str, VariableDefinition] = Field(default_factory=dict)
    global_vars: dict[str, VariableDefinition] = Field(default_factory=dict)


class EngineConfig(BaseModel):
    """The ``engine`` section: the dynamics function and, as its other keys, its parameters.

    Example:
        >>> engine = EngineConfig(dynamics="multiagent.worlds.forage:dynamics", grid_size=5)
        >>> engine.params
        {'grid_size': 5}
    """

    model_config = ConfigDict(extra="allow", frozen=True)
    dynamics: str | None = Field(
        None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", description="package.module:function"
    )
    type: str | None = Field(None, description="A free label (legacy engines)")

    @property
    def params(self) -> dict[str, Any]:
        """The engine's other keys: parameters handed to the dynamics."""
        return dict(self.model_extra or {})


class VariableVisibilityConfig(BaseModel):
    model_config = _STRICT
    external: list[str] = Field(default_factory=list)
    internal: list[str] = Field(default_factory=list)


class ObservabilityEntry(BaseModel):
    """One matrix row, written in YAML as ``[observer, target, level, noise]``.

    Example:
        >>> entry = ObservabilityEntry.model_validate(["Trader_1", "global", "external"])
        >>> entry.observer, entry.target, entry.level, entry.noise
        ('Trader_1', 'global', <ObservabilityLevel.EXTERNAL: 'external'>, 0.0)
    """

    model_config = _STRICT
    observer: str
    target: str
    level: ObservabilityLevel
    noise: NoiseLevel = 0.0

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, row: Any) -> Any:
        """The compact YAML form ``[observer, target, level, noise]`` (noise may be left out)."""
        if not isinstance(row, (list, tuple)):
            return row
        if len(row) > 4:
            raise ValueError(
                f"a matrix row is [observer, target, level, noise], got {len(row)} items: {row!r}"
            )
        return dict(zip(("observer", "target", "level", "noise"), row, strict=False))


class DefaultObservability(BaseModel):
    """How an observer sees a target the matrix does not list (default: unaware).

    Not the observer itself: an agent without a self row in the matrix sees itself as an insider,
    without noise (``multiagent.observability.ObservabilityPlan``).

    Example:
        >>> DefaultObservability(level="external", noise=0.1)
        DefaultObservability(level=<ObservabilityLevel.EXTERNAL: 'external'>, noise=0.1)
    """

    model_config = _STRICT
    level: ObservabilityLevel = ObservabilityLevel.UNAWARE
    noise: NoiseLevel = 0.0


class ObservabilityConfig(BaseModel):
    """The ``observability`` section: which variables are internal, who sees whom, and how.

    Example:
        >>> section = ObservabilityConfig.model_validate({
        ...     "variable_visibility": {"internal": ["gold"]},
        ...     "matrix": [["A", "B", "insider", 0.1]],
        ...     "default": {"level": "external"},
        ... })
        >>> section.matrix[0].level.value, section.default.level.value, section.distribution
        ('insider', 'external', 'uniform')
    """

    model_config = _STRICT
    enabled: bool = True
    variable_visibility: VariableVisibilityConfig = Field(default_factory=VariableVisibilityConfig)
    matrix: list[ObservabilityEntry] = Field(default_factory=list)
    default: DefaultObservability = Field(default_factory=DefaultObservability)
    distribution: Literal["uniform", "gaussian"] = "uniform"


class SimulationConfig(BaseModel):
    """A whole world definition (see the module docstring for the sections).

    Example:
        >>> config = load_config({"simulation": {"name": "demo", "max_turns": 5},
        ...                       "agents": [{"name": "A"}, {"name": "B"}]})
        >>> config.simulation.max_turns, config.agent_names, config.observability
        (5, ['A', 'B'], None)
    """

    model_config = _STRICT
    simulation: SimulationSettings
    agents: list[AgentDefinition] = Field(min_length=1)
    state_variables: StateVariablesConfig = Field(
        default_factory=lambda: StateVariablesConfig.model_validate(
            {"agent_vars": _LEGACY_AGENT_VARS}
        )
    )
    actions: dict[str, VariableDefinition] = Field(default_factory=dict)
    channels: dict[str, ChannelConfig] = Field(default_factory=dict)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    observability: ObservabilityConfig | None = None
    collapse: CollapseCondition | None = None
    scenarios: dict[str, ScenarioConfig] = Field(default_factory=dict)
    validator: dict[str, Any] | None = None
    llm: dict[str, Any] | None = None
    logging: dict[str, Any] | None = None

    @property
    def agent_names(self) -> list[str]:
        return [agent.name for agent in self.agents]

    @property
    def config_hash(self) -> str:
        """A stable hash of the whole definition (for snapshots and caches)."""
        payload = json.dumps(self.model_dump(mode="json", by_alias=True), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


# -- loading ------------------------------------------------------------------------------------


def load_config(source: str | Path | Mapping[str, Any]) -> SimulationConfig:
    """A ``SimulationConfig`` from a YAML file path or a dict, or a ``WorldConfigError``.

    A file's ``engine.dynamics`` module may also sit in the file's folder. A world without
    dynamics loads with a ``WorldConfigWarning`` (unless it says ``dynamics: null``).

    Example:
        >>> config = load_config({"simulation": {"name": "demo", "max_turns": 5},
        ...                       "agents": [{"name": "A"}, {"name": "B"}],
        ...                       "engine": {"dynamics": None}})  # static on purpose
        >>> config.agent_names, list(config.state_variables.agent_vars)
        (['A', 'B'], ['economic_strength'])
    """
    folder = Path(source).resolve().parent if isinstance(source, (str, Path)) else None
    data = _read(source) if isinstance(source, (str, Path)) else source
    if not isinstance(data, Mapping):
        raise WorldConfigError(f"a config must be a mapping of sections, got {type(data).__name__}")
    _reject_cycles(data)
    try:
        config = SimulationConfig.model_validate(data)
    except ValidationError as error:
        raise WorldConfigError(_describe(error)) from None
    problems = _cross_checks(config, folder)
    if problems:
        raise WorldConfigError("\n".join(problems))
    if config.engine.dynamics is None and "dynamics" not in config.engine.model_fields_set:
        warnings.warn(_no_dynamics(config.simulation.name), WorldConfigWarning, stacklevel=2)
    return config


def _no_dynamics(world: str) -> str:
    """What a world without dynamics does, and the two ways to say what was meant."""
    return (
        f"engine.dynamics: world {world!r} names no dynamics, so its state never changes (only "
        "the turn advances) and every reward is 0. Name a function "
        "dynamics(state, actions, rng, params) -> Transition as engine: {dynamics: "
        "'my_module:my_function'} (my_module.py on sys.path or next to the YAML file); write "
        "'dynamics: null' if the world is meant to stand still"
    )


def _read(path: str | Path) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise WorldConfigError(f"cannot read config {str(path)!r}: {error.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise WorldConfigError(f"YAML syntax error in {str(path)!r}{where}: {problem}") from None


def _path(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _below(annotation: Any, part: Any) -> Any:
    """The annotation one ``loc`` step below: a model field, a dict value or a list item."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return _below(next((a for a in args if a is not type(None)), None), part)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        fields = {field.alias or name: field for name, field in annotation.model_fields.items()}
        return fields[part].annotation if part in fields else None
    if origin is dict:
        return args[1]
    if origin is list:
        return args[0]
    return None


def _annotation_at(loc: tuple[Any, ...]) -> Any:
    """The annotation of the field at ``loc``, optional unwrapped (None when unknown)."""
    annotation: Any = SimulationConfig
    for part in loc:
        annotation = _below(annotation, part)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return annotation


def _valid_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys the model at ``loc`` accepts, for "did you mean"."""
    annotation = _annotation_at(loc)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [field.alias or name for name, field in annotation.model_fields.items()]
    return []


def _choices(loc: tuple[Any, ...]) -> list[str]:
    """The values the Literal or Enum field at ``loc`` allows (empty for any other field)."""
    annotation = _annotation_at(loc)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [str(member.value) for member in annotation]
    if typing.get_origin(annotation) is Literal:
        return [str(value) for value in typing.get_args(annotation)]
    return []


def _describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors(include_url=False):
        loc = tuple(
            p for p in item["loc"] if not (isinstance(p, str) and p.startswith("function-"))
        )
        choices = _choices(loc) if item["type"] in ("literal_error", "enum") else []
        if item["type"] == "extra_forbidden":
            hint = difflib.get_close_matches(str(loc[-1]), _valid_keys(loc[:-1]), n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            lines.append(f"{_path(loc)}: unknown key{suggestion}")
        elif choices:
            lines.append(f"{_path(loc)}: {not_one_of(item['input'], choices)}")
        else:
            message = item["msg"].removeprefix("Value error, ")
            lines.append(f"{_path(loc)}: {message}")
    return "\n".join(lines)


def resolve_dynamics(target: str, *, folder: Path | None = None) -> Callable[..., Any]:
    """The function ``"package.module:function"`` names, or a ``WorldConfigError`` saying why not.

    Args:
        target: ``"package.module:function"``.
        folder: where to look when the module is not on ``sys.path`` (a config file's folder;
            default None: nowhere else). A folder the module was found in stays on
            ``sys.path``, last, so later look-ups by name find it, in worker processes too.

    Example:
        >>> resolve_dynamics("multiagent.worlds.forage:dynamics").__name__
        'dynamics'
        >>> resolve_dynamics("multiagent.worlds.forage:dynamic")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        multiagent.errors.WorldConfigError: engine.dynamics: ...; did you mean 'dynamics'?
    """
    module_name, _, name = target.partition(":")
    prefix = f"engine.dynamics: {target!r}"
    try:
        module = _import(module_name, folder)
    except Exception as error:  # a module's own code may raise anything while it loads
        reason = _import_failure(module_name, error)
        if folder is not None and _not_found(module_name, error):
            searched = ", ".join(repr(entry or str(Path.cwd())) for entry in sys.path)
            reason += f" (looked in the config's folder {str(folder)!r}, then sys.path: {searched})"
        raise WorldConfigError(f"{prefix} cannot be imported: {reason}") from error
    if not hasattr(module, name):
        public = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        hint = difflib.get_close_matches(name, public, n=1)
        raise WorldConfigError(
            f"{prefix} cannot be imported: module {module_name!r} has no attribute {name!r}"
            + (f"; did you mean {hint[0]!r}?" if hint else "")
        )
    function = getattr(module, name)
    if not callable(function):
        raise WorldConfigError(
            f"{prefix} is not callable: {name} is of type {type(function).__name__}"
        )
    return function


def _import(module_name: str, folder: Path | None) -> types.ModuleType:
    """The module from ``sys.path`` as usual, else from ``folder``, which then stays on
    ``sys.path``, last: worker processes (a ``SubprocVecEnv``'s, which start with their parent's
    ``sys.path``) find the module too, and being last it never shadows one found elsewhere."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if folder is None or not _not_found(module_name, error):
            raise
    entry = str(folder)
    added = entry not in sys.path
    if added:
        sys.path.append(entry)
    importlib.invalidate_caches()  # the folder's files may be newer than the finders' listings
    try:
        return importlib.import_module(module_name)
    except BaseException:
        if added and entry in sys.path:
            sys.path.remove(entry)  # nothing came of it: leave sys.path as it was
        raise


def _not_found(module_name: str, error: BaseException) -> bool:
    """Whether ``error`` says ``module_name`` (or a package above it) does not exist, rather than
    that the module's own imports failed."""
    missing = error.name if isinstance(error, ModuleNotFoundError) else None
    return bool(missing) and (module_name == missing or module_name.startswith(f"{missing}."))


def _import_failure(module_name: str, error: Exception) -> str:
    """Why ``module_name`` did not import: it is missing, or its own code failed."""
    if _not_found(module_name, error):
        return f"no module named {getattr(error, 'name', module_name)!r}"
    return f"importing {module_name!r} raised {type(error).__name__}: {error}"


def _reject_cycles(data: Mapping[str, Any]) -> None:
    """Object schemas that contain themselves (YAML aliases can build them) fail here, by name."""
    variables = data.get("state_variables") or {}
    sections = {}
    if isinstance(variables, Mapping):
        sections = {f"state_variables.{s}": variables.get(s) for s in ("agent_vars", "global_vars")}
    sections["actions"] = data.get("actions")
    done: set[int] = set()  # definitions already walked: shared anchors are walked once
    for prefix, definitions in sections.items():
        if isinstance(definitions, Mapping):  # anything else: pydantic names the problem
            for name, defn in definitions.items():
                _walk(defn, [(str(name), f"{prefix}.{name}", id(defn))], done)


def _walk(defn: Any, stack: list[tuple[str, str, int]], done: set[int]) -> None:
    if not isinstance(defn, Mapping) or id(defn) in done:
        return
    children: list[tuple[str, Any]] = []
    schema = defn.get("schema")
    if isinstance(schema, Mapping):
        children += [(str(field), child) for field, child in schema.items()]
    for key in ("value_type", "item_type"):
        if isinstance(defn.get(key), Mapping):
            children.append((key, defn[key]))
    if isinstance(defn.get("item_types"), list):
        children += [(f"item_types[{i}]", c) for i, c in enumerate(defn["item_types"])]
    for field, child in children:
        ancestors = [entry[2] for entry in stack]
        if id(child) in ancestors:
            cycle = stack[ancestors.index(id(child)) :]
            names = [entry[0] for entry in cycle] + [cycle[0][0]]
            raise CircularSchemaError(
                "Circular reference detected in schema definitions:\n"
                f"  Cycle: {' -> '.join(names)}\n"
                f"  Field path: {stack[-1][1]}.{field} refers back to {cycle[0][1]}\n"
                "Suggested fixes:\n"
                "  1. Refer to the other entity by a string id (type: str) instead of nesting it\n"
                "  2. Flatten the schema so no object contains its own kind"
            )
        _walk(child, [*stack, (field, f"{stack[-1][1]}.{field}", id(child))], done)
    done.add(id(defn))


def _cross_checks(config: SimulationConfig, folder: Path | None = None) -> list[str]:
    """Rules that span sections: names, depth limits, defaults, observability references."""
    problems: list[str] = []
    names = config.agent_names
    for duplicate in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"agents: agent name {duplicate!r} is used more than once")
    if GLOBAL_TARGET in names:
        problems.append(f"agents: {GLOBAL_TARGET!r} is reserved for the global state")
    variables = config.state_variables
    sections = {
        "state_variables.agent_vars": variables.agent_vars,
        "state_variables.global_vars": variables.global_vars,
        "actions": config.actions,
    }
    for prefix, definitions in sections.items():
        for name, defn in definitions.items():
            problems += _check_definition(f"{prefix}.{name}", defn)
    if "name" in variables.agent_vars:
        problems.append("state_variables.agent_vars.name: 'name' is reserved (the agent's name)")
    for index, agent in enumerate(config.agents):
        legacy = agent.legacy_keys
        for key in sorted(set(agent.model_extra or {}) - set(legacy.values())):
            hint = difflib.get_close_matches(key, list(AgentDefinition.model_fields), n=1)
            problems.append(
                f"agents[{index}].{key}: unknown key"
                + (f"; did you mean '{hint[0]}'?" if hint else "")
            )
        for var, value in agent.start_values.items():
            given_as = legacy[var] if var in legacy and var not in agent.initial_state else None
            path = f"agents[{index}]." + (given_as or f"initial_state.{var}")
            declared = variables.agent_vars.get(var)
            if declared is None:
                problems.append(f"{path}: no agent variable named {var!r}")
                continue
            try:
                validate_value(declared, value, path)
            except StateValidationError as error:
                problems += [f"{p}: {m}" for p, m in error.errors]
    problems += check_channels(config.channels, config.actions)
    problems += _check_engine(config.engine, folder)
    if config.observability is not None:
        problems += _check_observability(config)
    if config.collapse is not None:
        kinds = {name: defn.type for name, defn in variables.global_vars.items()}
        problems += check_collapse(config.collapse, kinds)
    seats = [(agent.name, agent.type) for agent in config.agents]
    problems += check_scenarios(config.scenarios, seats, config.simulation.max_turns)
    return problems


def _check_engine(engine: EngineConfig, folder: Path | None) -> list[str]:
    """A misspelt ``dynamics`` key, or dynamics that cannot run (looked for in ``folder`` too)."""
    close = difflib.get_close_matches("dynamics", list(engine.params), n=1, cutoff=0.75)
    problems = [f"engine.{key}: unknown key; did you mean 'dynamics'?" for key in close]
    if engine.dynamics is not None:
        try:
            resolve_dynamics(engine.dynamics, folder=folder)
        except WorldConfigError as error:
            problems.append(str(error))
    return problems


def _check_definition(path: str, defn: VariableDefinition) -> list[str]:
    problems = []
    dict_depth, list_depth, total_depth = depths(defn)
    for kind, depth, limit in (
        ("dict", dict_depth, MAX_DICT_DEPTH),
        ("list", list_depth, MAX_LIST_DEPTH),
        ("overall", total_depth, MAX_TOTAL_DEPTH),
    ):
        if depth > limit:
            problems.append(f"{path}: {kind} nesting depth {depth} exceeds the limit of {limit}")
    if problems:
        return problems
    try:
        validate_value(defn, defn.derived_default(), f"{path}.default")
    except StateValidationError as error:
        problems += [f"{p}: {m}" for p, m in error.errors]
    return problems


def _check_observability(config: SimulationConfig) -> list[str]:
    observability = config.observability
    assert observability is not None
    problems = []
    names = set(config.agent_names)
    known = set(config.state_variables.agent_vars) | set(config.state_variables.global_vars)
    visibility = observability.variable_visibility
    for section in ("external", "internal"):
        for index, var in enumerate(getattr(visibility, section)):
            if var not in known:
                problems.append(
                    f"observability.variable_visibility.{section}[{index}]: unknown variable "
                    f"{var!r}"
                )
    overlap = sorted(set(visibility.external) & set(visibility.internal))
    if overlap:
        problems.append(
            f"observability.variable_visibility: variables cannot be both external and "
            f"internal: {overlap}"
        )
    seen: dict[tuple[str, str], int] = {}
    for index, entry in enumerate(observability.matrix):
        path = f"observability.matrix[{index}]"
        if entry.observer not in names:
            problems.append(f"{path}: unknown observer {entry.observer!r}")
        if entry.target != GLOBAL_TARGET and entry.target not in names:
            problems.append(f"{path}: unknown target {entry.target!r} (an agent or 'global')")
        pair = (entry.observer, entry.target)
        if pair in seen:
            problems.append(f"{path}: duplicate pair {pair} (first at matrix[{seen[pair]}])")
        seen.setdefault(pair, index)
    return problems
