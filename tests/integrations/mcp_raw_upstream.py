"""A scripted MCP server speaking JSON-RPC lines on stdio by hand: it answers what the SDK's
servers never send (error responses, unreadable results, no answer) and side channels (_meta,
progress text) carrying ``SECRET``.

``python mcp_raw_upstream.py LOG`` appends every method it receives to LOG (one a line).

Tools: ``echo`` (its arguments as text and as structuredContent; ``n`` is an integer),
``fail`` (a JSON-RPC error with ``arguments.code``, the secret in message and data),
``null_result``, ``surrogate`` (a text with a lone surrogate escape), ``wrong_id`` (the answer
names another id), ``silent`` (never answers), ``meta`` (the secret in the result's _meta),
``progress`` (a progress notice whose text holds the secret, then "done"), ``images`` (images
A and B of the same size and type around a text holding the secret), ``die`` (exits unanswered),
``misfit`` (structuredContent that does not fit its outputSchema: the secret where an integer
belongs, and as a key its schema does not allow), ``bad_shape`` (a text block whose text is an
object holding the secret).
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"
A = base64.b64encode(b"A" * 10).decode()
B = base64.b64encode(b"B" * 10).decode()

NAMES = ["echo", "fail", "null_result", "surrogate", "wrong_id", "silent", "meta", "progress"]
NAMES += ["images", "die", "misfit", "bad_shape"]
INTEGER_N = {"type": "object", "properties": {"n": {"type": "integer"}}}
ONLY_N = {**INTEGER_N, "additionalProperties": False}


def send(message: dict[str, Any] | str) -> None:
    line = message if isinstance(message, str) else json.dumps(message)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def answer(request_id: Any, result: Any) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def call(request_id: Any, params: dict[str, Any]) -> None:
    name, arguments = params["name"], params.get("arguments") or {}
    if name == "echo":
        answer(
            request_id, {"content": [text(json.dumps(arguments))], "structuredContent": arguments}
        )
    elif name == "fail":
        error = {"code": arguments["code"], "message": f"boom API_KEY={SECRET}"}
        send({"jsonrpc": "2.0", "id": request_id, "error": {**error, "data": {"k": SECRET}}})
    elif name == "null_result":
        answer(request_id, None)
    elif name == "surrogate":
        escaped = json.dumps({"content": [text(f"API_KEY={SECRET} ")]})[:-4] + '\\ud800"}]}'
        send(f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "result": {escaped}}}')
    elif name == "wrong_id":
        send({"jsonrpc": "2.0", "id": 99999, "result": {"content": [text(SECRET)]}})
    elif name == "meta":
        answer(request_id, {"content": [text("ok")], "_meta": {"debug": f"API_KEY={SECRET}"}})
    elif name == "progress":
        token = params.get("_meta", {}).get("progressToken")
        notice = {"progressToken": token, "progress": 1, "total": 2, "message": f"read {SECRET}"}
        send({"jsonrpc": "2.0", "method": "notifications/progress", "params": notice})
        answer(request_id, {"content": [text("done")]})
    elif name == "images":
        image = {"type": "image", "mimeType": "image/png"}
        blocks = [{**image, "data": A}, text(f"API_KEY={SECRET}"), {**image, "data": B}]
        answer(request_id, {"content": blocks})
    elif name == "die":
        sys.exit(3)
    elif name == "misfit":
        content = {SECRET: 1} if arguments.get("as_key") else {"n": f"API_KEY={SECRET}"}
        answer(request_id, {"content": [text("see below")], "structuredContent": content})
    elif name == "bad_shape":  # a text block whose text is no string, holding the secret
        answer(request_id, {"content": [{"type": "text", "text": {"key": SECRET}}]})


def main(log_path: str) -> None:
    with open(log_path, "a", encoding="utf-8") as log:
        for line in sys.stdin:
            message = json.loads(line)
            method, request_id = message.get("method"), message.get("id")
            log.write(f"{method}\n")
            log.flush()
            if method == "initialize":
                hello = {"protocolVersion": message["params"]["protocolVersion"]}
                hello |= {
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "raw", "version": "1"},
                }
                answer(request_id, hello)
            elif method == "tools/list":
                tools = [{"name": name, "inputSchema": {"type": "object"}} for name in NAMES]
                tools[0]["inputSchema"] = INTEGER_N
                tools[NAMES.index("misfit")]["outputSchema"] = ONLY_N
                answer(request_id, {"tools": tools})
            elif method == "tools/call":
                call(request_id, message["params"])
            elif request_id is not None and method is not None:
                answer(request_id, {})


if __name__ == "__main__":
    main(sys.argv[1])
