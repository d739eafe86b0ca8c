#!/usr/bin/env bash
# Shared set-up for scripts/demo.sh and scripts/test.sh: Java check, Python check, .venv, install.
# Sourced, not executed. Idempotent: re-installs only when pyproject.toml changed.
# The extras: `ensure_venv "spark,plot,test"` for the tests (Spark, PNG plots, pytest, hudi-rs, the local
# S3/Glue/Azure servers); `ensure_venv ""` is the base install, all the demo's in-process main job needs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"

java_bin() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then echo "$JAVA_HOME/bin/java"; return; fi
  command -v java || true
}

check_java() {
  local java version major
  java="$(java_bin)"
  if [ -z "$java" ]; then
    echo "pyhudi needs Java 17 or newer (PySpark 4 runs on the JVM), and no 'java' was found." >&2
    echo "Install one, e.g. 'sudo apt-get install -y openjdk-17-jre-headless' (Debian/Ubuntu)," >&2
    echo "'brew install openjdk@17' (macOS) or from https://adoptium.net, then re-run this command." >&2
    exit 1
  fi
  version="$("$java" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9.]*\).*/\1/p' | head -1)"
  major="${version%%.*}"
  if [ "$major" = "1" ]; then major="$(echo "$version" | cut -d. -f2)"; fi
  if [ -z "$major" ] || [ "$major" -lt 17 ]; then
    echo "pyhudi needs Java 17 or newer; found '${version:-unknown}' at $java." >&2
    echo "Install Java 17+ (e.g. 'sudo apt-get install -y openjdk-17-jre-headless') and put it on PATH or set JAVA_HOME." >&2
    exit 1
  fi
}

find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3.10 python3; do
    [ -z "$candidate" ] && continue
    if command -v "$candidate" >/dev/null 2>&1 && \
       "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
      command -v "$candidate"; return
    fi
  done
  echo "pyhudi needs Python 3.10 or newer; none was found (set PYTHON=/path/to/python3.x)." >&2
  exit 1
}

ensure_venv() {
  local extras="$1" stamp target
  if [ ! -x "$VENV/bin/python" ]; then
    echo "[pyhudi] creating $VENV" >&2
    "$(find_python)" -m venv "$VENV"
  fi
  stamp="$VENV/.installed-${extras//,/-}"
  target="$ROOT${extras:+[$extras]}"
  # setup.py and pyhudi/_native.c: the optional compiled kernel is built by the install, not on import
  if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ] || [ "$ROOT/setup.py" -nt "$stamp" ] \
     || [ "$ROOT/pyhudi/_native.c" -nt "$stamp" ]; then
    echo "[pyhudi] installing pyhudi${extras:+[$extras]} and its dependencies into .venv${extras:+ (first run downloads PySpark, ~400 MB)}" >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$target"
    touch "$stamp"
  fi
  if [[ ",$extras," == *",test,"* ]]; then ensure_azurite; fi
  # Spark's Python workers must be this interpreter, activated venv or not.
  export PYSPARK_PYTHON="$VENV/bin/python"
  export PYSPARK_DRIVER_PYTHON="$VENV/bin/python"
  export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
}

# The Azure tests' local Blob server (Azurite, an npm package) in .cache/azurite (git-ignored), once per
# version; without npm the Azure tests skip and say what is missing (tests/support/azure_server.py).
AZURITE_VERSION="3.35.0"
ensure_azurite() {
  local dir="$ROOT/.cache/azurite" stamp
  stamp="$dir/.installed-$AZURITE_VERSION"
  if [ -f "$stamp" ] && [ -x "$dir/node_modules/.bin/azurite-blob" ]; then return 0; fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "[pyhudi] npm not found: the Azure Blob tests (Azurite) will be skipped; install Node.js 18+ and npm to run them" >&2
    return 0
  fi
  echo "[pyhudi] installing Azurite $AZURITE_VERSION into .cache/azurite (the Azure tests' local server)" >&2
  mkdir -p "$dir"
  if npm install --prefix "$dir" --no-audit --no-fund --silent "azurite@$AZURITE_VERSION" >&2; then
    touch "$stamp"
  else
    echo "[pyhudi] installing Azurite failed: the Azure Blob tests will be skipped" >&2
  fi
}
