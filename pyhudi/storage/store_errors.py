"""What the object-store library raises, turned into HudiErrors that name the offending option or bucket.

obstore (Rust `object_store`) reports a misspelled option as `UnknownConfigurationKeyError`, a malformed
credential as a `GenericError` at store construction, a missing bucket as a 404 whose body says
`NoSuchBucket` (which a caller looking for `hoodie.properties` would take for "not a Hudi table"), and a
few malformed inputs (an endpoint with an out-of-range port) by panicking: pyo3's `PanicException`, a
`BaseException`, which `except Exception` misses. The endpoints are validated before they reach it
(`check_endpoints`), and whatever still panics is caught narrowly here (`is_panic`).
"""

from __future__ import annotations

import difflib
import re
import urllib.parse
from typing import Any

from pyhudi.errors import BucketNotFoundError, InvalidConfigError, StorageError
from pyhudi.storage.config import PYHUDI_KEYS, Location

# The options users usually set, per store, for "did you mean" suggestions only: whether a key is valid is
# for obstore to say (it raises UnknownConfigurationKeyError), so a key missing here is still accepted.
KNOWN_KEYS: dict[str, tuple[str, ...]] = {
    "s3": ("aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_region", "aws_default_region",
           "aws_endpoint", "aws_endpoint_url", "aws_allow_http", "aws_profile", "aws_virtual_hosted_style_request",
           "aws_skip_signature", "aws_checksum_algorithm", "aws_conditional_put", "aws_copy_if_not_exists",
           "aws_unsigned_payload", "aws_imdsv1_fallback", "aws_metadata_endpoint",
           "aws_container_credentials_relative_uri", "aws_request_payer", "aws_server_side_encryption",
           "aws_sse_kms_key_id", "aws_sse_bucket_key_enabled", "aws_disable_tagging", "aws_role_arn",
           "aws_role_session_name", "aws_web_identity_token_file", "aws_s3_express", "aws_token"),
    "gs": ("google_service_account", "google_service_account_key", "google_application_credentials",
           "google_base_url", "google_bucket", "google_skip_signature", "allow_http"),
    "az": ("azure_storage_account_name", "azure_storage_account_key", "azure_storage_client_id",
           "azure_storage_client_secret", "azure_storage_tenant_id", "azure_storage_sas_key",
           "azure_storage_sas_token", "azure_storage_token", "azure_storage_use_emulator", "azure_storage_endpoint",
           "azure_client_id", "azure_client_secret", "azure_tenant_id", "azure_authority_host",
           "azure_msi_endpoint", "azure_object_id", "azure_msi_resource_id", "azure_federated_token_file",
           "azure_use_azure_cli", "azure_skip_signature", "azure_container_name", "azure_disable_tagging",
           "azure_use_fabric_endpoint", "azure_allow_http", "allow_http"),
}
# Endpoint options, and the environment variables they may come from (named in the error).
ENDPOINT_KEYS: dict[str, tuple[str, str]] = {
    "aws_endpoint": ("s3", "AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL"),
    "google_base_url": ("gs", "GOOGLE_BASE_URL"),
    "azure_storage_endpoint": ("az", "AZURE_STORAGE_ENDPOINT"),
}
# The credential options whose malformed value fails the store's construction.
CREDENTIAL_KEYS: dict[str, tuple[str, ...]] = {
    "s3": ("aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_web_identity_token_file"),
    "gs": ("google_service_account_key", "google_service_account", "google_application_credentials"),
    "az": ("azure_storage_account_key", "azure_storage_sas_key", "azure_storage_sas_token",
           "azure_client_secret", "azure_federated_token_file"),
}
_CREDENTIAL_FORM = {
    "google_service_account_key": "the service account's JSON key itself",
    "google_service_account": "the path of a service account JSON key file",
    "google_application_credentials": "the path of an application-default credentials JSON file",
    "azure_storage_account_key": "the storage account's access key, base64 as the Azure portal shows it",
}
_MISSING_BUCKET = ("nosuchbucket", "containernotfound", "the specified bucket does not exist",
                   "the specified container does not exist")
_UNKNOWN_KEY = re.compile(r"key: '([^']*)'")


def is_panic(exc: BaseException) -> bool:
    """A Rust panic surfaced by pyo3 (`pyo3_runtime.PanicException`, a BaseException); never an interrupt
    or an exit, which must pass."""
    return type(exc).__name__ == "PanicException" and not isinstance(exc, KeyboardInterrupt | SystemExit)


def suggest(key: str, kind: str) -> str:
    """" (did you mean ...?)" for the known keys closest to `key`, or ""."""
    close = difflib.get_close_matches(key, (*KNOWN_KEYS.get(kind, ()), *PYHUDI_KEYS), n=3, cutoff=0.8)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def check_keys(loc: Location, options: dict[str, str]) -> None:
    """pyhudi's own keys are checked here (obstore never sees them: a misspelled one would be ignored)."""
    for key in options:
        if key.startswith("pyhudi.") and key not in PYHUDI_KEYS:
            raise InvalidConfigError(f"unknown storage option {key!r}{suggest(key, loc.kind)}; pyhudi's storage "
                                     f"options are {', '.join(PYHUDI_KEYS)}")


def check_endpoints(options: dict[str, str]) -> None:
    """An endpoint URL is http(s)://host[:port] with a port in 1..65535; a bad one would make obstore panic
    at the first request (or fail with a message naming no option)."""
    for key, (_, variables) in ENDPOINT_KEYS.items():
        value = options.get(key)
        if value is None:
            continue
        problem = _endpoint_problem(value)
        if problem:
            raise InvalidConfigError(
                f"storage option {key}={value!r} (or {variables}) is not a valid endpoint URL: {problem}; give "
                "scheme, host and an optional port 1-65535, e.g. http://localhost:9000")


def _endpoint_problem(value: str) -> str | None:
    try:
        url = urllib.parse.urlsplit(value)
        port = url.port
    except ValueError as exc:
        return str(exc)
    if url.scheme not in ("http", "https"):
        return "the scheme must be http or https"
    if not url.hostname:
        return "no host"
    if port == 0:
        return "port 0"
    return None


def unknown_key_error(exc: BaseException, loc: Location) -> InvalidConfigError:
    found = _UNKNOWN_KEY.search(str(exc))
    key = found.group(1) if found else str(exc).splitlines()[0]
    return InvalidConfigError(
        f"unknown storage option {key!r} for {_where(loc)}{suggest(key, loc.kind)}; storage options "
        "are object_store's configuration keys (aws_*, google_*, azure_*) and pyhudi.*: fix or remove it")


def construction_error(exc: BaseException, loc: Location, options: dict[str, str]) -> InvalidConfigError:
    """A store that cannot be built from the options (a malformed key or key file): the message names the
    credential options that were given, since obstore's says only what failed to decode."""
    given = [k for k in CREDENTIAL_KEYS.get(loc.kind, ()) if k in options]
    detail = _first_line(exc).rstrip(".")
    if given:
        hint = "; ".join(f"{k} must be {_CREDENTIAL_FORM.get(k, 'a valid credential')}" for k in given)
        what = (f"check storage option {given[0]} (or the variable it comes from): {hint}" if len(given) == 1 else
                f"check storage options {', '.join(given)} (or the variables they come from): {hint}")
    else:
        what = "check the storage options and the credential variables of this store"
    return InvalidConfigError(f"cannot configure access to {_where(loc)}: {detail}. {what}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _where(loc: Location) -> str:
    scheme = {"s3": "s3", "gs": "gs", "az": "abfss"}.get(loc.kind, loc.kind)
    return f"{scheme}://{loc.bucket}" + (f"@{loc.account}" if loc.account else "")


def panic_error(exc: BaseException, what: str) -> StorageError:
    return StorageError(f"{what} failed inside the object-store library (a Rust panic: {_first_line(exc)}); check the "
                        "endpoint and the other storage options (aws_endpoint, google_base_url, "
                        "azure_storage_endpoint or their variables)")


def missing_bucket_error(exc: BaseException, loc: Location, describe: str) -> BucketNotFoundError | None:
    """The bucket or container itself is missing (not just the object): say so, naming it."""
    text = str(exc).lower()
    if not any(marker in text for marker in _MISSING_BUCKET):
        return None
    what = "container" if loc.kind == "az" else "bucket"
    where = f" in storage account {loc.account}" if loc.account else ""
    return BucketNotFoundError(
        f"the {what} {loc.bucket!r}{where} does not exist (while accessing {describe}); create it, or fix the "
        "table path or the endpoint")


def translate(exc: BaseException, loc: Location, options: dict[str, Any]) -> BaseException:
    """The HudiError for an exception raised while building a store (or `exc` itself)."""
    import obstore.exceptions as oe

    if isinstance(exc, oe.UnknownConfigurationKeyError):
        return unknown_key_error(exc, loc)
    if isinstance(exc, oe.BaseError | ValueError):
        return construction_error(exc, loc, options)
    if is_panic(exc):
        return panic_error(exc, f"configuring access to {_where(loc)}")
    return exc
