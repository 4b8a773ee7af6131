"""Tool results as the gateway's hooks see them and as their replacements are checked."""

from __future__ import annotations

import mcp_types as types
import pytest

from engine.integrations.mcp_results import result_event, result_from_change, with_originals

IMAGE = types.ImageContent(type="image", data="AAECAw==", mime_type="image/png")
TEXT = types.TextContent(type="text", text="hi")


def test_a_result_is_content_structured_content_and_is_error() -> None:
    result = types.CallToolResult(content=[TEXT], structured_content={"n": 1})
    seen, _ = result_event(result)
    assert seen == {
        "content": [{"type": "text", "text": "hi"}],
        "structuredContent": {"n": 1},
        "isError": False,
    }


def test_binary_blocks_are_stubs_that_turn_back_into_the_block() -> None:
    seen, stubs = result_event(types.CallToolResult(content=[IMAGE, TEXT]))
    assert seen["content"][0] == {"type": "image", "mimeType": "image/png", "bytes": 4, "stub": 0}
    rebuilt = result_from_change(seen, stubs)
    assert rebuilt.content == [IMAGE, TEXT]


def test_a_stub_restores_its_own_block_with_what_a_hook_changed_beside_the_payload() -> None:
    other = IMAGE.model_copy(update={"data": "BAUGBw==", "meta": {"k": "secret"}})
    blob = types.BlobResourceContents(uri="file:///a", blob="AAECAw==")
    resource = types.EmbeddedResource(type="resource", resource=blob)
    seen, stubs = result_event(types.CallToolResult(content=[IMAGE, other, resource]))
    assert seen["content"][2]["resource"] == {"uri": "file:///a", "bytes": 4}
    shown = [seen["content"][2], {**seen["content"][1], "_meta": {"k": "[REDACTED]"}}]
    rebuilt = result_from_change({"content": shown}, stubs)
    assert rebuilt.content == [resource, other.model_copy(update={"meta": {"k": "[REDACTED]"}})]


def test_a_hook_value_keeps_the_originals_it_left_as_shown() -> None:
    original = {"n": 2**70, "flag": 1, "items": [2**70, "a"]}
    shown = {"n": str(2**70), "flag": True, "items": [str(2**70), "b"]}  # flag: a change
    assert with_originals(shown, original) == {"n": 2**70, "flag": True, "items": [2**70, "b"]}


def test_include_binary_hands_the_data_itself() -> None:
    seen, _ = result_event(types.CallToolResult(content=[IMAGE]), include_binary=True)
    assert seen["content"][0]["data"] == "AAECAw=="


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[withheld]", "must be an object {content, structuredContent, isError}, not str"),
        ({"content": None}, "content: must be a list, not null"),
        ({"content": [], "extra": 1}, "extra: is not a field of a tool result"),
        ({"content": [{"type": "image", "bytes": 4}]}, "content.0"),
        ({"content": [], "isError": "yes"}, "isError: must be true or false, not str"),
        ({"content": [], "[cut]": "1 more keys"}, "the result is over the event's size cap"),
    ],
)
def test_a_replacement_that_is_no_call_tool_result_names_the_field(
    value: object, message: str
) -> None:
    with pytest.raises(ValueError) as info:
        result_from_change(value)
    assert message in str(info.value)
