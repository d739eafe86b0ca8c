#!/usr/bin/env bash
# Set everything up, then run the main job: small batches ingested with auto-sizing, then a file-size summary.
# Extra arguments go to `pyhudi demo` (e.g. --batches 40 --path /tmp/trips). The job runs in-process, so only
# pyhudi's base install is needed; `--master local[2]` (Spark) adds the spark extra and needs Java 17+.
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
extras=""
for arg in "$@"; do
  if [[ "$arg" == --master* ]]; then extras="spark"; fi
done
if [ -n "$extras" ]; then check_java; fi
ensure_venv "$extras"
cd "$ROOT"
exec "$VENV/bin/pyhudi" demo "$@"
