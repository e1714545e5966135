"""`python -m tests.bench NAME [--quick] [--size N] [--runs N] [--seconds N]`: see runner.py."""

from __future__ import annotations

import sys

from tests.bench.harness import django_setup
from tests.bench.runner import main

if __name__ == "__main__":
    django_setup()
    sys.exit(main(sys.argv[1:]))
