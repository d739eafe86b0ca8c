"""Tables on an object store: the small-batches stream into a local S3 server, pyhudi vs delta-rs, with
the time and the S3 requests (GET/HEAD/PUT/LIST/DELETE/POST) of every write.

    .venv/bin/python bench/object_store.py [--scale 0.5] [--rows-per-batch 5000] [--no-save]

1. Data: `small_batches.py`'s stream (same generator and flags): K1 insert-only batches, then K2 batches
   with a fraction f of updates; staged once as parquet on local disk, read with pyarrow by both systems
   inside the timed region.
2. Server: moto's S3 server on loopback (started here, tests/support/s3_server.py) behind the counting
   proxy (tests/support/fault_proxy.py, no faults): the proxy counts every request either system sends.
3. Systems, each batch into both in rotating order (load drift hits both alike):
   (a) pyhudi copy-on-write, auto-sized, in-process (`pyhudi.write` of the Arrow table, `insert` then
       `upsert`), configured only through the AWS_* environment; the table lock is the storage-based
       lock on the bucket (conditional writes); the inline cleaner and archival run as by default;
   (b) delta-rs `write_deltalake(mode="append")`, then `merge` for batches with updates; its S3 commits
       use `If-None-Match` (delta-rs 1.x's default on S3: no locking provider, no unsafe rename).
   Per batch: wall time and requests per kind (pyhudi's own `pyhudi.request_metrics()` too, checked
   equal to the proxy's counts). The report gives totals, medians per phase and delta/pyhudi ratios.
4. Correctness: both tables hold exactly the expected keys at their latest versions (count and a
   checksum of (uuid, ts)) read back from the bucket (pyhudi.read, delta-rs, hudi-rs row count).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))  # tests.support: the S3 server and the counting proxy

import common  # noqa: E402
import small_batches  # noqa: E402
from _ingest import PHASE_INSERT, Batch  # noqa: E402
from common import MB, median, ratio  # noqa: E402

NAME = "object_store"
TITLE = "Tables on an object store (local S3 server) vs delta-rs"
SYSTEMS = ("cow", "delta")
LABELS = {"cow": "pyhudi COW auto-sized (in-process)", "delta": "delta-rs append/merge"}
KINDS = ("GET", "HEAD", "PUT", "LIST", "DELETE", "POST")


class S3Stack:
    """moto on loopback behind the counting proxy; the AWS_* environment points at the proxy."""

    def __init__(self) -> None:
        from tests.support.fault_proxy import FaultProxy
        from tests.support.s3_server import MotoS3Server, create_bucket, s3_env

        self.server = MotoS3Server().start()
        self.proxy = FaultProxy(self.server.endpoint)
        self.bucket = f"bench-{uuid.uuid4().hex[:10]}"
        create_bucket(self.server.endpoint, self.bucket)
        self.env = s3_env(self.proxy.url)
        os.environ.update(self.env)

    @property
    def delta_options(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.proxy.url, "AWS_ALLOW_HTTP": "true", "AWS_REGION": self.env["AWS_REGION"],
                "AWS_ACCESS_KEY_ID": self.env["AWS_ACCESS_KEY_ID"],
                "AWS_SECRET_ACCESS_KEY": self.env["AWS_SECRET_ACCESS_KEY"]}

    def stop(self) -> None:
        self.proxy.stop()
        self.server.stop()


class RequestTrace:
    """--explain: every request pyhudi counts, in order, as "KIND storage call <- module.function" (the
    innermost public pyhudi function outside pyhudi/storage that sent it, e.g. `timeline.complete` for the
    commit's PUT). Wraps `metrics.count` only when asked."""

    def __init__(self) -> None:
        import traceback

        from pyhudi.storage import metrics

        self.requests: list[str] = []
        real = metrics.count

        def count(kind: str, op: str, n: int = 1, read: int = 0, written: int = 0) -> None:
            if n and metrics._CURRENT.get() is not None:
                frames = [f for f in traceback.extract_stack()[:-1]
                          if "/pyhudi/" in f.filename and "/pyhudi/storage/" not in f.filename]
                public = [f for f in frames if not f.name.startswith(("_", "<"))] or frames
                where = f"{Path(public[-1].filename).stem}.{public[-1].name}" if public else "?"
                call = kind if op == kind else f"{kind} ({op})"
                self.requests += [f"{call} <- {where}"] * n
            real(kind, op, n, read, written)

        metrics.count = count  # type: ignore[assignment]


def write_pyhudi(uri: str, options: dict[str, str], batch: Batch, trace: RequestTrace | None = None
                 ) -> dict[str, Any]:
    """One batch as a user of the in-process path writes it; returns pyhudi's own request counts (per
    kind, and per storage call), and with `trace` the requests in order."""
    import pyhudi

    op = "insert" if batch.phase == PHASE_INSERT else "upsert"
    if trace is not None:
        trace.requests = []
    with pyhudi.request_metrics() as m:
        pyhudi.write(pq.read_table(batch.staged), uri, {**options, "hoodie.datasource.write.operation": op})
    out: dict[str, Any] = {"counts": dict(m.counts), "by_call": dict(m.by_op)}
    if trace is not None:
        out["requests_in_order"] = list(trace.requests)
    return out


def write_delta(uri: str, options: dict[str, str], batch: Batch, target_size: int, exists: bool) -> None:
    """As DeltaSink does, on the bucket. (`DeltaTable.is_deltatable` is not used: it blocks holding the GIL,
    and the counting proxy runs in this process.)"""
    from deltalake import DeltaTable, write_deltalake

    data = pq.read_table(batch.staged)
    if batch.phase == PHASE_INSERT or not exists:
        write_deltalake(uri, data, mode="append", storage_options=options, target_file_size=target_size,
                        configuration={"delta.targetFileSize": str(target_size)})
        return
    (DeltaTable(uri, storage_options=options).merge(data, predicate="t.uuid = s.uuid", source_alias="s",
                                                     target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())


def ingest(stack: S3Stack, args: Any, batches: list[Batch]) -> list[dict[str, Any]]:
    uris = {k: f"s3://{stack.bucket}/{k}" for k in SYSTEMS}
    hudi_opts = small_batches.hudi_options("cow", args)
    trace = RequestTrace() if args.explain else None
    out = []
    for b in batches:
        row: dict[str, Any] = {"batch": b.index, "phase": b.phase, "rows": b.rows, "updates": b.updates}
        for key in SYSTEMS[b.index % 2:] + SYSTEMS[:b.index % 2]:
            stack.proxy.reset_counts()
            started = time.perf_counter()
            own = None
            if key == "cow":
                own = write_pyhudi(uris[key], hudi_opts, b, trace)
            else:
                write_delta(uris[key], stack.delta_options, b, args.max_file_size, b.index > 1)
            seconds = time.perf_counter() - started
            seen = stack.proxy.counts
            row[key] = {"seconds": seconds, "requests": seen, "total": sum(seen.values())}
            if own is not None:
                row[key]["by_call"] = own["by_call"]
                if "requests_in_order" in own:
                    row[key]["requests_in_order"] = own["requests_in_order"]
                if own["counts"] != seen:
                    row[key]["metrics_mismatch"] = own["counts"]
        print(f"batch {b.index:3d} {b.phase:6s}  " + "  ".join(
            f"{k}: {row[k]['seconds']:.2f}s {row[k]['total']:4d} req" for k in SYSTEMS), flush=True)
        out.append(row)
    return out


def check(stack: S3Stack, expected: pa.Table) -> tuple[dict[str, Any], list[str]]:
    """Keys and latest versions of both tables on the bucket against the generator's final state."""
    from deltalake import DeltaTable
    from hudi import HudiTableBuilder

    import pyhudi

    want = (expected.num_rows, _checksum(expected))
    hudi_uri, delta_uri = f"s3://{stack.bucket}/cow", f"s3://{stack.bucket}/delta"
    result = pyhudi.read(hudi_uri, columns=["uuid", "ts"])
    got = {"cow": result if isinstance(result, pa.Table) else result.read_all(),
           "delta": DeltaTable(delta_uri, storage_options=stack.delta_options).to_pyarrow_table(columns=["uuid", "ts"])}
    rs_options = {"aws_endpoint": stack.proxy.url, "aws_allow_http": "true", "aws_region": stack.env["AWS_REGION"],
                  "aws_access_key_id": stack.env["AWS_ACCESS_KEY_ID"],
                  "aws_secret_access_key": stack.env["AWS_SECRET_ACCESS_KEY"]}
    rs_rows = sum(b.num_rows for b in HudiTableBuilder.from_base_uri(hudi_uri).with_storage_options(rs_options)
                  .build().read())
    problems = [f"{k}: {t.num_rows} rows / checksum {_checksum(t)}, expected {want[0]} / {want[1]}"
                for k, t in got.items() if (t.num_rows, _checksum(t)) != want]
    if rs_rows != want[0]:
        problems.append(f"hudi-rs reads {rs_rows} rows of the pyhudi table, expected {want[0]}")
    return {"rows": want[0], "hudi_rs_rows": rs_rows, **{f"{k}_rows": t.num_rows for k, t in got.items()}}, problems


def _checksum(t: pa.Table) -> int:
    keys = pc.binary_join_element_wise(t.column("uuid"), pc.cast(t.column("ts"), pa.string()), "|")
    return int(sum(hash(k) & 0xFFFFFFFF for k in keys.to_pylist()) % (1 << 61))


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in SYSTEMS:
        totals = {k: sum(r[key]["requests"].get(k, 0) for r in rows) for k in KINDS}
        phases = {}
        for phase in sorted({r["phase"] for r in rows}):
            rs = [r[key] for r in rows if r["phase"] == phase]
            phases[phase] = {"median_s": median([r["seconds"] for r in rs]),
                             "median_requests": median([r["total"] for r in rs]),
                             **{f"median_{k}": median([r["requests"].get(k, 0) for r in rs]) for k in KINDS}}
        calls = sorted({c for r in rows for c in r[key].get("by_call", {})})
        by_call = {f"median_by_call_{phase}": {c: median([r[key].get("by_call", {}).get(c, 0) for r in rows
                                                          if r["phase"] == phase]) for c in calls}
                   for phase in sorted({r["phase"] for r in rows})} if calls else {}
        out[key] = {**by_call,
                    "seconds": sum(r[key]["seconds"] for r in rows), "requests": totals,
                    "total_requests": sum(totals.values()), "phases": phases,
                    "metrics_mismatches": sum(1 for r in rows if "metrics_mismatch" in r[key])}
    return out


def render_text(res: dict[str, Any], markdown: bool = False) -> str:
    s, n = res["summary"], len(res["batches"])
    head = ["system", "time (s)", "requests", *KINDS, "median s insert", "median s upsert",
            "median req insert", "median req upsert"]
    rows = []
    for key in SYSTEMS:
        v, ph = s[key], s[key]["phases"]
        rows.append([LABELS[key], f"{v['seconds']:.2f}", v["total_requests"], *(v["requests"][k] for k in KINDS),
                     *(f"{ph.get(p, {}).get('median_s', 0):.2f}" for p in ("insert", "upsert")),
                     *(ph.get(p, {}).get("median_requests", 0) for p in ("insert", "upsert"))])
    c, d = s["cow"], s["delta"]
    ratios = [["delta-rs / pyhudi", f"{ratio(d['seconds'], c['seconds']):.2f}",
               f"{ratio(d['total_requests'], c['total_requests']):.2f}",
               *(f"{ratio(d['requests'][k], c['requests'][k]):.2f}" if c["requests"][k] else "-" for k in KINDS),
               "", "", "", ""]]
    cfg = res["config"]
    lines = [f"{n} batches ({cfg['insert_batches']} insert-only + {cfg['upsert_batches']} with "
             f"{cfg['update_fraction']:.0%} updates) of {cfg['rows_per_batch']} rows into a local S3 server "
             f"(moto {res['moto']}, delta-rs {res['deltalake']}); requests counted by the proxy in front of it.",
             "", common.format_table(head, rows + ratios, markdown=markdown), "",
             f"checks: {res['checks']}; pyhudi metrics equal the proxy's counts in "
             f"{n - s['cow']['metrics_mismatches']}/{n} writes"]
    by_call = {k: v for k, v in s["cow"].items() if k.startswith("median_by_call_")}
    for name, calls in by_call.items():
        lines.append(f"pyhudi, {name.replace('_', ' ')} (storage call: requests): "
                     + ", ".join(f"{c} {v:g}" for c, v in calls.items() if v))
    for phase in ("insert", "upsert"):  # --explain: the requests of the phase's median write, in order
        traced = [r for r in res["batches"] if r["phase"] == phase and "requests_in_order" in r["cow"]]
        if traced:
            mid = sorted(traced, key=lambda r: (r["cow"]["total"], r["batch"]))[(len(traced) - 1) // 2]
            lines.append(f"pyhudi, requests of {phase} batch {mid['batch']} ({mid['cow']['total']}) in order: "
                         + "; ".join(mid["cow"]["requests_in_order"]))
    if res["problems"]:
        lines.append("PROBLEMS: " + "; ".join(res["problems"]))
    return "\n".join(lines)


def render_markdown(res: dict[str, Any]) -> str:
    intro = ("`bench/object_store.py`: the small-batches stream into moto's S3 server on loopback behind a "
             "counting proxy, pyhudi COW (in-process, auto-sized, storage-based lock, inline cleaner) vs "
             "delta-rs append/merge (S3 commits with If-None-Match). Times are wall time per write; requests "
             "as S3 bills them (a ranged GET is a GET, a batch delete a POST).")
    return (f"Run {res['finished']} (`{res['command']}`).\n\n{intro}\n\n"
            + render_text(res, markdown=True).replace("\npyhudi, ", "\n\npyhudi, "))


def main() -> int:
    p = common.base_parser(__doc__.split("\n\n")[0], 2 * small_batches.DEFAULT_BATCHES * 5000)
    p.add_argument("--rows-per-batch", type=int, default=5000)
    p.add_argument("--insert-batches", type=int, default=None)
    p.add_argument("--upsert-batches", type=int, default=None)
    p.add_argument("--update-fraction", type=float, default=0.10)
    p.add_argument("--update-window", type=int, default=4)
    p.add_argument("--max-file-size", type=int, default=8 * MB)
    p.add_argument("--small-file-limit", type=int, default=None)
    p.add_argument("--partitioned", action="store_true", help="partition both tables by city (4 values)")
    p.add_argument("--explain", action="store_true",
                   help="record each pyhudi request in order with the pyhudi function that sent it; the report "
                        "lists those of the median insert and the median upsert")
    common.add_hudi_option_flag(p)
    p.set_defaults(scale=0.5)
    args = p.parse_args()
    args.small_file_limit = args.small_file_limit or args.max_file_size * 100 // 120
    args.insert_batches, args.upsert_batches = small_batches.phase_batches(args)
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="pyhudi-bench-s3-"))
    batches, expected = small_batches.generate(args, work)
    stack = S3Stack()
    try:
        rows = ingest(stack, args, batches)
        checks, problems = check(stack, expected)
    finally:
        stack.stop()
    res = {"finished": common.now_utc(), "command": common.command_line(), "machine": common.machine_info(),
           "moto": common._version("moto"), "deltalake": common._version("deltalake"),
           "config": {k: getattr(args, k) for k in ("rows_per_batch", "insert_batches", "upsert_batches",
                                                    "update_fraction", "max_file_size", "partitioned")},
           "batches": rows, "summary": summarize(rows), "checks": checks, "problems": problems}
    return common.finish(NAME, TITLE, res, render_text, render_markdown, args, work, problems)


if __name__ == "__main__":
    sys.exit(main())
