"""State models generated from variable definitions, and validation with readable paths.

One annotation builder serves two containers: pydantic models (``create_agent_state_model``, for
users and DTOs, defaults filled in) and TypedDicts (``StateValidator``, for the env's hot path:
pydantic-core validates straight into plain dicts, every key required). Both are cached by a stable
hash of the definitions. Bounds, categorical values, patterns and the run-time size limits are
pydantic constraints, so they hold inside containers too; errors come back as
``agents[Trader_1].inventory.food: <message>``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import keyword
import operator
import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Annotated, Any, Literal, NamedTuple, Optional

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    create_model,
)
from typing_extensions import NotRequired, TypedDict

from multiagent.errors import StateValidationError, not_one_of
from multiagent.variables import (
    MAX_DICT_ITEMS,
    MAX_LIST_ITEMS,
    MAX_STR_LENGTH,
    VariableDefinition,
)

__all__ = [
    "StateValidator",
    "annotation_for",
    "create_agent_state_model",
    "create_global_state_model",
    "definitions_hash",
    "format_errors",
    "validate_value",
]

Definitions = Mapping[str, VariableDefinition]
StructFactory = Callable[[str, dict[str, tuple[Any, Any]]], Any]
_FORBID = ConfigDict(
    extra="forbid", allow_inf_nan=False, cache_strings="keys", validate_default=True
)
_MODEL_CONFIG = ConfigDict(**_FORBID, populate_by_name=True, serialize_by_alias=True)
_IGNORE_EXTRA = ConfigDict(**{**_FORBID, "extra": "ignore"})


def definitions_hash(definitions: Definitions) -> str:
    """A stable (cross-process) hash of definitions: the cache key of generated models."""
    payload = {
        name: defn.model_dump(mode="json", by_alias=True) for name, defn in definitions.items()
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _fullmatch(pattern: re.Pattern[str], value: str) -> str:
    if pattern.fullmatch(value) is None:
        raise ValueError(f"String should match pattern '{pattern.pattern}' (whole string)")
    return value


def annotation_for(defn: VariableDefinition, name: str, struct: StructFactory) -> Any:
    """The type annotation that validates values of ``defn``; ``struct`` builds fixed schemas."""
    kind = defn.type
    if kind in ("float", "int"):
        if kind == "float":
            return Annotated[float, Field(allow_inf_nan=False, ge=defn.min, le=defn.max)]
        low, high = (None if bound is None else int(bound) for bound in (defn.min, defn.max))
        return Annotated[int, Field(ge=low, le=high)]
    if kind == "bool":
        return bool
    if kind == "categorical":
        return Literal[tuple(defn.values or ())]
    if kind == "str":
        limit = defn.max_length or MAX_STR_LENGTH
        text: Any = Annotated[str, Field(max_length=limit)]
        if defn.pattern is not None:
            text = Annotated[text, AfterValidator(partial(_fullmatch, re.compile(defn.pattern)))]
        # Nullable exactly when the default is null (as the design has it).
        return Optional[text] if defn.default is None else text  # noqa: UP045
    if defn.schema_ is not None:
        fields = {
            field: (annotation_for(child, f"{name}_{field}", struct), child)
            for field, child in defn.schema_.items()
        }
        return struct(name, fields)
    if kind == "dict":
        key: Any = str if defn.key_type == "str" else int
        if defn.keys is not None:  # declared keys: no others may appear
            key = Literal[tuple(defn.keys)]
        value = annotation_for(defn.value_definition, f"{name}_value", struct)
        return Annotated[dict[key, value], Field(max_length=MAX_DICT_ITEMS)]  # type: ignore[valid-type]
    if kind == "list":
        item = annotation_for(defn.item_definition, f"{name}_item", struct)
        return Annotated[list[item], Field(max_length=defn.max_length or MAX_LIST_ITEMS)]  # type: ignore[valid-type]
    items = tuple(
        annotation_for(child, f"{name}_{i}", struct)
        for i, child in enumerate(defn.item_types or [])
    )
    return tuple[items]  # type: ignore[valid-type]


def _model_struct(
    name: str, fields: dict[str, tuple[Any, VariableDefinition]], *, defaults: bool = False
) -> type[BaseModel]:
    """A pydantic model of a fixed schema.

    A field whose default is null is optional. The others are required inside an object (as the
    design has it) or, with ``defaults`` (a top-level state), filled from their own default.
    """
    spec: dict[str, Any] = {}
    for field, (annotation, child) in fields.items():
        # A field named like a BaseModel attribute ("dict", "json", "model_config") gets a safe
        # attribute name; its alias keeps the user's name in data and dumps.
        attribute = f"{field}_" if hasattr(BaseModel, field) else field
        alias = field if attribute != field else None
        default = child.derived_default()
        if default is None:
            spec[attribute] = (Optional[annotation], Field(None, alias=alias))  # noqa: UP045
        elif defaults:
            # Bind this field's own default now: a closure over the loop variable would hand
            # every field the last one (the reference design's bug).
            factory = partial(copy.deepcopy, default)
            spec[attribute] = (annotation, Field(default_factory=factory, alias=alias))
        else:
            spec[attribute] = (annotation, Field(..., alias=alias))
    return create_model(_model_name(name), __config__=_MODEL_CONFIG, **spec)


def _typeddict_struct(
    name: str, fields: dict[str, tuple[Any, VariableDefinition]], *, config: ConfigDict = _FORBID
) -> Any:
    """A TypedDict validated straight into a plain dict: every key required except those whose
    default is null (they may be omitted, and then read as None)."""
    annotations = {
        field: (annotation if child.derived_default() is not None
                else NotRequired[Optional[annotation]])  # noqa: UP045
        for field, (annotation, child) in fields.items()
    }  # fmt: skip
    # A TypedDict made at run time from the definitions: mypy reads only literal ones.
    struct = TypedDict(_model_name(name), annotations)  # type: ignore[misc]
    struct.__pydantic_config__ = config  # type: ignore[attr-defined]
    return struct


def _model_name(name: str) -> str:
    return (
        "".join(part.capitalize() for part in re.split(r"[^0-9A-Za-z]+", name) if part) or "State"
    )


_MODELS: dict[tuple[str, str], Any] = {}


def _cached(kind: str, definitions: Definitions, build: Callable[[], Any]) -> Any:
    key = (kind, definitions_hash(definitions))
    if key not in _MODELS:
        _MODELS[key] = build()
    return _MODELS[key]


def _state_model(name: str, definitions: Definitions, with_name: bool) -> type[BaseModel]:
    fields = {var: (annotation_for(d, var, _model_struct), d) for var, d in definitions.items()}
    model = _model_struct(f"{name}Variables", fields, defaults=True)
    if not with_name:
        return model
    # The agent's name is required: a subclass adds it without a default.
    return create_model(name, __base__=model, name=(str, Field(min_length=1)))


def create_agent_state_model(agent_vars: Definitions) -> type[BaseModel]:
    """A pydantic model of one agent's state: ``name`` plus every agent variable.

    Example:
        >>> from multiagent.variables import VariableDefinition as V
        >>> Model = create_agent_state_model({"gold": V(type="int", min=0, default=5)})
        >>> Model(name="Ann").gold, Model(name="Ann", gold="7").gold
        (5, 7)
    """
    return _cached("agent", agent_vars, lambda: _state_model("AgentState", agent_vars, True))


def create_global_state_model(global_vars: Definitions) -> type[BaseModel]:
    """A pydantic model of the global state: every global variable, defaults filled in."""
    return _cached("global", global_vars, lambda: _state_model("GlobalState", global_vars, False))


# -- fast validation of whole states ------------------------------------------------------------


class StateValidator:
    """Validates the agents' and the global state into plain dicts in one pydantic-core call.

    Every variable must be present (a state is complete) and no other key may be; values are
    coerced as pydantic's lax mode does, never past a bound. Errors raise
    ``StateValidationError`` with readable paths.

    The reference validators are TypedDicts that forbid unknown keys inside pydantic-core, which
    then builds a set of the keys it used for every state it reads: the largest cost after the
    values themselves (``python -m benchmarks.multiagent --ablation`` shows it). Two faster ones
    share their schema and may only ever answer what the reference would:

    - Python data: unknown keys are ignored and a count finds them instead. The output holds
      exactly the known keys its input had, so an input with another key is longer than its
      output, and goes to the reference (as does any error and anything but a plain dict).
    - JSON: pydantic-core reads JSON objects into a model's fields faster than into a TypedDict,
      so the top-level state is a model there (its nested values stay TypedDicts) and each
      state's ``__dict__`` is the answer, less the optional variables the input left out. Any
      error goes to the reference; names that cannot be model fields (``model_config``,
      ``_x``) keep the reference.

    Example:
        >>> from multiagent.variables import VariableDefinition as V
        >>> validator = StateValidator({"gold": V(type="int", min=0)}, {})
        >>> validator.agents({"Ann": {"name": "Ann", "gold": "7"}})
        {'Ann': {'name': 'Ann', 'gold': 7}}
        >>> validator.agents({"Ann": {"name": "Ann", "gold": -1}})
        Traceback (most recent call last):
        ...
        multiagent.errors.StateValidationError: agents[Ann].gold: Input should be greater than ...
        >>> validator.agents(b'{"Ann": {"name": "Ann", "gold": 1, "silver": 2}}', json=True)
        Traceback (most recent call last):
        ...
        multiagent.errors.StateValidationError: agents[Ann].silver: Extra inputs are not permitted
    """

    def __init__(self, agent_vars: Definitions, global_vars: Definitions) -> None:
        self.agent_vars, self.global_vars = dict(agent_vars), dict(global_vars)
        key = {**{f"agent.{k}": v for k, v in agent_vars.items()},
               **{f"global.{k}": v for k, v in global_vars.items()}}  # fmt: skip
        self._agents, self._global = _cached("validator", key, self._build)

    def _build(self) -> tuple[_Validators, _Validators]:
        agent_fields = {
            "name": (str, VariableDefinition(type="str", default="")),
            **{var: (annotation_for(d, var, _typeddict_struct), d)
               for var, d in self.agent_vars.items()},
        }  # fmt: skip
        global_fields = {
            var: (annotation_for(d, var, _typeddict_struct), d)
            for var, d in self.global_vars.items()
        }
        return (
            _Validators.build("AgentState", agent_fields, lambda item: dict[str, item]),  # type: ignore[valid-type]
            _Validators.build("GlobalState", global_fields, lambda item: item),
        )

    def agents(self, agents: Any, *, json: bool = False) -> dict[str, dict[str, Any]]:
        """All agents' states (``{name: {var: value}}``), from Python data or JSON bytes."""
        validators = self._agents
        try:
            if json:
                if validators.json_model is not None:
                    states = validators.json_model.validate_json(agents)
                    return {name: _fields_given(state) for name, state in states.items()}
            elif type(agents) is dict:
                validated = validators.fast.validate_python(agents)
                if len(validated) == len(agents) and _same_sizes(agents, validated):
                    return validated
        except ValidationError:
            pass  # the reference names every error, unknown keys included
        try:
            return validators.reference.validate_json(agents) if json else (
                validators.reference.validate_python(agents)
            )  # fmt: skip
        except ValidationError as error:
            raise StateValidationError(
                format_errors(error, "agents", self.agent_vars, keyed=True)
            ) from None

    def global_state(self, state: Any, *, json: bool = False) -> dict[str, Any]:
        """The global state (``{var: value}``), from Python data or JSON bytes."""
        validators = self._global
        try:
            if json:
                if validators.json_model is not None:
                    return _fields_given(validators.json_model.validate_json(state))
            elif type(state) is dict:
                validated = validators.fast.validate_python(state)
                if len(validated) == len(state):
                    return validated
        except ValidationError:
            pass
        try:
            return validators.reference.validate_json(state) if json else (
                validators.reference.validate_python(state)
            )  # fmt: skip
        except ValidationError as error:
            raise StateValidationError(
                format_errors(error, "global_state", self.global_vars, keyed=False)
            ) from None


class _Validators(NamedTuple):
    """One state's validators: the reference, the fast one for Python data, the one for JSON."""

    reference: TypeAdapter
    fast: Any  # pydantic-core's SchemaValidator, called without TypeAdapter's wrapper
    json_model: Any

    @classmethod
    def build(
        cls,
        name: str,
        fields: dict[str, tuple[Any, VariableDefinition]],
        container: Callable[[Any], Any],
    ) -> _Validators:
        reference = _typeddict_struct(f"{name}Dict", fields)
        fast = _typeddict_struct(f"{name}Dict", fields, config=_IGNORE_EXTRA)
        model = _json_model(name, fields)
        return cls(
            TypeAdapter(container(reference)),
            TypeAdapter(container(fast)).validator,
            None if model is None else TypeAdapter(container(model)).validator,
        )


def _json_model(name: str, fields: dict[str, tuple[Any, VariableDefinition]]) -> Any:
    """The top-level state as a model (for JSON input), or None when a variable's name cannot be
    a model field as it is (a BaseModel attribute, private, protected or not an identifier)."""
    plain = (
        field.isidentifier() and not keyword.iskeyword(field) and not hasattr(BaseModel, field)
        and not field.startswith(("_", "model_"))
        for field in fields
    )  # fmt: skip
    if not all(plain):
        return None
    spec: dict[str, Any] = {
        field: (annotation, ...) if child.derived_default() is not None
        else (Optional[annotation], None)  # noqa: UP045
        for field, (annotation, child) in fields.items()
    }  # fmt: skip
    return create_model(_model_name(name), __config__=_FORBID, **spec)


def _fields_given(state: BaseModel) -> dict[str, Any]:
    """A validated model's fields as a dict, as the TypedDict has them: without the optional
    variables the input left out."""
    fields = state.__dict__
    given = state.__pydantic_fields_set__
    if len(given) == len(fields):
        return fields
    return {field: value for field, value in fields.items() if field in given}


def _same_sizes(inputs: dict[str, Any], outputs: dict[str, dict[str, Any]]) -> bool:
    """Whether every input state has as many keys as its validated output (in the same order)."""
    try:
        return all(map(operator.eq, map(len, inputs.values()), map(len, outputs.values())))
    except TypeError:  # an input state without a length: let the reference judge it
        return False


def validate_value(defn: VariableDefinition, value: Any, path: str) -> Any:
    """One value of ``defn`` (a default, an action), coerced, or ``StateValidationError``."""
    # Model structs (not TypedDicts): fields whose default is null come back filled as None.
    adapter = _cached(
        "value", {"value": defn}, lambda: TypeAdapter(annotation_for(defn, "value", _model_struct))
    )
    try:
        return adapter.dump_python(adapter.validate_python(value), by_alias=True)
    except ValidationError as error:
        errors = format_errors(error, "", {"value": defn}, keyed=False, prefix_loc=("value",))
        raise StateValidationError(
            [(path + p[len("value") :], message) for p, message in errors]
        ) from None


# -- error paths --------------------------------------------------------------------------------


def _step(defn: VariableDefinition | None, part: object) -> tuple[str, VariableDefinition | None]:
    """How one pydantic ``loc`` element reads in a path under ``defn``, and the definition below."""
    if defn is None:
        return (f"[{part}]" if isinstance(part, int) else f".{part}"), None
    if defn.schema_ is not None:
        return f".{part}", defn.schema_.get(str(part))
    if defn.type == "dict":
        return f"[{part}]", defn.value_type
    if defn.type == "list":
        return f"[{part}]", defn.item_type
    if defn.type == "tuple" and isinstance(part, int) and defn.item_types:
        return f"[{part}]", defn.item_types[part] if part < len(defn.item_types) else None
    return f".{part}", None


def _too_long(error: Any, path: str) -> str:
    context = error.get("ctx") or {}
    limit = context.get("max_length")
    if error["type"] == "string_too_long":
        got = len(error["input"]) if isinstance(error.get("input"), str) else "more"
        return (f"String exceeds maximum length of {limit} characters (got {got} characters) "
                f"at field '{path}'")  # fmt: skip
    kind = context.get("field_type", "Collection")
    size = context.get("actual_length")
    if size is None:  # pydantic leaves it out for dicts
        size = len(error["input"]) if hasattr(error.get("input"), "__len__") else "more"
    return f"{kind} exceeds maximum size of {limit} items (got {size} items) at field '{path}'"


def format_errors(
    error: ValidationError,
    root: str,
    definitions: Definitions,
    *,
    keyed: bool,
    prefix_loc: tuple[object, ...] = (),
) -> list[tuple[str, str]]:
    """``(path, message)`` for every error: ``agents[Trader_1].inventory.food``-style paths."""
    formatted = []
    for item in error.errors(include_url=False):
        loc = list(prefix_loc) + list(item["loc"])
        path = root
        if keyed and loc:
            path += f"[{loc.pop(0)}]"
        defn: VariableDefinition | None = None
        if loc:
            first = str(loc.pop(0))
            path += f".{first}" if path else first
            defn = definitions.get(first)
        for part in loc:
            if part == "[key]":
                path += " (key)"
                continue
            step, defn = _step(defn, part)
            path += step
        message = item["msg"]
        if item["type"] in ("too_long", "string_too_long"):
            message = _too_long(item, path)
        elif item["type"] == "literal_error" and defn is not None and defn.type == "categorical":
            message = not_one_of(item["input"], [str(value) for value in defn.values or []])
        elif item["type"] == "missing":
            whole_variable = not loc and not prefix_loc
            message = "missing (every variable must be present)" if whole_variable else "missing"
        formatted.append((path, message))
    return formatted
