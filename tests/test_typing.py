"""The package type-checks with mypy --strict (configured in setup.cfg)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_is_mypy_strict_clean() -> None:
    pytest.importorskip("mypy")
    done = subprocess.run([sys.executable, "-m", "mypy"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
