"""Where a table lives and how to reach it: URI schemes, credentials and endpoints, retry settings.

Configuration follows what AWS, GCS and Azure tools do: explicit `storage_options` win, then the
standard environment variables (`AWS_ENDPOINT_URL_S3`/`AWS_ENDPOINT_URL`, `AWS_REGION`/
`AWS_DEFAULT_REGION`, `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`), then the
profile named by `AWS_PROFILE` in `~/.aws/credentials` and `~/.aws/config`. GCS and Azure: explicit
options, then their standard variables (`GOOGLE_SERVICE_ACCOUNT_KEY`, `AZURE_STORAGE_ACCOUNT_NAME`, ...:
`_OTHER_ENV`). Anything not given here is left to each library's own credential chain (instance
metadata, web identity, ...).

`storage_options` keys are object_store's (`aws_endpoint`, `aws_region`, `aws_access_key_id`,
`google_service_account`, `azure_storage_account_key`, ...; the upper-case environment names are
accepted too) plus pyhudi's own `pyhudi.*` keys below.
"""

from __future__ import annotations

import configparser
import os
import urllib.parse
from dataclasses import dataclass
from typing import Any

from pyhudi.errors import InvalidConfigError

OBJECT_SCHEMES = {"s3": "s3", "s3a": "s3", "gs": "gs", "abfs": "az", "abfss": "az"}

RETRY_MAX_ATTEMPTS = "pyhudi.retry.max_attempts"
RETRY_BASE_DELAY_MS = "pyhudi.retry.base_delay_ms"
RETRY_MAX_DELAY_MS = "pyhudi.retry.max_delay_ms"
CONDITIONAL_WRITES = "pyhudi.conditional_writes"  # auto (default) | true | false
PYHUDI_KEYS = (RETRY_MAX_ATTEMPTS, RETRY_BASE_DELAY_MS, RETRY_MAX_DELAY_MS, CONDITIONAL_WRITES)

_S3_ALIASES = {
    "aws_endpoint_url": "aws_endpoint", "aws_endpoint_url_s3": "aws_endpoint", "endpoint_url": "aws_endpoint",
    "endpoint": "aws_endpoint", "aws_default_region": "aws_region", "region": "aws_region",
    "access_key_id": "aws_access_key_id", "secret_access_key": "aws_secret_access_key",
    "session_token": "aws_session_token", "aws_token": "aws_session_token", "profile": "aws_profile",
    "allow_http": "aws_allow_http",
}
# Most specific first: AWS tools prefer the service-specific endpoint and AWS_REGION.
_S3_ENV = (
    ("AWS_ENDPOINT_URL_S3", "aws_endpoint"), ("AWS_ENDPOINT_URL", "aws_endpoint"),
    ("AWS_REGION", "aws_region"), ("AWS_DEFAULT_REGION", "aws_region"),
    ("AWS_ACCESS_KEY_ID", "aws_access_key_id"), ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
    ("AWS_SESSION_TOKEN", "aws_session_token"), ("AWS_PROFILE", "aws_profile"),
    ("AWS_ALLOW_HTTP", "aws_allow_http"),
)

# The standard variables object_store itself reads for GCS and Azure: resolved here too, so that a pickled
# Storage carries them to executors (as the AWS_* ones) and an `http://` endpoint turns on plain HTTP.
_OTHER_ENV = {
    "gs": (("GOOGLE_SERVICE_ACCOUNT", "google_service_account"),
           ("GOOGLE_SERVICE_ACCOUNT_KEY", "google_service_account_key"),
           ("GOOGLE_APPLICATION_CREDENTIALS", "google_application_credentials")),
    "az": (("AZURE_STORAGE_ACCOUNT_NAME", "azure_storage_account_name"),
           ("AZURE_STORAGE_ACCOUNT_KEY", "azure_storage_account_key"),
           ("AZURE_STORAGE_SAS_TOKEN", "azure_storage_sas_token"),
           ("AZURE_STORAGE_ENDPOINT", "azure_storage_endpoint"),
           ("AZURE_STORAGE_USE_EMULATOR", "azure_storage_use_emulator"),
           ("AZURE_CLIENT_ID", "azure_client_id"), ("AZURE_CLIENT_SECRET", "azure_client_secret"),
           ("AZURE_TENANT_ID", "azure_tenant_id")),
}


@dataclass(frozen=True)
class Location:
    """A parsed table URI: `kind` is `local`, `s3`, `gs`, `az` or `other` (any other scheme pyarrow
    knows); `bucket` is the bucket or container."""

    kind: str
    bucket: str
    prefix: str
    account: str = ""

    @property
    def is_object_store(self) -> bool:
        return self.kind in ("s3", "gs", "az")


def parse_location(base_uri: str) -> Location:
    """Split a normalised base URI; `abfs(s)://container@account.dfs.core.windows.net/path` for Azure."""
    if "://" not in base_uri:
        return Location("local", "", base_uri)
    scheme, rest = base_uri.split("://", 1)
    kind = OBJECT_SCHEMES.get(scheme.lower())
    if scheme.lower() == "file":
        return Location("local", "", "/" + rest.lstrip("/"))
    if kind is None:  # hdfs://, mock://, ...: left to pyarrow's FileSystem.from_uri
        return Location("other", "", base_uri)
    bucket, _, prefix = rest.partition("/")
    account = ""
    if kind == "az" and "@" in bucket:
        bucket, host = bucket.split("@", 1)
        account = host.split(".", 1)[0]
    if not bucket:
        raise InvalidConfigError(f"no bucket in {base_uri!r}: expected {scheme}://bucket/path/to/table")
    return Location(kind, bucket, prefix.strip("/"), account)


def _profile_settings(profile: str) -> dict[str, str]:
    """Keys, region and endpoint of an AWS profile (static credentials only; SSO/assume-role profiles
    are left to the libraries' own chains)."""
    out: dict[str, str] = {}
    home = os.path.expanduser("~")
    creds = configparser.ConfigParser()
    creds.read(os.environ.get("AWS_SHARED_CREDENTIALS_FILE", os.path.join(home, ".aws", "credentials")))
    conf = configparser.ConfigParser()
    conf.read(os.environ.get("AWS_CONFIG_FILE", os.path.join(home, ".aws", "config")))
    for parser, section in ((conf, "default" if profile == "default" else f"profile {profile}"),
                            (creds, profile)):
        if parser.has_section(section):
            for key, value in parser.items(section):
                name = _S3_ALIASES.get(key, key if key.startswith("aws_") else f"aws_{key}")
                out[name] = value
    return out


def _normalise_keys(options: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in options.items():
        low = str(key).lower()
        out[low if low.startswith("pyhudi.") else _S3_ALIASES.get(low, low)] = str(value)
    return out


def resolve_options(loc: Location, storage_options: dict[str, Any] | None) -> dict[str, str]:
    """Explicit options over environment variables over the AWS profile (S3); GCS and Azure: explicit
    options over their standard variables (`_OTHER_ENV`)."""
    explicit = _normalise_keys(storage_options or {})
    if loc.kind in _OTHER_ENV:
        variables = {key: os.environ[var] for var, key in _OTHER_ENV[loc.kind] if os.environ.get(var)}
        return {**variables, **explicit}
    if loc.kind != "s3":
        return explicit
    env: dict[str, str] = {}
    for var, key in _S3_ENV:
        if os.environ.get(var) and key not in env:
            env[key] = os.environ[var]
    profile = explicit.get("aws_profile") or env.get("aws_profile")
    merged = {**(_profile_settings(profile) if profile else {}), **env, **explicit}
    if merged.get("aws_endpoint", "").startswith("http://"):
        merged.setdefault("aws_allow_http", "true")  # a user who names an http endpoint means it
    return merged


def int_option(options: dict[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise InvalidConfigError(f"storage option {key}={raw!r} is not an integer; give e.g. {key}={default}") \
            from None


def library_options(options: dict[str, str]) -> dict[str, str]:
    """The options a storage library understands (pyhudi's own and the profile name removed)."""
    return {k: v for k, v in options.items() if not k.startswith("pyhudi.") and k != "aws_profile"}


def endpoint_parts(endpoint: str) -> tuple[str, str]:
    """(scheme, host[:port]) of an endpoint URL, as pyarrow's S3FileSystem wants them."""
    url = urllib.parse.urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    return url.scheme, url.netloc + url.path.rstrip("/")
