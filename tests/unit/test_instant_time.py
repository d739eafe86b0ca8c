"""Instant times: 17 digits, strictly increasing under bursts and threads, `after=`, user forms."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest

from pyhudi.errors import InvalidConfigError
from pyhudi.model import instant_time
from pyhudi.model.instant_time import (
    INIT_INSTANT,
    MAX_INSTANT,
    instant_minus,
    instant_to_datetime,
    instant_to_ms,
    is_valid_instant,
    ms_to_instant,
    new_instant_time,
    normalize_instant,
    now_instant,
)


@pytest.fixture(autouse=True)
def _restore_generator_state(monkeypatch):
    """Tests push the process-wide generator into the future (`after=2999...`); undo that afterwards so
    other test modules keep getting instants near the wall clock."""
    monkeypatch.setattr(instant_time, "_last_ms", instant_time._last_ms)


def _is17(ts: str) -> bool:
    return len(ts) == 17 and ts.isdigit()


def test_new_instant_is_17_digits_and_parses_as_a_date():
    ts = new_instant_time()
    assert _is17(ts)
    datetime.strptime(ts[:14], "%Y%m%d%H%M%S")
    assert 0 <= int(ts[14:]) <= 999


def test_now_instant_is_close_to_the_clock():
    ts = now_instant()
    now_ms = int(datetime.now(timezone.utc).timestamp() * 1000)
    assert abs(instant_to_ms(ts) - now_ms) < 5000


def test_burst_of_10k_is_strictly_increasing():
    seq = [new_instant_time() for _ in range(10_000)]
    assert all(_is17(s) for s in seq)
    assert all(a < b for a, b in zip(seq, seq[1:], strict=False))
    assert len(set(seq)) == len(seq)


def test_strictly_increasing_across_threads():
    per_thread, n_threads = 1500, 8
    results: list[list[str]] = [[] for _ in range(n_threads)]
    barrier = threading.Barrier(n_threads)

    def work(i: int) -> None:
        barrier.wait()
        out = results[i]
        for _ in range(per_thread):
            out.append(new_instant_time())

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [s for r in results for s in r]
    assert len(everything) == per_thread * n_threads
    assert len(set(everything)) == len(everything), "two threads got the same instant"
    for r in results:
        assert all(a < b for a, b in zip(r, r[1:], strict=False))


def test_after_is_respected_even_far_in_the_future():
    future = "29990101000000000"
    ts = new_instant_time(after=future)
    assert ts == "29990101000000001"
    # and the generator keeps going from there
    assert new_instant_time() > ts


def test_after_with_millisecond_carry():
    ts = new_instant_time(after="30000101235959999")
    assert ts == "30000102000000000"


def test_after_14_digit_instant():
    ts = new_instant_time(after="30010101000000")
    assert ts == "30010101000000001"


def test_after_in_the_past_does_not_go_backwards():
    before = new_instant_time()
    ts = new_instant_time(after="20000101000000000")
    assert ts > before


def test_invalid_after_is_ignored_not_crashing():
    a = new_instant_time()
    assert new_instant_time(after="not-an-instant") > a


def test_local_zone_instants_increase_too():
    a = new_instant_time(local=True)
    b = new_instant_time(local=True)
    assert _is17(a) and _is17(b) and a < b


@pytest.mark.parametrize("ms", [0, 1, 999, 1_713_461_533_674, 1_743_390_402_808, 32_503_680_000_000])
def test_ms_round_trip(ms):
    assert instant_to_ms(ms_to_instant(ms)) == ms


def test_known_instant_to_ms():
    # 20250331030642808 UTC == 2025-03-31T03:06:42.808Z
    expected = int(datetime(2025, 3, 31, 3, 6, 42, tzinfo=timezone.utc).timestamp()) * 1000 + 808
    assert instant_to_ms("20250331030642808") == expected
    assert instant_to_ms("20250331030642") == expected - 808
    assert ms_to_instant(expected) == "20250331030642808"


def test_instant_to_datetime_and_minus():
    dt = instant_to_datetime("20250331030642808")
    assert dt == datetime(2025, 3, 31, 3, 6, 42, 808000, tzinfo=timezone.utc)
    assert instant_minus("20250331030642808", timedelta(hours=24)) == "20250330030642808"
    assert instant_minus("20250301000000000", timedelta(milliseconds=1)) == "20250228235959999"


@pytest.mark.parametrize("text, ok", [
    ("20250331030642808", True), ("20250331030642", True), ("2025033103064280", False),
    ("202503310306428080", False), ("", False), ("2025-03-31", False), ("abcdefghijklmnopq", False),
])
def test_is_valid_instant(text, ok):
    assert is_valid_instant(text) is ok


@pytest.mark.parametrize("text, expected", [
    ("20240418173213674", "20240418173213674"),
    ("20240418173213", "20240418173213000"),
    ("2024-04-18 17:32:13.674", "20240418173213674"),
    ("2024-04-18 17:32:13", "20240418173213000"),
    ("2024-04-18T17:32:13.674", "20240418173213674"),
    ("2024-04-18", "20240418000000000"),
    ("  20240418173213674  ", "20240418173213674"),
    ("00000000000000", "00000000000000000"),
])
def test_normalize_instant_forms(text, expected):
    assert normalize_instant(text) == expected


@pytest.mark.parametrize("text", ["", "yesterday", "2024-04-18 17:32", "2024/04/18", "2024041817", "1" * 18])
def test_normalize_rejects_malformed(text):
    with pytest.raises(InvalidConfigError) as err:
        normalize_instant(text)
    assert repr(text) in str(err.value) or text.strip() in str(err.value)


@pytest.mark.parametrize("text", ["20241340000000000", "20240418256000000", "20241340000000"])
def test_normalize_rejects_impossible_instants(text):
    """Hudi's formatQueryInstant validates a yyyyMMddHHmmss[SSS] value with parseDateFromInstantTime
    (java.time, range-checked): month 13 or hour 25 is a DateTimeParseException, not a silent pass-through."""
    with pytest.raises(InvalidConfigError):
        normalize_instant(text)


def test_sentinels_order_around_real_instants():
    ts = new_instant_time()
    assert INIT_INSTANT < ts < MAX_INSTANT
    assert len(MAX_INSTANT) == 17
