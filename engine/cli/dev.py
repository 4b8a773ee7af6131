"""``hookengine dev``: an interactive conversation through one agent that reloads on save."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import Any

from engine.cli import common
from engine.cli.render import approval_line, outcome_lines, short
from engine.demo import offline_answer
from engine.errors import ApprovalError
from engine.explain import explain, explanation_lines
from engine.jsontext import MAX_DEPTH, parse_strict
from engine.outcome import Outcome
from engine.reload import ReloadEvent
from engine.runtime import Engine
from engine.why import deciders

COMMANDS = (
    ":status",
    ":explain",
    ":reload",
    ":approvals",
    ":approve",
    ":deny",
    ":help",
    ":quit",
)
HELP = f"""type a message to run a turn (offline answers), or:
  tool NAME {{json}}           run tool_call (e.g. tool delete_file {{"path": "a.txt"}})
  result NAME {{json}} JSON    run tool_result with an input and a result
  :approvals                 the session's calls waiting on a person
  :approve ID [note]         approve one (then run the same tool call again)
  :deny ID [note]            deny one
  {"  ".join(COMMANDS)}"""
PROMPT = "> "


class DevSession:
    """One agent, one scope; prints what each point decided and every reload of the agent."""

    def __init__(
        self,
        engine: Engine,
        agent: str,
        say: Callable[[str], None] = common.say,
        *,
        redraw: Callable[[], None] | None = None,
    ) -> None:
        self.engine = engine
        self.agent = engine.agent(agent)
        self._say, self._lock = say, threading.Lock()
        self._redraw = redraw
        """Draws the prompt again after a reload message (on a terminal)."""
        self._last_reload: tuple[Any, ...] | None = None
        self._broken = False
        self.scope: dict[str, Any] = {"user_id": "dev", "session_id": "dev-session"}
        assert engine.reloader is not None
        self._unsubscribe = engine.reloader.subscribe(self._on_reload)

    def say(self, text: str) -> None:
        with self._lock:  # reload reports come from the watcher thread
            self._say(text)

    def _on_reload(self, event: ReloadEvent) -> None:
        if event.agent != self.agent.name:
            return
        lines = self.reload_lines(event)
        if lines:
            # on a terminal the prompt is on the line: write over it, then draw it again
            start = "\r" if self._redraw is not None else ""
            self.say(start + "\n".join(f"[reload] {line}" for line in lines))
            if self._redraw is not None:
                self._redraw()

    def reload_lines(self, event: ReloadEvent) -> list[str]:
        """What to print of a reload: each outcome once (a save often fires twice), and a
        line when a refused file loads again."""
        key = (event.ok, event.generation, tuple(str(p) for p in event.problems))
        with self._lock:
            if key == self._last_reload or (event.ok and not event.swapped and not self._broken):
                return []
            self._last_reload, was_broken, self._broken = key, self._broken, not event.ok
        if not (event.ok and was_broken):
            return event.lines()
        files = ", ".join(event.files) or "the config"
        fixed = f"fixed: {files} loads again; generation {event.generation} is live"
        return [fixed, *event.lines()[1:]] if event.swapped else [fixed]

    def handle(self, line: str) -> bool:
        """Run one input line; False when the session should end."""
        line = line.strip()
        if not line:
            return True
        if line.startswith(":"):
            return self._command(line[1:])
        try:
            if line.startswith(("tool ", "result ")):
                self._tool(line)
            else:
                self.turn(line)
        except (ValueError, json.JSONDecodeError) as exc:
            self.say(f"error: {exc}")
        return True

    def _command(self, line: str) -> bool:
        name, _, rest = line.partition(" ")
        if name in ("q", "quit", "exit"):
            return False
        if name in ("approvals", "approve", "deny"):
            self.say("\n".join(self.approval_lines(name, rest.strip())))
        elif name == "status":
            from engine.cli.cmd_ops import status_lines

            self.say("\n".join(status_lines(self.engine.status())))
        elif name == "explain":
            self.say("\n".join(explanation_lines(explain(self.agent.pipeline))))
        elif name == "reload":
            self.engine.reload_agent(self.agent.name)
        elif name == "help":
            self.say(HELP)
        else:
            hint = common.suggestion(f":{name}", list(COMMANDS)).strip()
            self.say(f"unknown command :{name} {hint}; commands: {', '.join(COMMANDS)}")
        return True

    def approval_lines(self, verb: str, rest: str) -> list[str]:
        """``:approvals`` lists the session's waiting calls; ``:approve`` / ``:deny`` ID
        [note] decides one, as ``dev``."""
        if verb == "approvals":
            waiting = self.agent.approvals(session_id=self.scope["session_id"])
            return [approval_line(a) for a in waiting] or ["no approvals waiting"]
        approval_id, _, note = rest.partition(" ")
        if not approval_id:
            return [f"usage: :{verb} ID [note] (:approvals lists the ids)"]
        try:
            done = self.agent.resolve(
                approval_id, verb == "approve", by="dev", note=note.strip() or None
            )
        except ApprovalError as exc:
            return [f"error: {exc}"]
        return [f"{done.status}: {done.tool} {short(done.input)} (run the tool call again)"]

    def _tool(self, line: str) -> None:
        verb, rest = line.split(" ", 1)
        name, _, data = rest.strip().partition(" ")
        text = data.strip() or "{}"
        try:
            _, end = json.JSONDecoder().raw_decode(text)  # where the input ends
        except RecursionError:
            raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
        tool_input = parse_strict(text[:end])  # a repeated key is refused, not guessed
        if not isinstance(tool_input, dict):
            raise ValueError("the tool input must be a JSON object")
        if verb == "tool":
            self.show(self.agent.tool_call(name, tool_input, **self.scope))
            return
        result = parse_strict(text[end:].strip() or "null")
        self.show(self.agent.tool_result(name, tool_input, result, **self.scope))

    def turn(self, question: str) -> None:
        """A whole turn: user message, LLM call, answer, turn end (offline answers)."""
        first = self.show(self.agent.before_user_message(question, **self.scope))
        scope = {**self.scope, "turn_id": first.turn_id}
        if first.blocked:
            return
        question = first.question or question
        answer = first.answer
        if answer is None:
            self.show(
                self.agent.before_call(
                    "You are a helpful assistant.", [{"role": "user", "content": question}], **scope
                )
            )
            shown = self.show(
                self.agent.before_assistant_message(question, offline_answer(question), **scope)
            )
            answer = shown.answer or ""
        self.agent.after_turn(question, answer, **scope)
        self.say(f"assistant: {answer}")

    def show(self, out: Outcome) -> Outcome:
        """Print the outcome when something happened (a change, a block, a shadow decision)."""
        if out.changed or out.blocked or out.shadow or out.failed or out.point == "tool_call":
            _names, summary = deciders(
                out.hooks, {**out.decision(), "input_error": out.input_error}
            )
            self.say("\n".join([*outcome_lines(out, verbose=False), f"  => {summary}"]))
        return out

    def close(self) -> None:
        self._unsubscribe()


def run(session: DevSession, lines: Iterable[str], *, prompt: bool = False) -> None:
    """Feed ``lines`` to the session until they end or one says :quit."""
    session.say(
        f"dev: agent {session.agent.name}, generation "
        f"{session.agent.pipeline.generation}; reloading on save. :help for commands"
    )
    for line in lines:
        if not session.handle(line):
            break
        if prompt:
            draw_prompt()


def draw_prompt() -> None:
    common.say(PROMPT, end="", flush=True)
