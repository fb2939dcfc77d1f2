#!/usr/bin/env bash
# Set up .venv (core only) and evaluate the bf16 Cranfield run tie-aware.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q -e .
.venv/bin/python examples/quickstart.py "$@"
