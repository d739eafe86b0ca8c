"""The Glue sync's options (Hudi's GlueCatalogSyncClientConfig and the HoodieAWSConfig keys the Glue client
reads), parsed once into `GlueSyncConfig`, and the boto3 session/client built from them.

Every key under `hoodie.datasource.meta.sync.glue.` is either honoured or refused by name: a key pyhudi does
not know is refused too, since ignoring it (a typo, or a newer Hudi key) would register something other than
what the user asked for. Credentials follow HoodieAWSCredentialsProviderFactory: an assumed role
(`hoodie.aws.role.arn`) first, then `hoodie.aws.access.key`/`secret.key`/`session.token`, then boto3's
default chain (environment, profile, container/instance roles)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyhudi.errors import InvalidConfigError, MetaSyncError

GLUE_PREFIX = "hoodie.datasource.meta.sync.glue."
GLUE_EXTRA = "pip install 'pyhudi[glue]'"

SKIP_TABLE_ARCHIVE = GLUE_PREFIX + "skip_table_archive"
METADATA_FILE_LISTING = GLUE_PREFIX + "metadata_file_listing"
ALL_PARTITIONS_READ_PARALLELISM = GLUE_PREFIX + "all_partitions_read_parallelism"
CHANGED_PARTITIONS_READ_PARALLELISM = GLUE_PREFIX + "changed_partitions_read_parallelism"
PARTITION_CHANGE_PARALLELISM = GLUE_PREFIX + "partition_change_parallelism"
PARTITION_INDEX_ENABLE = GLUE_PREFIX + "partition_index_fields.enable"
PARTITION_INDEX_FIELDS = GLUE_PREFIX + "partition_index_fields"
RECREATE_TABLE_ON_ERROR = GLUE_PREFIX + "recreate_table_on_error"
CATALOG_ID = GLUE_PREFIX + "catalogId"
DATABASE_NAME = GLUE_PREFIX + "database_name"
TABLE_NAME = GLUE_PREFIX + "table_name"
RESOURCE_TAGS = GLUE_PREFIX + "resource_tags"

AWS_ACCESS_KEY = "hoodie.aws.access.key"
AWS_SECRET_KEY = "hoodie.aws.secret.key"
AWS_SESSION_TOKEN = "hoodie.aws.session.token"
AWS_ROLE_ARN = "hoodie.aws.role.arn"
AWS_ROLE_SESSION_NAME = "hoodie.aws.role.session.name"
AWS_ROLE_EXTERNAL_ID = "hoodie.aws.role.external.id"
AWS_GLUE_ENDPOINT = "hoodie.aws.glue.endpoint"
AWS_GLUE_REGION = "hoodie.aws.glue.region"
AWS_STS_ENDPOINT = "hoodie.aws.sts.endpoint"
AWS_STS_REGION = "hoodie.aws.sts.region"

# Keys under the Glue prefix that pyhudi reads (the rest of the prefix is refused by name).
KNOWN_GLUE_KEYS = frozenset({
    SKIP_TABLE_ARCHIVE, METADATA_FILE_LISTING, ALL_PARTITIONS_READ_PARALLELISM, CHANGED_PARTITIONS_READ_PARALLELISM,
    PARTITION_CHANGE_PARALLELISM, PARTITION_INDEX_ENABLE, PARTITION_INDEX_FIELDS, RECREATE_TABLE_ON_ERROR,
    CATALOG_ID, DATABASE_NAME, TABLE_NAME, RESOURCE_TAGS,
})

# Hudi's AWS SDK v2 client retries 3 times (4 attempts) by default; botocore's standard mode backs off
# exponentially with jitter and retries Glue's ThrottlingException. AWS_RETRY_MODE / AWS_MAX_ATTEMPTS win.
DEFAULT_RETRIES = {"mode": "standard", "max_attempts": 4}


@dataclass(frozen=True)
class GlueSyncConfig:
    """The Glue client's options, with Hudi's defaults. `None` means "not set": boto3's default chain
    decides (region, endpoint, credentials) or Glue does (the catalog is the caller's account)."""

    region: str | None = None
    endpoint: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    role_arn: str | None = None
    role_session_name: str = "hoodie"
    role_external_id: str | None = None
    sts_endpoint: str | None = None
    sts_region: str | None = None
    catalog_id: str | None = None
    skip_table_archive: bool = True
    metadata_file_listing: bool = False
    partition_change_parallelism: int = 1
    all_partitions_read_parallelism: int = 1
    changed_partitions_read_parallelism: int = 1
    recreate_table_on_error: bool = False
    database_name: str | None = None
    table_name: str | None = None
    resource_tags: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> GlueSyncConfig:
        """Parse `options` (Hudi's keys); refuse unknown Glue keys and what pyhudi cannot honour."""
        _refuse(options)
        get = options.get
        return cls(
            region=_text(get(AWS_GLUE_REGION)), endpoint=_text(get(AWS_GLUE_ENDPOINT)),
            access_key=_text(get(AWS_ACCESS_KEY)), secret_key=_text(get(AWS_SECRET_KEY)),
            session_token=_text(get(AWS_SESSION_TOKEN)), role_arn=_text(get(AWS_ROLE_ARN)),
            role_session_name=_text(get(AWS_ROLE_SESSION_NAME)) or "hoodie",
            role_external_id=_text(get(AWS_ROLE_EXTERNAL_ID)),
            sts_endpoint=_text(get(AWS_STS_ENDPOINT)), sts_region=_text(get(AWS_STS_REGION)),
            catalog_id=_text(get(CATALOG_ID)),
            skip_table_archive=_bool(options, SKIP_TABLE_ARCHIVE, True),
            metadata_file_listing=_bool(options, METADATA_FILE_LISTING, False),
            partition_change_parallelism=_int(options, PARTITION_CHANGE_PARALLELISM, 1, 1, None),
            all_partitions_read_parallelism=_int(options, ALL_PARTITIONS_READ_PARALLELISM, 1, 1, 10),
            changed_partitions_read_parallelism=_int(options, CHANGED_PARTITIONS_READ_PARALLELISM, 1, 1, None),
            recreate_table_on_error=_bool(options, RECREATE_TABLE_ON_ERROR, False),
            database_name=_text(get(DATABASE_NAME)), table_name=_text(get(TABLE_NAME)),
            resource_tags=parse_resource_tags(get(RESOURCE_TAGS) or ""),
        )

    @property
    def metadata_listing_flag(self) -> str:
        """The `hudi.metadata-listing-enabled` table property Athena reads, as Hudi writes it (upper case)."""
        return "TRUE" if self.metadata_file_listing else "FALSE"


def _refuse(options: Mapping[str, str]) -> None:
    unknown = sorted(k for k in options if k.startswith(GLUE_PREFIX) and k not in KNOWN_GLUE_KEYS)
    if unknown:
        raise InvalidConfigError(f"unknown Glue sync option(s) {', '.join(unknown)}: pyhudi knows "
                                 f"{', '.join(sorted(KNOWN_GLUE_KEYS))}")
    if _bool(options, RECREATE_TABLE_ON_ERROR, False):
        raise InvalidConfigError(f"{RECREATE_TABLE_ON_ERROR}=true is not supported: pyhudi's sync does not drop and "
                                 "recreate a Glue table whose sync failed; the error is raised (drop the table by "
                                 "hand and sync again)")
    for key, general in ((DATABASE_NAME, "hoodie.datasource.hive_sync.database"),
                         (TABLE_NAME, "hoodie.datasource.hive_sync.table")):
        value = _text(options.get(key))
        if value is not None and value != _text(options.get(general)):
            raise InvalidConfigError(f"{key}={value!r} differs from {general}: pyhudi registers the Glue table "
                                     f"under {general}; set that instead")
    if _bool(options, PARTITION_INDEX_ENABLE, False):
        raise InvalidConfigError(f"{PARTITION_INDEX_ENABLE}=true is not supported: pyhudi's Glue sync does not "
                                 "manage Glue partition indexes (create them with the Glue API or console)")


def _text(value: str | None) -> str | None:
    return value.strip() if value is not None and value.strip() else None


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None or not str(raw).strip():
        return default
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise InvalidConfigError(f"{key} must be true or false, not {raw!r}")
    return value == "true"


def _int(options: Mapping[str, str], key: str, default: int, low: int, high: int | None) -> int:
    raw = options.get(key)
    if raw is None or not str(raw).strip():
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidConfigError(f"{key} must be an integer, not {raw!r}") from None
    if value < low or (high is not None and value > high):
        bounds = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise InvalidConfigError(f"{key} must be {bounds}, not {value}")
    return value


def parse_resource_tags(raw: str) -> dict[str, str]:
    """`k1:v1,k2:v2` as Hudi's parseResourceTags reads it: pairs without a colon are skipped, keys and values
    trimmed, the first colon splits."""
    tags: dict[str, str] = {}
    for pair in raw.split(","):
        key, sep, value = pair.partition(":")
        if sep:
            tags[key.strip()] = value.strip()
    return tags


def s3a_to_s3(location: str) -> str:
    """Hudi's FSUtils.s3aToS3: Glue (and Athena) get `s3://` where the table was written as `s3a://`."""
    return re.sub(r"(?i)^s3a:", "s3:", location)


def import_boto3() -> Any:
    """boto3, imported lazily: it is the optional `glue` extra."""
    try:
        import boto3
    except ImportError:
        raise MetaSyncError(f"syncing to AWS Glue needs boto3: {GLUE_EXTRA}") from None
    return boto3


def _retries() -> dict[str, Any] | None:
    if os.environ.get("AWS_RETRY_MODE") or os.environ.get("AWS_MAX_ATTEMPTS"):
        return None  # the user's choice, which botocore reads itself
    return dict(DEFAULT_RETRIES)


def build_session(config: GlueSyncConfig) -> Any:
    """A boto3 session with Hudi's credential order: assumed role, then the hoodie.aws.* keys, then the default
    chain. The role is assumed with the other credentials as source, and refreshed before it expires."""
    boto3 = import_boto3()
    static = config.access_key is not None and config.secret_key is not None
    session = boto3.session.Session(
        aws_access_key_id=config.access_key if static else None,
        aws_secret_access_key=config.secret_key if static else None,
        aws_session_token=config.session_token if static else None,
        region_name=config.region)
    if config.role_arn is None:
        return session
    return _assumed_role_session(session, config)


def _assumed_role_session(source: Any, config: GlueSyncConfig) -> Any:
    import boto3
    import botocore.session
    from botocore.credentials import (
        AssumeRoleCredentialFetcher,
        CredentialProvider,
        DeferredRefreshableCredentials,
    )

    def sts_client(service: str, **kwargs: Any) -> Any:
        kwargs.setdefault("region_name", config.sts_region or _region(source, config))
        return source.client(service, endpoint_url=config.sts_endpoint, **kwargs)

    extra = {"RoleSessionName": config.role_session_name}
    if config.role_external_id is not None:
        extra["ExternalId"] = config.role_external_id
    fetcher = AssumeRoleCredentialFetcher(sts_client, source.get_credentials(), config.role_arn, extra_args=extra)

    class AssumedRole(CredentialProvider):  # type: ignore[misc]
        METHOD = CANONICAL_NAME = "hoodie-assume-role"

        def load(self) -> Any:
            return DeferredRefreshableCredentials(refresh_using=fetcher.fetch_credentials, method=self.METHOD)

    core = botocore.session.Session()
    core.get_component("credential_provider").insert_before("env", AssumedRole())
    return boto3.session.Session(botocore_session=core, region_name=config.region or source.region_name)


def build_glue_client(session: Any, config: GlueSyncConfig) -> Any:
    """The Glue client: Hudi's endpoint/region keys, else boto3's (AWS_ENDPOINT_URL_GLUE, AWS_REGION, profile)."""
    from botocore.config import Config

    retries = _retries()
    client_config = Config(retries=retries) if retries is not None else Config()
    return session.client("glue", endpoint_url=config.endpoint, region_name=_region(session, config),
                          config=client_config)


def _region(session: Any, config: GlueSyncConfig) -> str | None:
    """Hudi's key, else boto3's (AWS_DEFAULT_REGION, profile), else AWS_REGION, which the AWS SDK for Java
    behind Hudi reads and botocore does not."""
    return config.region or session.region_name or os.environ.get("AWS_REGION") or None


def build_sts_client(session: Any, config: GlueSyncConfig) -> Any:
    """STS, for the account id of a resource-tag ARN when no catalog id is configured."""
    return session.client("sts", endpoint_url=config.sts_endpoint,
                          region_name=config.sts_region or _region(session, config))
