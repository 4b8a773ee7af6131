"""The small pieces every evaluation goes through: its time, its record id, its scope."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from engine.pipeline import new_id
from engine.points import Scope, scope_of
from engine.runtime import now_iso


def test_now_iso_is_the_utc_isoformat_with_microseconds() -> None:
    text = now_iso()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", text)
    when = datetime.fromisoformat(text)
    assert when.tzinfo == UTC
    assert abs(datetime.now(UTC) - when) < timedelta(seconds=5)
    assert when.isoformat(timespec="microseconds") == text


def test_now_iso_never_goes_back() -> None:
    times = [datetime.fromisoformat(now_iso()) for _ in range(2000)]
    assert times == sorted(times)


def test_record_ids_are_random_hex_and_never_repeat() -> None:
    ids = [new_id() for _ in range(3000)]  # several reads of the system's randomness
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_a_forked_child_does_not_repeat_its_parents_record_ids() -> None:
    new_id()  # the parent has ids waiting
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first ids, then leave without running pytest's exit
        os.write(write, "".join(new_id() for _ in range(4)).encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 1024).decode()
    os.close(read)
    os.waitpid(pid, 0)
    parent = "".join(new_id() for _ in range(4))
    assert len(child) == len(parent) == 128
    assert {child[i : i + 32] for i in range(0, 128, 32)}.isdisjoint(
        {parent[i : i + 32] for i in range(0, 128, 32)}
    )


def test_scope_of_is_the_scope_model_made_once_per_scope() -> None:
    data = {"user_id": "u1", "session_id": None, "template": None, "process": "p"}
    scope = scope_of(data)
    assert scope == Scope.model_validate(data)
    assert scope_of(dict(data)) is scope
    assert scope_of({**data, "user_id": "u2"}) == Scope.model_validate({**data, "user_id": "u2"})
    assert scope_of(None) == Scope() and scope_of({}) == Scope()
    assert scope_of({"user_id": "u1"}) == Scope(user_id="u1")


@pytest.mark.parametrize(
    "data",
    [
        {"user_id": 1, "session_id": None, "template": None, "process": None},
        {"user_id": "u", "session_id": None, "template": None, "other": None},
        {"user": "u"},
    ],
)
def test_scope_of_refuses_what_the_model_refuses(data: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        scope_of(data)
