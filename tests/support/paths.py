"""Paths every test tree uses: the checkout, the recorded agent fixtures, the `cmem` script."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
FIXTURES = REPO / "tests" / "fixtures"
CLAUDE_FIXTURES = FIXTURES / "claude-code-2.1.332"
CODEX_FIXTURES = FIXTURES / "codex-0.171.0"
CMEM = str(Path(sys.executable).with_name("cmem"))
