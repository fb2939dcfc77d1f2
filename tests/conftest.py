import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def data_dir():
    if not DATA.is_dir():
        pytest.fail(f"shared test data not found at {DATA} (the repo expects ../shared/data beside it)")
    return DATA
