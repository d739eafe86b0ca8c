"""Instants and their file names in both timeline layouts.

An instant is (timestamp, action, state). The file-name rules have two
historical quirks that other readers depend on: a COW commit's inflight file
is `<ts>.inflight` (no action), and a compaction (log compaction) completes as
a `commit` (`deltacommit`). Timeline layout 2 (Hudi 1.x) adds the completion
time to a completed instant's name (`<ts>_<completion>.<action>`) and a
`clustering` action for pending clustering, which completes as a
`replacecommit`; a completed name without `_` there is a leftover of the table's
layout-1 days (timeline/layout.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum


class Action(str, Enum):
    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    REPLACE_COMMIT = "replacecommit"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    RESTORE = "restore"
    INDEXING = "indexing"
    CLUSTERING = "clustering"  # layout 2 only: a pending clustering (completes as a replacecommit)


class State(str, Enum):
    REQUESTED = "requested"
    INFLIGHT = "inflight"
    COMPLETED = "completed"


WRITE_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT})
# Actions whose completed instants change the data a reader sees.
DATA_ACTIONS = WRITE_ACTIONS
_COMPLETES_AS = {Action.COMPACTION: Action.COMMIT, Action.LOG_COMPACTION: Action.DELTA_COMMIT,
                 Action.CLUSTERING: Action.REPLACE_COMMIT}

_NAME_RE = re.compile(r"^(\d{14,17})(?:_(\d{14,17}))?\.([a-z]+)(?:\.(requested|inflight))?$")


@dataclass(frozen=True, order=True)
class Instant:
    timestamp: str
    action: Action
    state: State = State.COMPLETED
    # The completion time a layout-2 file name carries (None: layout 1, pending, or a legacy name);
    # not part of the instant's identity, so lookups by (timestamp, action, state) still match.
    completion: str | None = field(default=None, compare=False)

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def is_pending(self) -> bool:
        return self.state is not State.COMPLETED

    def with_state(self, state: State) -> Instant:
        if state is State.COMPLETED and self.action in _COMPLETES_AS:
            return Instant(self.timestamp, _COMPLETES_AS[self.action], state)
        return Instant(self.timestamp, self.action, state)

    @property
    def file_name(self) -> str:
        ts, action = self.timestamp, self.action.value
        if self.state is State.COMPLETED:
            return f"{ts}_{self.completion}.{action}" if self.completion else f"{ts}.{action}"
        if self.state is State.INFLIGHT and self.action is Action.COMMIT:
            return f"{ts}.inflight"
        return f"{ts}.{action}.{self.state.value}"

    def __str__(self) -> str:
        return f"[{self.timestamp}__{self.action.value}__{self.state.name}]"


def parse_instant_file(name: str) -> Instant | None:
    """Instant named by a timeline file, or None for anything else in `.hoodie/`."""
    m = _NAME_RE.match(name)
    if not m:
        return None
    ts, completion, action_text, state_text = m.group(1), m.group(2), m.group(3), m.group(4)
    if completion is not None and (state_text is not None or action_text == "inflight"):
        return None  # only completed instants carry a completion time
    if action_text == "inflight" and state_text is None:
        return Instant(ts, Action.COMMIT, State.INFLIGHT)
    try:
        action = Action(action_text)
    except ValueError:
        return None
    state = State(state_text) if state_text else State.COMPLETED
    return Instant(ts, action, state, completion)


def instant_file_names(timestamp: str, action: Action) -> list[str]:
    """Every file an instant of this (pending) action may have left in `.hoodie/`."""
    pending = Instant(timestamp, action, State.REQUESTED)
    names = [pending.file_name, pending.with_state(State.INFLIGHT).file_name,
             pending.with_state(State.COMPLETED).file_name]
    if action is Action.COMMIT:
        names.append(f"{timestamp}.commit.inflight")
    return names
