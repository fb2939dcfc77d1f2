"""``python -m tieaware``: the ``tieaware`` console script (`tieaware.cli.run`)."""
import sys

from .cli import run

if __name__ == "__main__":
    sys.exit(run())
