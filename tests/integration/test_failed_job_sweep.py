"""A Spark write job that fails leaves its cancelled tasks running until their Python workers are killed
(spark.python.task.killTimeout later): the write's rollback must sweep again after that, and only then
(services/rollback.sweep_after_failed_job; the sweep itself: tests/unit/test_rollback_race.py). Both
Spark paths: the classic client's write jobs, and the data source's abort()."""

from __future__ import annotations

from typing import Any

import pytest

from pyhudi.engine.spark import datasource_write as dw
from pyhudi.engine.spark import write as sw
from pyhudi.timeline.instant import Action


def test_only_a_failed_write_job_makes_the_rollback_sweep_again(monkeypatch: pytest.MonkeyPatch) -> None:
    client: Any = object.__new__(sw.SparkWriteClient)  # the wiring alone: no session needed
    client._tasks_may_linger, client.storage = False, "storage"
    rolled: list[str] = []
    swept: list[str] = []
    monkeypatch.setattr(sw.WriteClient, "_rollback_own", lambda self, instant, action: rolled.append(instant))
    monkeypatch.setattr(sw, "sweep_after_failed_job", lambda storage, instant: swept.append(instant))
    client._rollback_own("t1", Action.COMMIT)  # e.g. a failed commit: every task had finished
    assert client._write_job(lambda: [1, 2]) == [1, 2]
    client._rollback_own("t2", Action.COMMIT)

    def failed_job() -> list[int]:
        raise RuntimeError("Job aborted due to stage failure")

    with pytest.raises(RuntimeError, match="stage failure"):
        client._write_job(failed_job)
    client._rollback_own("t3", Action.COMMIT)
    client._rollback_own("t4", Action.COMMIT)  # once per failed job
    assert rolled == ["t1", "t2", "t3", "t4"]
    assert swept == ["t3"]


def test_the_data_sources_abort_sweeps_after_its_rollback(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    class Client:
        def _rollback_own(self, instant: str, action: Action) -> None:
            calls.append(f"rollback {instant}")

    job: Any = type("Job", (), {"instant": "t9", "action": Action.COMMIT, "storage": "storage"})()
    monkeypatch.setattr(dw, "_client", lambda j: Client())
    monkeypatch.setattr(dw, "sweep_after_failed_job", lambda storage, instant: calls.append(f"sweep {instant}"))
    monkeypatch.setattr(dw, "_drop_heartbeat", lambda j: calls.append("heartbeat"))
    dw.HudiBatchWriter(job).abort([])
    assert calls == ["rollback t9", "sweep t9", "heartbeat"]
