"""Where the real third-party data lives: ``shared/`` beside the repository (CI's layout)."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BLINDSPOT_SHARED", REPO.parent / "shared"))
VISIT_BENCH = SHARED / "fixtures" / "visit-bench"


def needs(path: Path):
    """Skip when the data is absent on a developer's machine; under CI its absence fails."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return pytest.mark.skipif(False, reason="")
    return pytest.mark.skipif(not path.exists(), reason=f"{path} is not present")
