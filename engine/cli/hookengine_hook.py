"""``hookengine-hook``: forward one Claude Code / Codex hook event to ``hookengine serve``.

Reads the hook's JSON on stdin, POSTs it to ``$HOOKENGINE_URL`` (for example
``http://127.0.0.1:8765/v1/claude-code/demo``, ``?dialect=codex`` for Codex) with
``$HOOKENGINE_TOKEN`` as a bearer token, and prints the answer. Standard library only, so
that it starts in a few tens of milliseconds: no pydantic, SQLAlchemy or engine runtime.

It always exits 0 with JSON. When the service cannot answer (down, slow, a refusal, an
answer that is not a JSON object) it prints the event's failure answer: a deny at
PreToolUse, a block at UserPromptSubmit and PostToolUse, a warning elsewhere.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request

from engine.integrations.claude_code import event_name, failure_output

TYPE_CHECKING = False  # typing is not imported at run time: start-up counts
if TYPE_CHECKING:
    from typing import Any

TIMEOUT_S = 20.0
"""Seconds to wait for the service (``$HOOKENGINE_TIMEOUT`` overrides it)."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hookengine-hook`` console script."""
    raw = sys.stdin.buffer.read()
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    # ASCII escapes: any text, a lone surrogate included, prints under any locale
    sys.stdout.write(json.dumps(forward(raw, payload)) + "\n")
    return 0


def forward(raw: bytes, payload: Any) -> dict[str, Any]:
    """The service's answer to ``raw``, or the event's failure answer naming what failed."""
    event = event_name(payload)
    url = os.environ.get("HOOKENGINE_URL", "")
    if not url.startswith(("http://", "https://")):
        return failure_output(event, "HOOKENGINE_URL is not set to an http(s) URL")
    try:
        answer = _post(url, raw, os.environ.get("HOOKENGINE_TOKEN"), _timeout())
    except urllib.error.HTTPError as exc:
        message = f"the policy service answered HTTP {exc.code}{_detail(exc)}"
        return failure_output(event, message)
    except (OSError, ValueError) as exc:  # URLError, timeouts and bad JSON are among these
        message = f"the policy service at {_origin(url)} did not answer ({_reason(exc)})"
        return failure_output(event, message)
    if not isinstance(answer, dict):
        return failure_output(event, "the policy service's answer is not an object")
    return answer


def _post(url: str, body: bytes, token: str | None, timeout: float) -> Any:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def _timeout() -> float:
    try:
        value = float(os.environ.get("HOOKENGINE_TIMEOUT", TIMEOUT_S))
    except ValueError:
        return TIMEOUT_S
    return value if value > 0 else TIMEOUT_S


def _detail(exc: urllib.error.HTTPError) -> str:
    """The service's error message (``{code, message}``), if its body has one."""
    try:
        body = json.loads(exc.read() or b"null")
    except (OSError, ValueError):
        return ""
    message = body.get("message") if isinstance(body, dict) else None
    return f": {str(message)[:300]}" if message else ""


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason if reason is not None else exc)[:300] or type(exc).__name__


def _origin(url: str) -> str:
    """The URL without its path or query (no secrets are in either, but keep it short)."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0].rsplit('@', 1)[-1]}"


if __name__ == "__main__":
    sys.exit(main())
