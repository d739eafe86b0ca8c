"""What the CLI commands share: opening a table without Spark, option parsing, and `--master` (Spark
only when asked for).

Both commands need the same three things (storage, table config, active
timeline); loading them here keeps the error wording identical everywhere.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyhudi.errors import HudiError, TableNotFoundError
from pyhudi.model.table_config import TableConfig, load_table_config
from pyhudi.storage import Storage
from pyhudi.storage.store_errors import is_panic, panic_error
from pyhudi.timeline.timeline import ActiveTimeline

if TYPE_CHECKING:
    from pyhudi.config.registry import Options

EXIT_ERROR = 2


def guarded(func: Callable[[argparse.Namespace], int], args: argparse.Namespace, prog: str) -> int:
    """Run a command; pyhudi's own errors (and I/O errors, and a panic of a Rust library such as obstore or
    hudi-rs) become one line on stderr and exit code 2."""
    try:
        return int(func(args))
    except HudiError as exc:
        print(f"{prog}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `pyhudi timeline ... | head`
        sys.stderr.close()
        return 0
    except OSError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BaseException as exc:  # a Rust library's panic (pyo3's PanicException) is a BaseException
        if not is_panic(exc):
            raise
        print(f"{prog}: error: {panic_error(exc, prog)}", file=sys.stderr)
        return EXIT_ERROR


@dataclass
class OpenTable:
    storage: Storage
    config: TableConfig
    timeline: ActiveTimeline


def open_table(path: str) -> OpenTable:
    """Load config and timeline; a missing table gets a hint when a child directory is a table
    (a common slip with unzipped samples, whose table sits one level down)."""
    storage = Storage(path)
    with table_hint(storage):
        config = load_table_config(storage)
    return OpenTable(storage, config, ActiveTimeline.load(storage))


@contextmanager
def table_hint(storage: Storage) -> Iterator[None]:
    """A TableNotFoundError raised inside gets the hint of `open_table` (a child directory that is a table)."""
    try:
        yield
    except TableNotFoundError as exc:
        hint = _child_table_hint(storage)
        if hint:
            raise TableNotFoundError(f"{exc} (did you mean {hint}?)") from exc
        raise


def _child_table_hint(storage: Storage) -> str | None:
    try:
        children = [c for c in storage.list_dir("") if c.is_dir and not c.name.startswith(".")]
        for child in sorted(children, key=lambda c: c.name):
            if storage.exists(f"{child.path}/.hoodie/hoodie.properties"):
                return f"{storage.base_uri}/{child.name}"
    except OSError:
        return None
    return None


def table_header(t: OpenTable) -> dict[str, object]:
    """The identity lines both commands print first."""
    c = t.config
    return {
        "path": t.storage.base_uri,
        "name": c.name,
        "type": c.table_type,
        "version": c.version,
        "partition_fields": list(c.partition_fields),
        "record_key_fields": list(c.record_key_fields),
    }


def parse_size(text: str) -> int:
    """argparse type for sizes (`104857600`, `100MB`, `100MiB`, `100m`): Hudi's size options are powers
    of two and typing them in bytes is error-prone."""
    from pyhudi.config.registry import size_in_bytes

    try:
        return size_in_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative integer")
    return value


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value.strip()


def parse_options(pairs: Sequence[tuple[str, str]], prog: str) -> tuple[dict[str, str], Options]:
    """User options as given, and parsed; an unknown `hoodie.*` key gets one warning line on stderr,
    since a misspelt key would otherwise be silently ignored."""
    from pyhudi.config.registry import Options

    raw = dict(pairs)
    parsed = Options.parse(raw, warn_unknown=False)
    for key in parsed.extras:
        if key.startswith("hoodie."):
            print(f"{prog}: warning: unknown option {key!r} is ignored", file=sys.stderr)
    known = {k: v for k, v in raw.items() if k not in parsed.extras or not k.startswith("hoodie.")}
    return known, parsed


def add_option_argument(p: argparse.ArgumentParser, example: str) -> None:
    """`--option/-o KEY=VALUE`, repeatable: Hudi's own keys, so a pipeline's config carries over."""
    p.add_argument("--option", "-o", dest="options", action="append", type=key_value, default=[],
                   metavar="KEY=VALUE", help=f"a Hudi option, e.g. {example} (repeatable)")


def add_master_argument(p: argparse.ArgumentParser) -> None:
    """`--master`: Spark only when asked for; without it the command runs in-process (no Java, no pyspark)."""
    p.add_argument("--master", default=None, metavar="URL",
                   help="run on Spark with this master (e.g. local[2], needs pip install 'pyhudi[spark]' and "
                        "Java 17+; or a Spark Connect server sc://host:15002, needs pyhudi[connect]); "
                        "default: in-process, no Spark or Java needed")


def require_spark(master: str | None = None) -> None:
    """Before a command says "starting Spark": pyspark and Java are there (no Java for a Spark Connect
    `sc://` master), else one JavaNotFoundError line naming what to install (and that leaving out
    --master runs in-process)."""
    from pyhudi.spark_env import check_spark

    check_spark(master)


@contextmanager
def spark_session(master: str, app_name: str) -> Iterator[Any]:
    """A SparkSession for one command; one the command started is stopped at the end, one that existed
    (a notebook, the tests) is kept. Checks pyspark and Java first, so a missing one is a
    JavaNotFoundError naming what to install; pyspark is imported only by the Spark engine's module."""
    from pyhudi.cli import progress
    from pyhudi.spark_env import check_spark, create_session

    check_spark(master)
    from pyhudi.engine.spark.session import command_session

    with command_session(lambda: create_session(master, app_name=app_name),  # type: ignore[arg-type,return-value]
                         progress.settle_active) as spark:
        yield spark
