"""Shared by the benchmark scripts: the machine they ran on, and their tables as markdown.

Each script's ``--markdown PATH`` calls `write_section`, which replaces that script's section of
PATH (between ``<!-- begin NAME -->`` and ``<!-- end NAME -->``) or appends one, so
docs/benchmarks.md holds the latest table of every script and nothing typed by hand.
"""
from __future__ import annotations

import os
import platform
import re
import shlex
import sys
from importlib import metadata
from pathlib import Path

LIBRARIES = ("tieaware", "numpy", "numba", "pandas", "ranx", "pytrec-eval-terrier", "torch", "transformers")


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux, else what `platform` knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def cores() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def versions(names=LIBRARIES) -> dict[str, str]:
    """Installed version of each named distribution; those not installed are left out."""
    found = {}
    for name in names:
        if name == "tieaware":  # the code on the path, which may be a checkout rather than the installed one
            import tieaware

            found[name] = tieaware.__version__
            continue
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def gpu_model() -> str | None:
    """The CUDA device's name and CUDA version, when the script imported torch and a GPU is visible."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return f"{torch.cuda.get_device_name()} (CUDA {torch.version.cuda})"


def machine(names=LIBRARIES) -> str:
    """One line: CPU model, cores, the GPU if one was used, OS, Python and library versions."""
    libraries = ", ".join(f"{name} {version}" for name, version in versions(names).items())
    gpu = gpu_model()
    return (f"{cpu_model()}, {cores()} cores, {f'GPU {gpu}, ' if gpu else ''}{platform.system()} "
            f"{platform.machine()}, Python {platform.python_version()}; {libraries}")


def table(headers: list[str], rows: list[list]) -> str:
    """A markdown table; floats as they are formatted by the caller (pass strings)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def command() -> str:
    """The command line that ran this script, as it can be typed again (without --markdown)."""
    args, skip = [], False
    for arg in sys.argv[1:]:
        if skip:
            skip = False
            continue
        if arg == "--markdown":
            skip = True
            continue
        if arg.startswith("--markdown="):
            continue
        if Path(arg).expanduser().is_absolute() and args and args[-1].startswith("--"):
            arg = args[-1].lstrip("-").replace("-", "_").upper()  # a path of this machine: its placeholder
        args.append(arg)
    script = Path(sys.argv[0])
    try:
        script = script.resolve().relative_to(Path.cwd())
    except ValueError:
        script = Path("benchmarks") / script.name
    return shlex.join(["python", str(script), *args])


def section(name: str, title: str, body: str, names=LIBRARIES) -> str:
    """A benchmark's section: title, the command that reproduces it, the machine, then body."""
    load = f" Load average when written: {os.getloadavg()[0]:.1f}." if hasattr(os, "getloadavg") else ""
    return (f"<!-- begin {name} -->\n## {title}\n\n"
            f"`{command()}`\n\n"
            f"Machine: {machine(names)}.{load}\n\n"
            f"{body.strip()}\n<!-- end {name} -->\n")


def write_section(path: str | Path, name: str, title: str, body: str, names=LIBRARIES) -> None:
    """Replace the section `name` of the markdown file at path with a new one, or append it."""
    path = Path(path)
    new = section(name, title, body, names)
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"<!-- begin {re.escape(name)} -->\n.*?<!-- end {re.escape(name)} -->\n", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: new, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + new
    path.write_text(text, encoding="utf-8")
    print(f"wrote the {name} table to {path}")
