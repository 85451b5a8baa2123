"""A tool is a plain typed function; ``@tool`` turns it into a :class:`Tool`.

The signature is the input schema (``Annotated[int, Field(ge=0, description=...)]`` for limits),
the return annotation (a TypedDict) is the output schema, the docstring is the description.
Keyword-only parameters named ``wiki``, ``host``, ``principal`` or ``ctx`` are not arguments: the
adapter injects them (``wiki`` is the service layer bound to the caller). A tool may be ``async``
(awaited on the request's event loop; it may send notifications through ``ctx``, so its answer is
an SSE stream) or plain (called inline on that same loop: each server thread has a loop of its
own, so nothing else waits for it; :mod:`hostcore.mcp.endpoint`).
"""

from __future__ import annotations

import copy
import inspect
import json
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import mcp_types
import pydantic
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from hostcore.domain.principal import check_scope
from hostcore.errors import ValidationError

INJECTED = frozenset({"wiki", "host", "principal", "ctx"})


class Injected:
    """What tools, resources and prompts share: a function that asks for some of INJECTED."""

    inject: frozenset[str]

    def bind(self, arguments: dict[str, Any], **available: Any) -> dict[str, Any]:
        """Arguments plus the injected values this function asks for."""
        return {**arguments, **{k: v for k, v in available.items() if k in self.inject}}
# The integers JSON can carry exactly (and JavaScript clients can send): any int argument without
# tighter bounds gets these, so a 400-digit offset is refused at parsing, never reaches the service.
MAX_INT = 2**53 - 1
_SAFE_INT = Annotated[int, Field(ge=-MAX_INT, le=MAX_INT)]
# What each strict type error expected, in the words of JSON.
_EXPECTED = {
    "int_type": "an integer",
    "bool_type": "a boolean (true or false)",
    "string_type": "a string",
    "float_type": "a number",
    "list_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "typed_dict_type": "an object",
    "none_required": "null",
}
# Length and pattern errors, in the words of JSON: the context key holding the limit, the message.
_LENGTHS = {
    "string_too_short": ("min_length", "must be at least {} characters long"),
    "string_too_long": ("max_length", "must be at most {} characters long"),
    "too_short": ("min_length", "must have at least {} items"),
    "too_long": ("max_length", "must have at most {} items"),
    "string_pattern_mismatch": ("pattern", "must match the pattern {}"),
}
_BOUNDS = {
    "less_than_equal": ("le", "at most"),
    "greater_than_equal": ("ge", "at least"),
    "less_than": ("lt", "less than"),
    "greater_than": ("gt", "greater than"),
}


_SCHEMAS: dict[int, tuple[type[BaseModel], dict[str, Any]]] = {}
"""input model's id -> (the model, its cleaned JSON Schema); the model is kept so an id is never reused."""


@dataclass
class Tool(Injected):
    """An MCP tool: its function, schemas, required scope and annotations."""

    fn: Callable[..., Any]
    name: str
    title: str
    description: str
    scope: str
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool
    user_content: bool
    input_model: type[BaseModel]
    output_schema: dict[str, Any] | None
    inject: frozenset[str] = field(default_factory=frozenset)
    proposes: bool = False

    @property
    def admits(self) -> str:
        """The least scope a call needs: ``propose`` for a write tool that ``proposes`` (a caller
        who may only propose gets its write as a change request), else :attr:`scope`."""
        return "propose" if self.proposes and self.scope == "write" else self.scope

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's arguments (a copy: callers may change it). Made once per
        tool, which every app in the process shares: pydantic's schema generation is the bulk of
        building an app's tool list."""
        made = _SCHEMAS.get(id(self.input_model))
        if made is None or made[0] is not self.input_model:
            made = _SCHEMAS[id(self.input_model)] = (self.input_model, _clean(self.input_model.model_json_schema()))
        return copy.deepcopy(made[1])

    def parse(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Validate arguments strictly against the signature: no coercion ("5" is not an integer,
        1 is not a boolean). Raises ValidationError naming the field and the type expected."""
        try:
            model = self.input_model.model_validate(arguments or {})
        except pydantic.ValidationError as exc:
            err = exc.errors()[0]
            loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".") or "arguments"
            msg = err["msg"]
            if err["type"] == "missing":
                msg = "is required"
            elif err["type"] == "extra_forbidden":
                msg = f"is not an argument of {self.name}; see its input schema"
            elif err["type"] in _EXPECTED:
                msg = f"expected {_EXPECTED[err['type']]}, got {_describe(err['input'])}"
            elif err["type"] == "literal_error":
                msg = f"expected one of {err['ctx']['expected']}, got {_describe(err['input'])}"
            elif err["type"] in _LENGTHS:
                key, words = _LENGTHS[err["type"]]
                value = err["input"]
                got = _describe(value) if err["type"] == "string_pattern_mismatch" else str(len(value))
                msg = f"{words.format(err['ctx'][key])}, got {got}"
            elif err["type"] in _BOUNDS:
                key, words = _BOUNDS[err["type"]]
                msg = f"must be {words} {err['ctx'][key]}, got {_describe(err['input'])}"
            raise ValidationError(msg, field=loc) from None
        return {name: getattr(model, name) for name in type(model).model_fields}


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated per-property titles: noise to a model reading the schema."""
    if isinstance(schema, dict):
        out = {k: _clean(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
        if "properties" in schema:
            out["properties"] = {k: _clean(v) for k, v in schema["properties"].items()}
        return out
    if isinstance(schema, list):
        return [_clean(v) for v in schema]
    return schema


def _describe(value: Any) -> str:
    """A JSON value as an error message names it: ``the string "5"``, ``the boolean true``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {json.dumps(value)}"
    if isinstance(value, int):
        return "an integer" if len(str(abs(value))) > 20 else f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "..."
        return f"the string {json.dumps(shown, ensure_ascii=False)}"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _bounded(hint: Any) -> Any:
    """``hint`` with every plain ``int`` in it (in unions, lists, Annotated) limited to JSON's safe
    range; bounds declared on the argument itself still apply and are the ones the schema shows."""
    if hint is int:
        return _SAFE_INT
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        return Annotated[(_bounded(args[0]), *hint.__metadata__)]
    if origin in (types.UnionType, typing.Union):
        return typing.Union[tuple(_bounded(a) for a in args)]  # noqa: UP007 - built from a tuple
    if origin in (list, set, frozenset, tuple, dict) and args:
        return origin[tuple(_bounded(a) for a in args)]
    return hint


def _input_model(fn: Callable[..., Any], name: str) -> tuple[type[BaseModel], frozenset[str]]:
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    inject: set[str] = set()
    for param in inspect.signature(fn).parameters.values():
        if param.kind is param.KEYWORD_ONLY and param.name in INJECTED:
            inject.add(param.name)
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args and **kwargs cannot be described; name every argument")
        if param.name not in hints:
            raise TypeError(f"tool {name}: argument {param.name!r} needs a type annotation")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (_bounded(hints[param.name]), default)
    model = pydantic.create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid", strict=True), **fields
    )
    return model, frozenset(inject)


def _output_schema(fn: Callable[..., Any]) -> dict[str, Any] | None:
    ret = get_type_hints(fn, include_extras=True).get("return")
    if ret is None or ret is dict or ret is Any or (isinstance(ret, type) and issubclass(ret, mcp_types.Result)):
        return None
    try:
        schema = TypeAdapter(ret).json_schema()
    except pydantic.PydanticUserError:
        return None
    return _flatten(_clean(schema)) if schema.get("type") == "object" else None


def _flatten(schema: dict[str, Any]) -> dict[str, Any]:
    """The output schema as clients check it fastest, saying the same: ``$defs`` inlined where they
    are not recursive, and ``anyOf: [{type: X}, {type: null}]`` as ``type: [X, null]``.

    Clients check every result against it (the Python SDK's jsonschema resolves a ``$ref`` per
    item of a list and tries each branch of an ``anyOf``), so its shape is part of each call's cost.
    """
    defs: dict[str, Any] = schema.get("$defs", {})
    kept: set[str] = set()

    def walk(node: Any, inside: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(v, inside) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and len(node) == 1:
            name = ref.removeprefix("#/$defs/")
            if name in inside or name not in defs:  # recursive: stays a reference
                kept.add(name)
                return node
            return walk(defs[name], (*inside, name))
        out = {k: walk(v, inside) for k, v in node.items() if k != "$defs"}
        branches = out.get("anyOf")
        if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
            other = branches[0] if branches[1] == {"type": "null"} else branches[1]
            if isinstance(other, dict) and set(other) == {"type"} and isinstance(other["type"], str):
                del out["anyOf"]
                out["type"] = [other["type"], "null"]
        return out

    flat = walk(schema, ())
    done: dict[str, Any] = {}
    while kept - done.keys():  # a kept definition may keep others in turn
        name = min(kept - done.keys())
        done[name] = walk(defs[name], (name,))
    if done:
        flat["$defs"] = done
    return flat


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    title: str | None = None,
    scope: str = "read",
    read_only: bool = False,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool = False,
    user_content: bool = False,
    proposes: bool = False,
) -> Any:
    """Make a :class:`Tool` of a typed function. Use bare or with keyword options.

    ``scope``: the token scope a caller needs (read, write or admin). ``read_only`` tools change
    nothing; ``destructive`` (default: not read-only) ones may replace or remove content.
    ``user_content``: results carry text people wrote; the adapter frames it as data.
    ``proposes``: a write tool whose service method makes a change request of the write for a
    caller who may only propose (the ``propose`` scope admits the call; the service decides).
    """
    check_scope(scope)

    def make(func: Callable[..., Any]) -> Tool:
        tool_name = name or func.__name__
        doc = inspect.cleandoc(func.__doc__ or "")
        if not doc:
            raise TypeError(f"tool {tool_name}: write a docstring; it is the description agents read")
        model, inject = _input_model(func, tool_name)
        return Tool(
            fn=func,
            name=tool_name,
            title=title or tool_name.replace("_", " ").capitalize(),
            description=doc,
            scope=scope,
            read_only=read_only,
            destructive=(not read_only) if destructive is None else destructive,
            idempotent=read_only if idempotent is None else idempotent,
            open_world=open_world,
            user_content=user_content,
            input_model=model,
            output_schema=_output_schema(func),
            inject=inject,
            proposes=proposes,
        )

    return make(fn) if fn is not None else make
