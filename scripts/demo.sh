#!/usr/bin/env bash
# Set everything up, then run the main job: small batches ingested with auto-sizing, then a file-size summary.
# Extra arguments go to `pyhudi demo` (e.g. --batches 40 --path /tmp/trips).
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
check_java
ensure_venv "spark,plot,test"
cd "$ROOT"
exec "$VENV/bin/pyhudi" demo "$@"
