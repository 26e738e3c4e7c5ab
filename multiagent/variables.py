"""``VariableDefinition``: the typed definition language for state variables and actions.

Types: float, int, bool, categorical (scalars) and dict, list, tuple, str, object. A nested type is
written as a scalar name (``value_type: float``) or as a full definition; both load to a
``VariableDefinition``. Limits (nesting depth at load, sizes at run time) are constants here.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "MAX_DICT_DEPTH",
    "MAX_DICT_ITEMS",
    "MAX_LIST_DEPTH",
    "MAX_LIST_ITEMS",
    "MAX_STR_LENGTH",
    "MAX_TOTAL_DEPTH",
    "SCALAR_TYPES",
    "VariableDefinition",
    "VariableType",
    "depths",
]

MAX_DICT_DEPTH = 4
MAX_LIST_DEPTH = 3
MAX_TOTAL_DEPTH = 10
MAX_DICT_ITEMS = 1000
MAX_LIST_ITEMS = 1000
MAX_STR_LENGTH = 10_000

VariableType = Literal[
    "float", "int", "bool", "categorical", "dict", "list", "tuple", "str", "object"
]
SCALAR_TYPES = ("float", "int", "bool", "categorical", "str")
_NESTED_FIELDS = ("value_type", "item_type")

# Which optional fields each type may carry; any other one is a mistake worth naming.
_APPLIES = {
    "float": {"min", "max"},
    "int": {"min", "max"},
    "bool": set(),
    "categorical": {"values"},
    "dict": {"key_type", "value_type", "schema_", "keys"},
    "list": {"item_type", "max_length"},
    "tuple": {"item_types"},
    "str": {"pattern", "max_length"},
    "object": {"schema_"},
}
_FIELD_NAMES = {"schema_": "schema"}


class VariableDefinition(BaseModel):
    """One state variable, action field or nested element.

    Example:
        >>> VariableDefinition(type="list", item_type="float", max_length=5).item_type.type
        'float'
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    type: VariableType = Field(description="The variable's type")
    min: float | None = Field(None, description="Lower bound (float, int)")
    max: float | None = Field(None, description="Upper bound (float, int)")
    values: list[str] | None = Field(None, description="The allowed values (categorical)")
    default: Any = Field(None, description="Initial value; derived from the type when absent")
    key_type: Literal["str", "int"] | None = Field(None, description="Key type (dynamic dict)")
    value_type: VariableDefinition | None = Field(None, description="Value type (dynamic dict)")
    keys: list[str] | None = Field(None, description="Keys a dynamic dict may hold (optional)")
    item_type: VariableDefinition | None = Field(None, description="Item type (list)")
    item_types: list[VariableDefinition] | None = Field(None, description="Element types (tuple)")
    schema_: dict[str, VariableDefinition] | None = Field(
        None, alias="schema", description="Field definitions (object, fixed-schema dict)"
    )
    pattern: str | None = Field(None, description="Whole-string regex (str)")
    max_length: int | None = Field(None, description="Most items (list) or characters (str)")

    @model_validator(mode="before")
    @classmethod
    def _expand_scalar_names(cls, data: Any) -> Any:
        """``value_type: float`` is short for ``value_type: {type: float}``."""
        if isinstance(data, str):
            return {"type": data}
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name in _NESTED_FIELDS:
            if isinstance(data.get(name), str):
                data[name] = {"type": data[name]}
        if isinstance(data.get("item_types"), list):
            data["item_types"] = [
                {"type": item} if isinstance(item, str) else item for item in data["item_types"]
            ]
        return data

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"pattern {pattern!r} is not a valid regex: {error}") from None
        return pattern

    @model_validator(mode="after")
    def _check_shape(self) -> VariableDefinition:
        allowed = _APPLIES[self.type]
        stray = [
            _FIELD_NAMES.get(name, name)
            for name in ("min", "max", "values", "key_type", "value_type", "keys", "item_type",
                         "item_types", "schema_", "pattern", "max_length")
            if getattr(self, name) is not None and name not in allowed
        ]  # fmt: skip
        if stray:
            raise ValueError(f"{', '.join(stray)} does not apply to type '{self.type}'")
        getattr(self, f"_check_{self.type}", lambda: None)()
        return self

    def _check_float(self) -> None:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min:g}) is greater than max ({self.max:g})")

    def _check_int(self) -> None:
        for bound in ("min", "max"):
            value = getattr(self, bound)
            if value is not None and value != int(value):
                raise ValueError(f"{bound} of an int must be a whole number, got {value:g}")
            if value is not None and not -(2**63) <= value < 2**63:
                raise ValueError(f"{bound} of an int must fit in 64 bits, got {value:g}")
        self._check_float()

    def _check_categorical(self) -> None:
        if not self.values:
            raise ValueError("categorical needs a non-empty 'values' list")
        if len(set(self.values)) != len(self.values):
            raise ValueError(f"categorical values repeat: {self.values}")

    def _check_dict(self) -> None:
        dynamic = self.key_type is not None or self.value_type is not None
        if dynamic == (self.schema_ is not None):
            raise ValueError("dict needs exactly one of (key_type + value_type) or schema")
        if dynamic and (self.key_type is None or self.value_type is None):
            raise ValueError("a dynamic dict needs both key_type and value_type")
        if self.keys is not None and self.key_type != "str":
            raise ValueError("keys can only be declared for key_type 'str'")

    def _check_list(self) -> None:
        if self.item_type is None:
            raise ValueError("list needs item_type")
        if self.max_length is not None and not 1 <= self.max_length <= MAX_LIST_ITEMS:
            raise ValueError(
                f"max_length of a list must be 1..{MAX_LIST_ITEMS}, got {self.max_length}"
            )

    def _check_tuple(self) -> None:
        if not self.item_types:
            raise ValueError("tuple needs a non-empty item_types list")

    def _check_str(self) -> None:
        if self.max_length is not None and self.max_length <= 0:
            raise ValueError(f"max_length of a str must be > 0, got {self.max_length}")

    def _check_object(self) -> None:
        if not self.schema_:
            raise ValueError("object needs a non-empty schema")

    # -- derived facts --------------------------------------------------------------------------

    @property
    def fields(self) -> dict[str, VariableDefinition] | None:
        """The fixed fields of an object or fixed-schema dict, else None."""
        return self.schema_

    def children(self) -> list[tuple[str, VariableDefinition]]:
        """(path step, definition) of every nested definition, in path notation."""
        if self.schema_ is not None:
            return [(f".{name}", child) for name, child in self.schema_.items()]
        if self.value_type is not None:
            return [("[key]", self.value_type)]
        if self.item_type is not None:
            return [("[i]", self.item_type)]
        return [(f"[{i}]", child) for i, child in enumerate(self.item_types or [])]

    @property
    def value_definition(self) -> VariableDefinition:
        """A dynamic dict's value type: validation sets it whenever ``key_type`` is set."""
        if self.value_type is None:
            raise TypeError(f"a {self.type} variable without value_type has no value definition")
        return self.value_type

    @property
    def item_definition(self) -> VariableDefinition:
        """A list's item type: validation sets it for every list."""
        if self.item_type is None:
            raise TypeError(f"a {self.type} variable without item_type has no item definition")
        return self.item_type

    def derived_default(self) -> Any:
        """The declared default, or the natural one for the type when none was given."""
        if self.default is not None or self.type == "str":
            return self.default
        if self.type in ("float", "int"):
            value = 0.0 if self.min is None else self.min
            value = value if self.max is None else min(value, self.max)
            return int(value) if self.type == "int" else float(value)
        if self.type == "bool":
            return False
        if self.type == "categorical":
            return (self.values or [""])[0]
        if self.schema_ is not None:
            return {name: child.derived_default() for name, child in self.schema_.items()}
        if self.type == "dict":
            return {}
        if self.type == "list":
            return []
        return tuple(child.derived_default() for child in self.item_types or [])


def depths(defn: VariableDefinition) -> tuple[int, int, int]:
    """(dict depth, list depth, total container depth) of the deepest path through ``defn``.

    ``dict[str, dict[str, int]]`` has dict depth 2 and total depth 2; scalars count 0.
    """
    own = (
        int(defn.type == "dict"),
        int(defn.type == "list"),
        int(defn.type in ("dict", "list", "tuple", "object")),
    )
    below = [depths(child) for _, child in defn.children()] or [(0, 0, 0)]
    return tuple(own[i] + max(b[i] for b in below) for i in range(3))  # type: ignore[return-value]
