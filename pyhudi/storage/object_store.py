"""Object-store backend (S3 and S3-compatible stores, GCS, Azure) behind `Storage`.

Two libraries, each for what it does best (measured; see docs/architecture.md, "Storage"):

* obstore (Rust `object_store`) for every request pyhudi makes itself: small reads, listings, deletes,
  whole-object PUTs, and the conditional writes the timeline needs (`If-None-Match: *` for exclusive
  creates, `If-Match: <etag>` for compare-and-swap). pyarrow's file systems have no conditional writes.
* pyarrow's file system (`fs`) for the parquet streams callers open with `open_input_file` /
  `open_output_stream` (random-access footer reads, multipart uploads of large files).

obstore's own retries are off: every request goes through `retry.call`, so a retried non-idempotent
request is known (see `create`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import json
import logging
import urllib.parse
import uuid
from typing import Any

import obstore
import obstore.exceptions as oe
import pyarrow.fs as pafs

from pyhudi.errors import ConditionalWriteUnsupportedError, StorageError
from pyhudi.storage import metrics, retry, store_errors
from pyhudi.storage.config import (
    CONDITIONAL_WRITES,
    RETRY_BASE_DELAY_MS,
    RETRY_MAX_ATTEMPTS,
    RETRY_MAX_DELAY_MS,
    Location,
    endpoint_parts,
    int_option,
    library_options,
)

log = logging.getLogger(__name__)
TOKEN_ATTRIBUTE = "pyhudi-create-token"
# Azure metadata names must be C# identifiers (`x-ms-meta-pyhudi-create-token` is 400 InvalidMetadata)
AZURE_TOKEN_ATTRIBUTE = "pyhudi_create_token"
_ENDPOINT_KEYS = {"s3": "aws_endpoint", "gs": "google_base_url", "az": "azure_storage_endpoint"}
PROBE_DIR = ".hoodie/.aux/.pyhudi-probe"
_PROBE_CACHE: dict[tuple[str, str, str], bool] = {}  # (kind, bucket, endpoint) -> conditional writes work


def _unsupported(exc: BaseException) -> bool:
    """A store's "no conditional writes here" answer (501 NotImplemented or obstore's NotSupported)."""
    cause = exc.__cause__ if isinstance(exc, StorageError) and exc.__cause__ else exc
    text = str(cause).lower()
    return isinstance(cause, oe.NotSupportedError) or "notimplemented" in text or "501 not" in text


_ANSWERS = (FileNotFoundError, oe.NotFoundError, oe.AlreadyExistsError, oe.PreconditionError)


def _payload(data: Any) -> Any:
    """bytes as they are; any other buffer (pa.Buffer, memoryview) as the uint8 view obstore takes."""
    return data if isinstance(data, bytes) else memoryview(data).cast("B")


def build_store(loc: Location, options: dict[str, str]) -> Any:
    """An obstore store rooted at the table's bucket and prefix; retries are ours (`retry.call`). Options it
    cannot take (a misspelled key, a malformed endpoint or credential) are an InvalidConfigError naming the
    option, not obstore's own exception (or a Rust panic, see `store_errors`)."""
    store_errors.check_keys(loc, options)
    store_errors.check_endpoints(options)
    try:
        return _build_store(loc, options)
    except BaseException as exc:
        translated = store_errors.translate(exc, loc, options)
        if translated is exc:
            raise
        raise translated from exc


def _build_store(loc: Location, options: dict[str, str]) -> Any:
    from obstore.store import AzureStore, GCSStore, S3Store

    conf: Any = library_options(options)
    no_retries: Any = {"max_retries": 0, "retry_timeout": dt.timedelta(seconds=120)}
    client: Any = {"timeout": "120s", "connect_timeout": "10s"}
    if _allow_http(conf):
        client["allow_http"] = True
    if loc.kind == "s3":
        return S3Store(loc.bucket, prefix=loc.prefix or None, config=conf, client_options=client,
                       retry_config=no_retries)
    if loc.kind == "gs":
        return GCSStore(loc.bucket, prefix=loc.prefix or None, config=conf, client_options=client,
                        retry_config=no_retries)
    if loc.account:
        conf.setdefault("azure_storage_account_name", loc.account)
    return AzureStore(loc.bucket, prefix=loc.prefix or None, config=conf, client_options=client,
                      retry_config=no_retries)


def _allow_http(conf: dict[str, str]) -> bool:
    """Pops the allow-http keys (a client option, not a store key); an `http://` Azure or GCS endpoint
    means plain HTTP, as an `http://` S3 endpoint does in `resolve_options`."""
    flags = [conf.pop("aws_allow_http", conf.pop("allow_http", "false")).lower() == "true"]
    flags += [conf.pop(k, "false").lower() == "true" for k in ("azure_allow_http", "google_allow_http")]
    endpoints = (conf.get("azure_storage_endpoint", ""), conf.get("google_base_url", ""),
                 _key_base_url(conf.get("google_service_account_key", "")))
    return any(flags) or any(e.startswith("http://") for e in endpoints)


def _key_base_url(key: str) -> str:
    """`gcs_base_url` of an inline service-account key (how object_store is pointed at a GCS stand-in)."""
    if not key.lstrip().startswith("{"):
        return ""
    try:
        return str(json.loads(key).get("gcs_base_url", ""))
    except (ValueError, AttributeError):
        return ""


def build_arrow_fs(loc: Location, options: dict[str, str]) -> tuple[pafs.FileSystem, str]:
    """pyarrow's file system for data streams, configured from the same resolved options."""
    store_errors.check_endpoints(options)
    root = f"{loc.bucket}/{loc.prefix}".rstrip("/")
    attempts = int_option(options, RETRY_MAX_ATTEMPTS, 8)
    if loc.kind == "s3":
        # allow_delayed_open: a small file is one PutObject, not a 3-request multipart upload (measured)
        kw: dict[str, Any] = {"retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=attempts),
                              "allow_delayed_open": True}
        if "aws_endpoint" in options:
            kw["scheme"], kw["endpoint_override"] = endpoint_parts(options["aws_endpoint"])
        if "aws_region" in options:
            kw["region"] = options["aws_region"]
        if "aws_access_key_id" in options:
            kw["access_key"] = options["aws_access_key_id"]
            kw["secret_key"] = options.get("aws_secret_access_key", "")
            kw["session_token"] = options.get("aws_session_token")
        return pafs.S3FileSystem(**kw), root
    if loc.kind == "gs":
        return pafs.GcsFileSystem(), root
    return _arrow_azure_fs(loc, options), root


def _arrow_azure_fs(loc: Location, options: dict[str, str]) -> pafs.FileSystem:
    """pyarrow's Azure file system; an explicit endpoint (Azurite, sovereign clouds) becomes its blob
    authority and scheme, and the container path keeps the bucket as its first segment."""
    kw: dict[str, Any] = {"account_name": loc.account or options.get("azure_storage_account_name", ""),
                          "account_key": options.get("azure_storage_account_key")}
    endpoint = options.get("azure_storage_endpoint")
    if endpoint:
        scheme, authority = endpoint_parts(endpoint)
        authority = authority.split("/", 1)[0]  # Azurite's account is a path segment: pyarrow adds it
        kw.update(blob_storage_authority=authority, dfs_storage_authority=authority,
                  blob_storage_scheme=scheme, dfs_storage_scheme=scheme)
    return pafs.AzureFileSystem(**kw)


class ObjectBackend:
    """The object-store half of `Storage`; paths are relative to the table's base path."""

    def __init__(self, loc: Location, options: dict[str, str]) -> None:
        self.loc = loc
        self.options = options
        self.store = build_store(loc, options)
        self.policy = retry.RetryPolicy(
            max_attempts=max(1, int_option(options, RETRY_MAX_ATTEMPTS, 8)),
            base_delay_s=int_option(options, RETRY_BASE_DELAY_MS, 50) / 1000,
            max_delay_s=int_option(options, RETRY_MAX_DELAY_MS, 5000) / 1000)
        self.conditional = options.get(CONDITIONAL_WRITES, "auto").lower()
        if self.conditional not in ("auto", "true", "false"):
            raise StorageError(f"storage option {CONDITIONAL_WRITES}={self.conditional!r} must be auto, true or "
                               "false")

    def _call(self, op: str, rel: str, fn: Any) -> Any:
        """`fn` with retries; a final failure that is not an answer (not found, exists, precondition)
        becomes a StorageError naming the operation and the path. A missing bucket is a
        BucketNotFoundError even where it came as a "not found" answer (a GET of the table's properties
        must not read as "not a Hudi table"); a Rust panic in obstore (a BaseException) a StorageError."""
        try:
            return retry.call(self.policy, op, self.describe(rel), fn)
        except BaseException as exc:
            missing = store_errors.missing_bucket_error(exc, self.loc, self.describe(rel))
            if missing is not None:
                raise missing from exc
            if isinstance(exc, (StorageError, *_ANSWERS)) or not isinstance(exc, Exception):
                if store_errors.is_panic(exc):
                    raise store_errors.panic_error(exc, f"{op} of {self.describe(rel)}") from exc
                raise
            raise StorageError(f"{op} of {self.describe(rel)} failed: {retry.first_line(exc)}; check the "
                               "endpoint, the credentials and the bucket (AWS_* variables or "
                               "storage_options)") from exc

    def describe(self, rel: str) -> str:
        scheme = {"s3": "s3", "gs": "gs", "az": "abfss"}[self.loc.kind]
        return f"{scheme}://{self.loc.bucket}/{'/'.join(p for p in (self.loc.prefix, rel) if p)}"

    # -- reads -------------------------------------------------------------------------
    def head(self, rel: str) -> dict[str, Any] | None:
        def run(_: int) -> dict[str, Any] | None:
            metrics.count("HEAD", "HEAD")
            try:
                return dict(obstore.head(self.store, rel))
            except (oe.NotFoundError, FileNotFoundError):
                return None
        return self._call("HEAD", rel, run)  # type: ignore[no-any-return]

    def has_children(self, rel: str) -> bool:
        prefix = rel.strip("/") or None  # object_store lists a prefix as a directory: `rel/...`
        def run(_: int) -> bool:
            metrics.count("LIST", "LIST first")
            first: list[Any] = next(iter(obstore.list(self.store, prefix=prefix, chunk_size=1)), [])
            return len(first) > 0
        return self._call("LIST", rel, run)  # type: ignore[no-any-return]

    def version_tag(self, meta: Any) -> str | None:
        """The tag `put_if_match` compares: the ETag (S3 `If-Match`, Azure `If-Match`), or on GCS the
        generation (object_store updates GCS objects with `x-goog-if-generation-match`, not ETags)."""
        if self.loc.kind == "gs" and meta.get("version"):
            return str(meta["version"])
        return meta.get("e_tag")  # type: ignore[no-any-return]

    def _update_mode(self, tag: str) -> Any:
        return {"version": tag} if self.loc.kind == "gs" else {"e_tag": tag}

    @property
    def token_attribute(self) -> str:
        return AZURE_TOKEN_ATTRIBUTE if self.loc.kind == "az" else TOKEN_ATTRIBUTE

    def read(self, rel: str) -> tuple[bytes, str | None, dict[str, str]]:
        """(content, version tag for `put_if_match`, attributes) of one object in one GET."""
        def run(_: int) -> tuple[bytes, str | None, dict[str, str]]:
            metrics.count("GET", "GET")
            result = obstore.get(self.store, rel)
            data = bytes(result.bytes())
            metrics.count("GET", "GET", 0, read=len(data))
            return data, self.version_tag(result.meta), dict(result.attributes)
        try:
            return self._call("GET", rel, run)  # type: ignore[no-any-return]
        except oe.NotFoundError:
            raise FileNotFoundError(f"{self.describe(rel)} does not exist") from None

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of `rel` in one ranged GET."""
        def run(_: int) -> bytes:
            metrics.count("GET", "GET range", read=end - start)
            return bytes(obstore.get_range(self.store, rel, start=start, end=end))
        try:
            return self._call("GET range", rel, run)  # type: ignore[no-any-return]
        except oe.NotFoundError:  # as `read`: callers tell a vanished file from a failing store
            raise FileNotFoundError(f"{self.describe(rel)} does not exist") from None

    def list_dir(self, rel: str) -> tuple[list[dict[str, Any]], list[str]]:
        """(objects, sub-directory paths) directly under `rel`."""
        prefix = rel.strip("/") or None
        def run(_: int) -> tuple[list[dict[str, Any]], list[str]]:
            metrics.count("LIST", "LIST dir")
            res = obstore.list_with_delimiter(self.store, prefix=prefix)
            metrics.count("LIST", "LIST dir", metrics.list_pages(len(res["objects"]) + len(res["common_prefixes"])) - 1)
            return [dict(o) for o in res["objects"]], [p.rstrip("/") for p in res["common_prefixes"]]
        return self._call("LIST", rel, run)  # type: ignore[no-any-return]

    # -- writes ------------------------------------------------------------------------
    def put(self, rel: str, data: Any) -> str | None:
        """Overwrite `rel` with one PUT (multipart above 5 MiB; visible only once complete)."""
        def run(_: int) -> str | None:
            metrics.count_put("PUT", metrics.size_of(data))
            return obstore.put(self.store, rel, _payload(data))["e_tag"]  # type: ignore[no-any-return]
        return self._call("PUT", rel, run)  # type: ignore[no-any-return]

    def create(self, rel: str, data: Any) -> bool:
        """Conditional create (`If-None-Match: *`); False when the object exists.

        A retried create whose first answer was lost gets 412 although it created the object itself:
        every create carries a unique token as object metadata, and a 412 after a retry reads the
        object back and compares tokens, so the creator learns it won.
        """
        return self.create_tagged(rel, data)[0]

    def create_tagged(self, rel: str, data: Any) -> tuple[bool, str | None]:
        """`create`, and the new object's ETag when the store answered it (None after a lost answer, or
        on the check-then-put fallback)."""
        if self.conditional == "false" or _PROBE_CACHE.get(self._probe_key()) is False:
            return self._check_then_put(rel, data), None
        token = uuid.uuid4().hex
        def run(attempt: int) -> tuple[bool, str | None]:
            metrics.count_put("PUT if-none-match", metrics.size_of(data))
            try:
                put = obstore.put(self.store, rel, _payload(data), mode="create",
                                  attributes={self.token_attribute: token})
                return True, put.get("e_tag")
            except oe.AlreadyExistsError:
                if attempt == 0:
                    return False, None
                return self._token_of(rel) == token, None
        try:
            return self._call("PUT if-none-match", rel, run)  # type: ignore[no-any-return]
        except StorageError as exc:
            if not _unsupported(exc):
                raise
            if self.conditional == "true":
                raise ConditionalWriteUnsupportedError(
                    f"{self.describe(rel)}: the store refused a conditional create ({exc}) although "
                    f"{CONDITIONAL_WRITES}=true; set it to auto or false for a single writer") from exc
            _PROBE_CACHE[self._probe_key()] = False
            log.warning("%s does not support conditional writes; exclusive creates fall back to "
                        "check-then-put, which is only safe with a single writer", self.describe(""))
            return self._check_then_put(rel, data), None

    def _token_of(self, rel: str) -> str | None:
        try:
            return self.read(rel)[2].get(self.token_attribute)
        except FileNotFoundError:
            return None

    def _check_then_put(self, rel: str, data: Any) -> bool:
        if self.head(rel) is not None:
            return False
        self.put(rel, data)
        return True

    def put_if_match(self, rel: str, data: bytes, etag: str) -> str | None:
        """Replace `rel` only if its version tag (`version_tag`) is still `etag`; the new tag, or None if
        it changed."""
        def run(_: int) -> str | None:
            metrics.count_put("PUT if-match", len(data))
            try:
                return self.version_tag(obstore.put(self.store, rel, data, mode=self._update_mode(etag)))
            except (oe.PreconditionError, oe.NotFoundError):
                return None
        return self._conditional("PUT if-match", rel, run)

    def delete_if_match(self, rel: str, etag: str) -> bool:
        """Delete `rel` only if its ETag is still `etag`: a DELETE with `If-Match` by a presigned URL (S3
        `DeleteObject`; Azure `Delete Blob` by a SAS, which needs the account key). GCS: not available
        (obstore signs GCS URLs only with a service account)."""
        if self.loc.kind == "gs":
            raise ConditionalWriteUnsupportedError(
                f"conditional delete of {self.describe(rel)} is not available on this store through obstore; "
                "release a lock by put_if_match (write an expired lock) instead")
        try:
            url = obstore.sign(self.store, "DELETE", rel, dt.timedelta(minutes=5))
        except Exception as exc:  # Azure without an account key (SAS token, Entra ID) cannot sign a SAS
            raise ConditionalWriteUnsupportedError(
                f"conditional delete of {self.describe(rel)} needs a presigned URL and signing failed "
                f"({retry.first_line(exc)}); give the account key, or use put_if_match instead") from exc
        def run(_: int) -> bool:
            metrics.count("DELETE", "DELETE if-match")
            status, body = _send("DELETE", url, {"If-Match": etag})
            if status in (200, 202, 204):  # Azure's Delete Blob answers 202 Accepted
                return True
            if status in (404, 412):
                return False
            raise OSError(f"DELETE {self.describe(rel)} answered {status}: {body[:200]!r}")
        return self._conditional("DELETE if-match", rel, run)

    def _conditional(self, op: str, rel: str, run: Any) -> Any:
        try:
            return self._call(op, rel, run)
        except StorageError as exc:
            if _unsupported(exc):
                raise ConditionalWriteUnsupportedError(
                    f"{op} of {self.describe(rel)}: the store does not support conditional writes "
                    f"({retry.first_line(exc)}); use a store that does (S3, GCS, Azure, recent MinIO)") from exc
            raise

    def delete(self, rel: str) -> None:
        def run(_: int) -> None:
            metrics.count("POST" if self.loc.kind == "s3" else "DELETE", "DELETE one key")  # S3: POST ?delete
            # Azure and GCS answer 404 for a missing object (S3 does not): already gone, as wanted
            with contextlib.suppress(oe.NotFoundError, FileNotFoundError):
                obstore.delete(self.store, rel)
        self._call("DELETE", rel, run)

    def delete_many(self, rels: list[str]) -> None:
        for i in range(0, len(rels), 1000):
            chunk = rels[i:i + 1000]
            try:
                self._call("DELETE", chunk[0], lambda _, c=chunk: _delete_batch(self.store, c))
            except (oe.NotFoundError, FileNotFoundError):  # Azure/GCS: a key was already gone; the rest
                for rel in chunk:                            # one by one (a missing key is not an error)
                    self.delete(rel)

    def list_recursive(self, rel: str) -> list[str]:
        prefix = rel.strip("/") or None
        def run(_: int) -> list[str]:
            metrics.count("LIST", "LIST recursive")
            paths = [o["path"] for chunk in obstore.list(self.store, prefix=prefix, chunk_size=1000) for o in chunk]
            metrics.count("LIST", "LIST recursive", metrics.list_pages(len(paths)) - 1)
            return paths
        return self._call("LIST", rel, run)  # type: ignore[no-any-return]

    def rename(self, src: str, dst: str) -> None:
        def run(_: int) -> None:
            metrics.count("PUT", "COPY")
            obstore.copy(self.store, src, dst)
        self._call("COPY", src, run)
        self.delete(src)

    # -- conditional write support ---------------------------------------------------------------
    def _probe_key(self) -> tuple[str, str, str]:
        endpoint = self.options.get(_ENDPOINT_KEYS[self.loc.kind], "") or \
            _key_base_url(self.options.get("google_service_account_key", ""))
        return (self.loc.kind, f"{self.loc.account}@{self.loc.bucket}" if self.loc.account else self.loc.bucket,
                endpoint)

    def supports_conditional_create(self) -> bool:
        """Whether the store honours `If-None-Match: *`: creates a probe object twice (the second must
        fail with 412), then deletes it. Cached per bucket and endpoint for the process."""
        if self.conditional != "auto":
            return self.conditional == "true"
        key = self._probe_key()
        if key not in _PROBE_CACHE:
            _PROBE_CACHE[key] = self._probe()
        return _PROBE_CACHE[key]

    def _probe(self) -> bool:
        rel = f"{PROBE_DIR}/{uuid.uuid4().hex}"
        try:
            for attempt in range(2):
                try:
                    self._call("PUT if-none-match", rel, lambda _: _probe_put(self.store, rel))
                except oe.AlreadyExistsError:
                    return attempt == 1
                except StorageError as exc:
                    if _unsupported(exc):
                        return False
                    raise
            return False  # the second create succeeded: the header was ignored
        finally:
            self.delete(rel)


def _probe_put(store: Any, rel: str) -> None:
    metrics.count_put("PUT if-none-match probe", 5)
    obstore.put(store, rel, b"probe", mode="create")


def _delete_batch(store: Any, rels: list[str]) -> None:
    """Up to 1000 keys in one DeleteObjects request (S3's bulk delete is a POST)."""
    metrics.count("POST", "DELETE batch")
    obstore.delete(store, rels)


def _send(method: str, url: str, headers: dict[str, str]) -> tuple[int, bytes]:
    parts = urllib.parse.urlsplit(url)
    conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(parts.netloc, timeout=60)
    try:
        conn.request(method, f"{parts.path}?{parts.query}", headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()
