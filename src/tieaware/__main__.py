"""``python -m tieaware``: the ``tieaware`` console script (`tieaware.cli.main`)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
