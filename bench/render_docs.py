"""Regenerate the sections of docs/benchmarks.md from bench/results/<benchmark>-latest.json.

    .venv/bin/python bench/render_docs.py

Each benchmark module exposes NAME, TITLE and render_markdown(results); the benchmarks call
common.update_docs_section themselves at the end of a run, so this is only needed after editing a
renderer or restoring a results file. The targets table (bench/targets.py) is rebuilt last.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import targets  # noqa: E402

BENCHMARKS = ["small_batches", "large_load", "mor_vs_cow", "clustering", "streaming_services", "arrow_engine", "scale",
              "scale_spark", "object_store", "stream_grid"]


def main() -> int:
    rendered = 0
    for module_name in BENCHMARKS:
        module = importlib.import_module(module_name)
        results = common.load_latest(module.NAME)
        if results is None:
            print(f"{module.NAME}: no bench/results/{module.NAME}-latest.json yet; run bench/{module_name}.py")
            continue
        common.update_docs_section(module.TITLE, module.render_markdown(results))
        print(f"{module.NAME}: section '{module.TITLE}' refreshed from {module.NAME}-latest.json")
        rendered += 1
    targets.refresh_docs()
    print(f"{common.DOCS_FILE.relative_to(common.REPO_DIR)}: {rendered} section(s) rendered, and the targets table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
