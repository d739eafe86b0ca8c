"""A HudiError raised in a Spark task reaches the driver as text; pyhudi raises it again as itself."""

from __future__ import annotations

from pyhudi.errors import CommitConflictError, InvalidRecordError, from_worker


class PythonException(Exception):
    """Stands in for pyspark.errors.PythonException: the worker's traceback as text."""


def test_task_error_is_raised_again_as_its_class() -> None:
    exc = PythonException(
        "An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
        "pyhudi.errors.InvalidRecordError: createTime='01/04/2020' matches no input format\n")
    got = from_worker(exc)
    assert isinstance(got, InvalidRecordError)
    assert "createTime='01/04/2020'" in str(got)


def test_other_failures_are_left_alone() -> None:
    assert from_worker(PythonException("ValueError: boom")) is None
    assert from_worker(PythonException("pyhudi.errors.NoSuchError: x")) is None
    assert from_worker(CommitConflictError("already a HudiError")) is None
