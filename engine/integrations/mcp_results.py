"""MCP tool results as the gateway's hooks see them, and back.

A ``CallToolResult`` becomes ``{content, structuredContent, isError}`` (and ``_meta`` when the
server sent one) with each binary block replaced by a stub that names its position
(``_Stubs``); a hook's replacement becomes a ``CallToolResult`` again, each stub left in place
restored to exactly its own block (``result_from_change``), and wherever a hook left what it was
shown, the server's original value is handed back (``with_originals``).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from engine.boundary import CUT_KEY, normalize_value

STUB_KEY = "stub"
"""The field naming a binary block's stub: the block's position in the upstream's content."""

_PAYLOADS = {"image": "data", "audio": "data", "resource": "blob"}
"""Per block type, the field holding its base64 payload (a resource's inside ``resource``)."""


@dataclass
class _Stubs:
    """The binary blocks hidden from hooks, each under the number its stub carries."""

    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)

    def hide(self, item: dict[str, Any], position: int) -> dict[str, Any]:
        """The stub standing for ``item`` (``item`` itself if it holds no binary payload)."""
        kind = item.get("type")
        holder = item.get("resource") if kind == "resource" else item
        payload = _PAYLOADS.get(kind) if isinstance(kind, str) else None
        if payload is None or not isinstance(holder, dict):
            return item
        if not isinstance(holder.get(payload), str):
            return item
        self.blocks[position] = item
        shown = {key: value for key, value in holder.items() if key != payload}
        shown["bytes"] = _size(holder, payload)
        if holder is item:
            return {**shown, STUB_KEY: position}
        return {**item, "resource": shown, STUB_KEY: position}

    def restore(self, item: Any) -> Any:
        """The block a stub stands for, with the fields a hook changed beside the payload
        (its ``_meta``, say); anything that is no stub of this result as it is."""
        if not isinstance(item, dict) or type(item.get(STUB_KEY)) is not int:
            return item
        original = self.blocks.get(item[STUB_KEY])
        if original is None or item.get("type") != original.get("type"):
            return item
        stub = {key: value for key, value in item.items() if key != STUB_KEY}
        holder, source = stub, original
        if original["type"] == "resource":
            holder, source = dict(stub.get("resource") or {}), original["resource"]
        payload = _PAYLOADS[original["type"]]
        if holder.pop("bytes", None) != _size(source, payload):
            return item
        holder[payload] = source[payload]
        return {**stub, "resource": holder} if original["type"] == "resource" else holder


def result_event(
    result: types.CallToolResult, *, include_binary: bool = False
) -> tuple[dict[str, Any], _Stubs]:
    """``{content, structuredContent, isError}`` (and ``_meta`` when the result has one) as
    hooks see it, and the stubs to restore.

    Without ``include_binary`` an image or audio block, or an embedded blob, is a stub: the
    block with its base64 payload replaced by ``bytes`` (its size) and ``stub`` (its
    position in the content). A stub left in the result is its own block again, with what
    a hook changed beside the payload; a stub dropped never comes back.
    """
    stubs = _Stubs()
    content = []
    for position, block in enumerate(result.content):
        item = block.model_dump(by_alias=True, mode="json", exclude_none=True)
        content.append(item if include_binary else stubs.hide(item, position))
    seen = {"content": content, "structuredContent": result.structured_content}
    seen["isError"] = bool(result.is_error)
    if result.meta is not None:
        seen["_meta"] = result.meta
    return seen, stubs


def _size(item: Mapping[str, Any], key: str) -> int:
    try:
        return len(base64.b64decode(item[key], validate=False))
    except ValueError:
        return len(item[key])


def with_originals(new: Any, original: Any) -> Any:
    """A hook's value ``new``, with ``original`` wherever the hook left the value it was shown.

    Hooks see ``original`` normalised (engine/boundary.py: an integer past 2**53 as its
    decimal string, a lone surrogate as U+FFFD); what they did not change must go on as the
    client or the upstream sent it, not as the engine showed it.
    """
    shown, _ = normalize_value(original, "value")
    return _restored(new, shown, original)


def _restored(new: Any, shown: Any, original: Any) -> Any:
    if same_json(new, shown):
        return original
    if type(new) is dict and type(shown) is dict and type(original) is dict:
        both = shown.keys() & original.keys()
        return {
            key: _restored(value, shown[key], original[key]) if key in both else value
            for key, value in new.items()
        }
    lists = type(new) is list and type(shown) is list and type(original) is list
    if lists and len(new) == len(shown) == len(original):
        return [_restored(*items) for items in zip(new, shown, original, strict=True)]
    return new


def same_json(one: Any, other: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, nor ``1`` ``1.0``."""
    if type(one) is not type(other):
        return False
    if type(one) is dict:
        return one.keys() == other.keys() and all(same_json(one[k], other[k]) for k in one)
    if type(one) is list:
        return len(one) == len(other) and all(map(same_json, one, other))
    return bool(one == other)


def result_from_change(value: Any, stubs: _Stubs | None = None) -> types.CallToolResult:
    """The ``CallToolResult`` a hook's replacement result stands for.

    Raises:
        ValueError: ``value`` is not an object with a ``content`` list, or is not a valid
            ``CallToolResult`` (the message names the field).
    """
    if not isinstance(value, Mapping):
        raise ValueError(
            f"must be an object {{content, structuredContent, isError}}, not {_kind(value)}"
        )
    if not isinstance(value.get("content"), list):
        raise ValueError(f"content: must be a list, not {_kind(value.get('content'))}")
    if not isinstance(value.get("isError", False), bool):
        raise ValueError(f"isError: must be true or false, not {_kind(value['isError'])}")
    unknown = sorted(set(value) - {"content", "structuredContent", "isError", "_meta"})
    if CUT_KEY in unknown:  # the boundary cut the result to fit the event (docs/points.md)
        raise ValueError("the result is over the event's size cap, and was cut for the hooks")
    if unknown:
        raise ValueError(f"{unknown[0]}: is not a field of a tool result")
    data = dict(value)
    if stubs is not None:
        data["content"] = [stubs.restore(item) for item in value["content"]]
    if data.get("structuredContent") is None:
        data.pop("structuredContent", None)
    try:
        return types.CallToolResult.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"{where}: {first['msg']}") from exc


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
