"""`as.of.instant` formats as Hudi 0.14's HoodieSqlCommonUtils.formatQueryInstant reads them, and the
incremental range under each hollow-commit handling mode (no Spark: a timeline of instant files)."""

from __future__ import annotations

import os
import types

import pytest

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.errors import HollowCommitError, HudiError, InvalidConfigError
from pyhudi.reader import incremental
from pyhudi.reader.time_travel import format_query_instant
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline


@pytest.mark.parametrize("text, expected", [
    # 'yyyy-MM-dd HH:mm:ss': Hudi appends DEFAULT_MILLIS_EXT "999": the END of that second.
    ("2024-04-18 17:32:13", "20240418173213999"),
    ("2024-04-18 17:32:13.674", "20240418173213674"),
    ("2024-04-18 17:32:13.000", "20240418173213000"),
    ("20240418173213674", "20240418173213674"),
    # 14 digits stay 14 digits in Hudi and compare as strings: every 17-digit instant of that second is
    # greater, so the inclusive 17-digit bound is the millisecond before the second.
    ("20240418173213", "20240418173212999"),
    ("20240101000000", "20231231235959999"),
    ("00000000000000", "00000000000000000"),
    # yyyy-MM-dd: formatDate of that day's midnight, 17 digits.
    ("2024-04-18", "20240418000000000"),
])
def test_hudi_query_instant_formats(text, expected):
    assert format_query_instant(text) == expected


@pytest.mark.parametrize("text", [
    "", " ", "2024-04-18T17:32:13", "2024-04-18 17:32", "2024-4-18 17:32:13.674", "2024/04/18",
    "2024-04-18 17:32:13.6741", "20241340000000000", "2024-13-01", "2024041817", " 20240418173213674",
    "yesterday", "99999999999999999",
])
def test_unsupported_query_instants_are_refused(text):
    with pytest.raises(InvalidConfigError) as err:
        format_query_instant(text)
    assert repr(text) in str(err.value) and "yyyy-MM-dd HH:mm:ss" in str(err.value)


def test_commit_during_the_named_second_is_included():
    """The reviewer's case: time travel to the second of the first commit must see that commit."""
    commit = "20260101120000123"
    assert commit <= format_query_instant("2026-01-01 12:00:00")
    assert not commit <= format_query_instant("20260101120000")  # Hudi: '...123' > '20260101120000'


# ------------------------------------------------------------------ incremental range, hollow commits
C1, P, C2, C3 = "20260101000000100", "20260101000000200", "20260101000000300", "20260101000000400"
UTC = types.SimpleNamespace(local_timezone=False)


def _timeline(tmp_path, completed=(C1, C2), pending=(P,), pending_action="commit") -> ActiveTimeline:
    meta = tmp_path / ".hoodie"
    meta.mkdir(exist_ok=True)
    for ts in completed:
        for suffix in (".commit.requested", ".inflight", ".commit"):
            (meta / f"{ts}{suffix}").write_bytes(b"")
    for ts in pending:
        (meta / f"{ts}.{pending_action}.requested").write_bytes(b"")
    return ActiveTimeline.load(Storage(str(tmp_path)))


def _resolve(timeline, mode=None, begin="00000000000000000", end=None):
    opts = Options.parse({K.INCR_HOLLOW_COMMIT.key: mode} if mode else {})
    return incremental.resolve(opts, timeline.storage, timeline, UTC, begin, end)  # type: ignore[arg-type]


def test_fail_is_the_default_and_names_the_pending_write(tmp_path):
    tl = _timeline(tmp_path)
    with pytest.raises(HollowCommitError, match=P) as err:
        _resolve(tl)
    assert isinstance(err.value, HudiError) and "BLOCK" in str(err.value)


def test_block_stops_before_the_earliest_pending_write(tmp_path):
    tl = _timeline(tmp_path, completed=(C1, C2, C3))
    rng = _resolve(tl, "BLOCK")
    assert (rng.begin, rng.end, rng.snapshot_at, rng.instants) == ("0" * 17, C1, C1, None)
    assert _resolve(tl, "BLOCK", end=C3).end == C1  # an explicit end does not reach past it either
    assert _resolve(tl, "BLOCK", begin=C1).end == C1  # (C1, C1]: nothing yet


def test_hollow_policy_key_and_its_alias(tmp_path):
    assert K.INCR_HOLLOW_COMMIT.key == "hoodie.read.timeline.holes.resolution.policy"  # Hudi 0.14's key
    tl = _timeline(tmp_path)
    opts = Options.parse({"hoodie.datasource.read.handle.hollow.commit": "block"})
    assert incremental.resolve(opts, tl.storage, tl, UTC, "0" * 17, None).end == C1  # type: ignore[arg-type]


def test_no_hollow_commit_when_nothing_completed_after_the_pending_write(tmp_path):
    tl = _timeline(tmp_path, completed=(C1,), pending=(C2,))
    assert _resolve(tl).end == C1


@pytest.mark.parametrize("action", ["compaction", "logcompaction"])
def test_table_services_are_not_hollow_commits(tmp_path, action):
    tl = _timeline(tmp_path, pending=(P,), pending_action=action)
    assert _resolve(tl).end == C2


def test_transition_time_selects_by_completion(tmp_path):
    tl = _timeline(tmp_path)
    meta = tmp_path / ".hoodie"
    # C1 completed at 00:00:05, C2 at 00:00:03 (UTC).
    base = 1767225600  # 2026-01-01T00:00:00Z
    os.utime(meta / f"{C1}.commit", (base + 5, base + 5))
    os.utime(meta / f"{C2}.commit", (base + 3, base + 3))
    done = incremental.completion_times(tl.storage, tl.commits().completed(), UTC)  # type: ignore[arg-type]
    assert done == {C1: "20260101000005000", C2: "20260101000003000"}
    everything = _resolve(tl, "USE_TRANSITION_TIME")
    assert everything.instants == (C1, C2) and everything.end == "20260101000005000"
    after_c2 = _resolve(tl, "USE_TRANSITION_TIME", begin="20260101000003000")
    assert after_c2.instants == (C1,) and after_c2.snapshot_at == C1
    assert _resolve(tl, "USE_TRANSITION_TIME", end="20260101000003000").instants == (C2,)
    assert _resolve(tl, "USE_TRANSITION_TIME", begin="20260101000005000").instants == ()
