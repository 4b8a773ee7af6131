"""Artifacts: files tool calls make, kept per session under ``<artifacts_dir>/<agent>/<session>/
<id>/<file name>`` with a row in the store; names checked, sizes capped, gone with the session
and with the user whose call made them."""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.config.models import ToolSettings
from engine.store import Store
from engine.store.artifacts import ArtifactRow
from engine.tools.base import ArtifactType, ToolInputError

_SAFE = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
_ID = re.compile(r"^[0-9a-f]{16}$")
"""An artifact id as the engine makes them (anything else is never used in a path)."""
_MIMES = {
    "chart": "application/json",
    "image": "image/png",
    "df": "text/csv",
    "file": "application/octet-stream",
    "txt": "text/plain",
    "svg": "image/svg+xml",
    "html": "text/html",
}
"""The MIME type of each artifact type, when the tool names none."""
TYPES = frozenset(_MIMES)


def safe_name(name: Any, *, what: str = "artifact name") -> str:
    """``name`` when it is a plain file name: no folder, no ``..``, not absolute, no control
    characters, at most 200 characters.

    Raises:
        ToolInputError: it is not.
    """
    if not isinstance(name, str) or not name.strip():
        raise ToolInputError(f"{what} must be a non-empty text")
    bad = (
        "/" in name
        or "\\" in name
        or name in (".", "..")
        or any(ord(c) < 32 or ord(c) == 127 for c in name)
        or len(name) > 200
        or re.match(r"^[A-Za-z]:", name) is not None
    )
    if bad:
        raise ToolInputError(f"{what} {name[:60]!r} must be a plain file name (no folders)")
    return name


def folder_of(session_id: str) -> str:
    """A session's folder name: the id itself when it is safe, else a digest of it."""
    if _SAFE.match(session_id) and not session_id.startswith("."):
        return session_id
    return "s-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]


class ArtifactStore:
    """Artifact files and rows of one engine. Thread-safe (a lock per add keeps the session
    caps exact within this process)."""

    def __init__(self, root: Path, store: Store, settings: ToolSettings) -> None:
        self.root, self.store, self.settings = root, store, settings
        self._lock = threading.Lock()

    def folder(self, agent: str, session_id: str, artifact_id: str) -> Path:
        return self.root / agent / folder_of(session_id) / artifact_id

    def add(self, meta: ArtifactMeta, data: bytes) -> ArtifactRow:
        """Write ``data`` and keep its row.

        Raises:
            ToolInputError: a bad name or type, or a cap exceeded (nothing is written then).
        """
        file_name = safe_name(meta.file_name)
        if meta.type not in TYPES:
            raise ToolInputError(f"artifact type {meta.type!r} is not one of {sorted(TYPES)}")
        s = self.settings
        if len(data) > s.max_artifact_bytes:
            raise ToolInputError(
                f"artifact {file_name!r} is {len(data)} bytes, over the cap of "
                f"{s.max_artifact_bytes} (engine.yaml tools.max_artifact_bytes)"
            )
        with self._lock:
            self._check_session(meta.session_id, len(data))
            artifact_id = meta.id if meta.id and _ID.match(meta.id) else uuid.uuid4().hex[:16]
            path = self.folder(meta.agent, meta.session_id, artifact_id) / file_name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            row = meta.row(artifact_id, file_name, data)
            self.store.artifact_add(row)
        return row

    def _check_session(self, session_id: str, size: int) -> None:
        s, rows = self.settings, self.store.artifacts_of(session_id)
        if len(rows) >= s.max_session_artifacts:
            raise ToolInputError(
                f"session already holds {len(rows)} artifacts, the cap "
                "(engine.yaml tools.max_session_artifacts)"
            )
        if sum(r.bytes for r in rows) + size > s.max_session_bytes:
            raise ToolInputError(
                f"the session's artifacts would exceed {s.max_session_bytes} bytes "
                "(engine.yaml tools.max_session_bytes)"
            )

    def rows(self, session_id: str) -> list[ArtifactRow]:
        return self.store.artifacts_of(session_id)

    def find(self, session_id: str, ref: str) -> ArtifactRow | None:
        """A session's artifact by id, or by file name (the newest of that name)."""
        rows = self.store.artifacts_of(session_id)
        for row in rows:
            if row.id == ref:
                return row
        named = [r for r in rows if r.file_name == ref or r.name == ref]
        return named[-1] if named else None

    def path(self, row: ArtifactRow) -> Path:
        return self.folder(row.agent, row.session_id, row.id) / safe_name(row.file_name)

    def read(self, session_id: str, ref: str) -> tuple[ArtifactRow, bytes] | None:
        row = self.find(session_id, ref)
        if row is None:
            return None
        try:
            return row, self.path(row).read_bytes()
        except OSError:
            return None

    def forget(self, session_id: str) -> int:
        """Delete a session's artifacts, rows and files; how many rows went."""
        agents = {r.agent for r in self.store.artifacts_of(session_id)}
        gone = self.store.artifact_forget(session_id)
        for agent in agents | {p.name for p in self._agent_dirs()}:
            shutil.rmtree(self.root / safe_name(agent) / folder_of(session_id), ignore_errors=True)
        return gone

    def remove_files(self, rows: list[ArtifactRow]) -> None:
        """Delete the files of artifact rows the store forgot (``Store.memory_forget`` of a
        session or a user): each artifact's folder, and its session folder once empty."""
        for row in rows:
            if not _ID.match(row.id):
                continue  # no id the engine made: never a path
            try:
                folder = self.root / safe_name(row.agent) / folder_of(row.session_id) / row.id
            except ToolInputError:
                continue
            shutil.rmtree(folder, ignore_errors=True)
            with contextlib.suppress(OSError):  # not empty: other artifacts, a call writing
                folder.parent.rmdir()

    def _agent_dirs(self) -> list[Path]:
        try:
            return [p for p in self.root.iterdir() if p.is_dir()]
        except OSError:
            return []


@dataclass
class ArtifactMeta:
    """What a tool says about an artifact it adds (the rest the store works out)."""

    agent: str
    session_id: str
    tool: str
    call_id: str | None
    name: str
    file_name: str
    type: str
    mime: str | None = None
    description: str = ""
    id: str | None = None
    user_id: str | None = None
    """The user whose call makes it: forgetting them deletes it (engine/store/artifacts.py)."""

    def row(self, artifact_id: str, file_name: str, data: bytes) -> ArtifactRow:
        return ArtifactRow(
            id=artifact_id,
            agent=self.agent,
            session_id=self.session_id,
            name=self.name,
            file_name=file_name,
            type=self.type,
            mime=self.mime or _MIMES.get(self.type, "application/octet-stream"),
            bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            tool=self.tool,
            call_id=self.call_id,
            description=self.description,
            time=datetime.now(UTC).isoformat(timespec="microseconds"),
            user_id=self.user_id,
        )


def shown_row(row: ArtifactRow) -> dict[str, Any]:
    """An artifact as ``ToolResult.artifacts`` lists it."""
    return {
        "id": row.id,
        "name": row.name,
        "type": row.type,
        "mime": row.mime,
        "bytes": row.bytes,
        "sha256": row.sha256,
    }


@dataclass
class CallContext:
    """The ``ToolContext`` of one call: who calls, where events go, where artifacts go."""

    agent: str
    tool: str
    session_id: str | None
    user_id: str | None
    call_id: str | None
    artifacts_store: ArtifactStore
    emit: Any = None
    ask: Any = None
    session_vars: dict[str, Any] = field(default_factory=dict)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    after_result: list[Callable[[str], dict[str, Any]]] = field(default_factory=list)
    """Events made from the result's final content (an Open WebUI citation): the call path
    makes and emits them after the ``tool_result`` hooks, so they carry what the hooks left."""
    _pending: list[tuple[ArtifactMeta, Path]] = field(default_factory=list)
    ended: bool = False
    """The call was answered without the tool (it timed out): a tool thread that runs on
    reaches the host no more (its events are dropped, its artifacts refused)."""
    failure: str | None = None
    """The exception the tool raised (its type and text), for the log once it is masked."""

    def end(self) -> None:
        """The call is answered without the tool: cut the tool's thread off from the host."""
        self.ended = True
        self.emit = None
        self.discard()

    def _meta(self, name: str, file_name: str, type: str, desc: str) -> ArtifactMeta:
        if self.ended:
            raise ToolInputError("the call has ended (it timed out): nothing more is kept")
        if self.session_id is None:
            raise ToolInputError("artifacts need a session: call the tool with a session_id")
        return ArtifactMeta(
            self.agent,
            self.session_id,
            self.tool,
            self.call_id,
            name,
            file_name,
            type,
            description=desc,
            user_id=self.user_id,
        )

    def add_artifact(
        self,
        name: str,
        file_name: str | None,
        type: ArtifactType,
        val: Any,
        desc: str = "",
        *,
        mime: str | None = None,
    ) -> str:
        meta = self._meta(name, file_name or name, type, desc)
        meta.mime = mime
        row = self.artifacts_store.add(meta, as_bytes(val, type))
        self.artifacts.append(shown_row(row))
        return row.id

    def create_artifact_path(
        self, name: str, file_name: str, type: ArtifactType, desc: str = ""
    ) -> tuple[str, Path]:
        meta = self._meta(name, safe_name(file_name), type, desc)
        meta.id = uuid.uuid4().hex[:16]
        folder = self.artifacts_store.folder(self.agent, meta.session_id, meta.id)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / meta.file_name
        self._pending.append((meta, path))
        return meta.id, path

    def artifact_path(self, ref: str) -> Path:
        row = None if self.session_id is None else self.artifacts_store.find(self.session_id, ref)
        if row is None:
            raise ToolInputError(f"no artifact {ref!r} in this session")
        return self.artifacts_store.path(row)

    def log(self, level: str, text: str) -> None:
        self.logs.append(f"{level}: {text}")

    def get_session_var(self, name: str, default: Any = None) -> Any:
        return self.session_vars.get(name, default)

    def record_event(self, event: dict[str, Any]) -> None:
        """Keep an event the tool emitted and pass it to the host's callback."""
        if self.ended:
            return
        self.events.append(event)
        if self.emit is not None:
            self.emit(event)

    def discard(self) -> None:
        """The call failed: the paths it asked for go, written or not."""
        for _, path in self._pending:
            shutil.rmtree(path.parent, ignore_errors=True)
        self._pending.clear()

    def finish(self) -> None:
        """Keep the artifacts the tool wrote to paths it asked for (a path left empty is
        dropped)."""
        for meta, path in self._pending:
            try:
                data = path.read_bytes()
            except OSError:
                shutil.rmtree(path.parent, ignore_errors=True)
                continue
            shutil.rmtree(path.parent, ignore_errors=True)
            row = self.artifacts_store.add(meta, data)
            self.artifacts.append(shown_row(row))
        self._pending.clear()


def as_bytes(val: Any, type: str) -> bytes:
    if isinstance(val, bytes):
        return val
    if isinstance(val, str):
        return val.encode("utf-8")
    if type == "df" and hasattr(val, "to_csv"):
        return str(val.to_csv(index=False)).encode("utf-8")
    raise ToolInputError(f"artifact value must be text or bytes, not {val.__class__.__name__}")
