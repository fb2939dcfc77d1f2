"""The README shows what the code prints."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_demo_output_in_readme_is_what_the_demo_prints():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"`scripts/demo.sh` prints.*?\n```\n(.*?)```", readme, re.S)
    assert shown, "README lost its demo output block"
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = [line.rstrip() for line in done.stdout.splitlines()]
    block = [line.rstrip() for line in shown.group(1).splitlines()]
    start = printed.index(block[0])
    assert printed[start:start + len(block)] == block
