"""scripts/commit-msg accepts well-formed commit messages and rejects the others."""
import subprocess
import sys
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[1] / "scripts" / "commit-msg"
GOOD = [
    "Add a commit-msg check\n",
    "Add a commit-msg check\n\nThe body says why, with figures: 0.37 s -> 0.35 s.\n",
    "x" * 72 + "\n",
    "# a comment git drops\nFix the reader\n\n# Please enter the commit message\n",
    "Merge branch 'docs' into main with a subject far longer than seventy-two characters in all.\n",
    "fixup! Add a commit-msg check with a subject that is too long to pass the hook on its own.\n",
    "Add a check\n\nbody\n# ------------------------ >8 ------------------------\ndiff --git a/x b/x\n",
]
BAD = [
    ("x" * 73 + "\n", "73 characters"),
    ("Add a commit-msg check.\n", "ends with a period"),
    ("Add a commit-msg check\nthe body starts at once\n", "second line is not blank"),
    ("\n# only comments\n", "empty"),
]


def _run(tmp_path, message):
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message, encoding="utf-8")
    return subprocess.run([sys.executable, str(HOOK), str(path)], capture_output=True, text=True)


@pytest.mark.parametrize("message", GOOD)
def test_good_messages_pass(tmp_path, message):
    done = _run(tmp_path, message)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("message", "reason"), BAD)
def test_bad_messages_fail_saying_why(tmp_path, message, reason):
    done = _run(tmp_path, message)
    assert done.returncode == 1 and reason in done.stderr


def test_git_runs_it_as_a_hook(tmp_path):
    def git(*args, check=True):
        return subprocess.run(["git", "-C", str(tmp_path), "-c", f"core.hooksPath={HOOK.parent}",
                               "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                              capture_output=True, text=True, check=check)

    git("init", "-q")
    (tmp_path / "f").write_text("x")
    git("add", "f")
    refused = git("commit", "-q", "-m", "Add a file.", check=False)
    assert refused.returncode != 0 and "period" in refused.stderr
    git("commit", "-q", "-m", "Add a file")
    assert git("log", "--format=%s").stdout.strip() == "Add a file"
