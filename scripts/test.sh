#!/usr/bin/env bash
# Set everything up, then run the whole test suite. Extra arguments go to pytest (e.g. -k sizing, -x).
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
check_java
ensure_venv "spark,plot,test"
cd "$ROOT"
exec "$VENV/bin/python" -m pytest "$@"
