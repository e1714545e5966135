"""Paths every test tree uses: the checkout, the recorded agent fixtures, the `cmem` script,
uv."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
FIXTURES = REPO / "tests" / "fixtures"
CLAUDE_FIXTURES = FIXTURES / "claude-code-2.1.332"
CODEX_FIXTURES = FIXTURES / "codex-0.171.0"
CMEM = str(Path(sys.executable).with_name("cmem"))


def uv_path() -> str:
    """uv from PATH, or the one `make` bootstrapped into the checkout (.tools/uv)."""
    found = shutil.which("uv") or str(REPO / ".tools" / "uv" / "bin" / "uv")
    assert os.access(found, os.X_OK), "uv is missing: `make setup` bootstraps it into .tools/uv"
    return found
