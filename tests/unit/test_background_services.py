"""Background table services without Spark: bounded concurrency, failures logged and retried with back-off,
the choice of the next plan, and PYHUDI_FAULT_RAISE."""

from __future__ import annotations

import logging
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from pyhudi import faults
from pyhudi.config.registry import Options
from pyhudi.model.table_config import COW, MOR, TableConfig
from pyhudi.services import background
from pyhudi.services.table_services import _Service, run_async
from pyhudi.writer.config import ServicesConfig, build_write_config
from pyhudi.writer.operation import WriteOperation


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    background.ATTEMPTS.forget()
    yield
    background.wait(timeout=30)
    background.ATTEMPTS.forget()


def _blocked(release: threading.Event, started: threading.Event | None = None):  # type: ignore[no-untyped-def]
    def job() -> str:
        if started is not None:
            started.set()
        assert release.wait(30)
        return "done"
    return job


def test_one_job_per_kind_and_table_never_a_queue() -> None:
    release, started = threading.Event(), threading.Event()
    first = background.submit("t1", "compaction", _blocked(release, started))
    assert first is not None and started.wait(10)
    assert background.busy("t1", "compaction") and background.busy("t1")
    assert background.submit("t1", "compaction", lambda: "again") is None, "a second compaction is not queued"
    assert not background.busy("t1", "clustering") and not background.busy("t2")
    other_table = background.submit("t2", "compaction", lambda: "t2")
    assert other_table is not None and other_table.result(10) == "t2"
    release.set()
    assert background.wait("t1", timeout=10) == []
    assert first.result() == "done" and not background.busy("t1")
    assert background.submit("t1", "compaction", lambda: "next") is not None, "free again once finished"


def test_at_most_two_jobs_of_a_table_run_at_once() -> None:
    lock, running, peak = threading.Lock(), [0], [0]
    release = threading.Event()

    def job() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        release.wait(30)
        with lock:
            running[0] -= 1

    futures = [background.submit("t", kind, job) for kind in ("clustering", "compaction", "clean", "archival")]
    assert all(f is not None for f in futures)
    deadline = time.monotonic() + 20
    while running[0] < background.MAX_RUNNING_PER_TABLE and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # time for a third job to start, were it allowed to
    with lock:
        assert running[0] == peak[0] == background.MAX_RUNNING_PER_TABLE
    release.set()
    assert background.wait("t", timeout=10) == []
    assert peak[0] == background.MAX_RUNNING_PER_TABLE


def test_a_failing_job_is_logged_and_reported_by_wait_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def boom() -> None:
        raise ValueError("disk on fire")

    with caplog.at_level(logging.WARNING, logger="pyhudi.services.background"):
        assert background.submit("t", "clean", boom) is not None  # submitting never raises
        errors = background.wait("t", timeout=10)
    assert [type(e) for e in errors] == [ValueError]
    assert "background clean on t failed: ValueError: disk on fire" in caplog.text
    assert background.wait("t", timeout=10) == [], "errors are reported once"


def test_attempts_back_off_then_give_up(caplog: pytest.LogCaptureFixture) -> None:
    a = background.Attempts()
    assert a.state("t", "C1") == "ready"
    with caplog.at_level(logging.WARNING, logger="pyhudi.services.background"):
        a.failed("t", "compaction", "C1", RuntimeError("x"), retry_count=2, interval_ms=60_000)
    assert a.state("t", "C1") == "waiting" and a.failures("t", "C1") == 1
    assert "background compaction C1 of t failed (attempt 1 of 3): RuntimeError: x" in caplog.text
    a.failed("t", "compaction", "C1", RuntimeError("x"), retry_count=2, interval_ms=0)
    assert a.state("t", "C1") == "ready", "no back-off left"
    with caplog.at_level(logging.ERROR, logger="pyhudi.services.background"):
        a.failed("t", "compaction", "C1", RuntimeError("y"), retry_count=2, interval_ms=0)
    assert a.state("t", "C1") == "gave_up"
    assert "failed 3 time(s)" in caplog.text and "pyhudi compaction t run --instant C1" in caplog.text
    a.succeeded("t", "C1")
    assert a.state("t", "C1") == "ready"


class FakeTable:
    """Pending plans of one service, and what its executions do."""

    def __init__(self, pending: list[str], fail: int = 0) -> None:
        self.pending = list(pending)
        self.fail = fail
        self.executed: list[str] = []
        self.scheduled: list[str] = []

    def service(self) -> _Service:
        def schedule(_s: Any, _c: Any) -> str:
            inst = f"N{len(self.scheduled)}"
            self.scheduled.append(inst)
            self.pending.append(inst)
            return inst

        def execute(_spark: Any, _s: Any, _c: Any, inst: str) -> str:
            self.executed.append(inst)
            if self.fail:
                self.fail -= 1
                raise RuntimeError(f"injected failure of {inst}")
            self.pending.remove(inst)
            return inst

        return _Service("compaction", lambda _s: list(self.pending), schedule, execute)


def _cfg(retries: int = 1, interval_ms: int = 0) -> Any:
    return SimpleNamespace(services=ServicesConfig(retries, interval_ms, ""), clean=SimpleNamespace(automatic=False),
                           archival=SimpleNamespace(automatic=False))


def _run(t: FakeTable, cfg: Any, schedule: bool = True) -> Any:
    fut = run_async(None, SimpleNamespace(base_uri="fake"), cfg, t.service(), schedule)  # type: ignore[arg-type]
    background.wait("fake", timeout=10)
    return fut


def test_a_failed_plan_stays_pending_and_is_retried_before_any_new_plan() -> None:
    t = FakeTable(["C1"], fail=1)
    cfg = _cfg(retries=1)
    assert _run(t, cfg, schedule=False) is not None
    assert t.executed == ["C1"] and t.pending == ["C1"], "the failed plan stays pending"
    _run(t, cfg)
    assert t.executed == ["C1", "C1"] and t.pending == [] and t.scheduled == [], "retried, nothing new planned"
    _run(t, cfg)
    assert t.scheduled == ["N0"] and t.executed[-1] == "N0", "then the trigger plans and runs a new one"


def test_a_plan_in_back_off_holds_off_new_plans_and_a_given_up_one_does_not() -> None:
    t = FakeTable(["C1"], fail=5)
    assert _run(t, _cfg(retries=1, interval_ms=60_000)) is not None
    assert _run(t, _cfg(retries=1, interval_ms=60_000)) is None, "in back-off: nothing submitted or planned"
    assert t.executed == ["C1"] and t.scheduled == []
    background.ATTEMPTS.failed("fake", "compaction", "C1", RuntimeError("again"), 1, 0)  # second failure: gave up
    assert background.ATTEMPTS.state("fake", "C1") == "gave_up"
    t.fail = 0
    _run(t, _cfg(retries=1))
    assert t.scheduled == ["N0"] and t.executed[-1] == "N0" and t.pending == ["C1"], \
        "the given-up plan is left pending for `pyhudi compaction run`"


def test_resume_without_schedule_runs_only_pending_plans() -> None:
    t = FakeTable([])
    assert _run(t, _cfg(), schedule=False) is None and t.scheduled == []


def test_fault_raise_fires_on_the_nth_hit_or_from_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    faults.reset()
    monkeypatch.setenv(faults.RAISE_ENV, "svc.point@2")
    faults.fault_point("svc.point")
    faults.fault_point("other.point")
    with pytest.raises(faults.InjectedFault, match="svc.point"):
        faults.fault_point("svc.point")
    faults.fault_point("svc.point")
    faults.reset()
    monkeypatch.setenv(faults.RAISE_ENV, "svc.point@2+")
    faults.fault_point("svc.point")
    for _ in range(2):
        with pytest.raises(faults.InjectedFault):
            faults.fault_point("svc.point")
    faults.reset()


def _table(table_type: str) -> TableConfig:
    return TableConfig(name="t", table_type=table_type, record_key_fields=("id",), partition_fields=(),
                       precombine_field=None, keygen_class="org.apache.hudi.keygen.NonpartitionedKeyGenerator")


@pytest.mark.parametrize(("table_type", "streaming", "opts", "expected"), [
    (MOR, True, {}, True),  # Hudi's default for streaming writes to MOR
    (MOR, False, {}, False),  # batch writes never compact asynchronously
    (COW, True, {}, False),
    (MOR, True, {"hoodie.datasource.compaction.async.enable": "false"}, False),
    (MOR, True, {"hoodie.compact.inline": "true"}, False),  # inline takes precedence
])
def test_async_compaction_defaults_like_hudis_streaming_sink(table_type: str, streaming: bool,
                                                             opts: dict[str, str], expected: bool) -> None:
    cfg = build_write_config(Options.parse(opts), _table(table_type), WriteOperation.INSERT, streaming=streaming)
    assert cfg.compaction.run_async is expected


def test_service_keys_parse_and_hudi_alias_of_async_clustering() -> None:
    cfg = build_write_config(Options.parse({"hoodie.datasource.clustering.async.enable": "true",
                                            "hoodie.table.services.async.retry.count": "5",
                                            "hoodie.table.services.async.retry.interval.ms": "10"}),
                             _table(COW), WriteOperation.INSERT)
    assert cfg.clustering.async_enabled and cfg.services.retry_count == 5 and cfg.services.retry_interval_ms == 10
