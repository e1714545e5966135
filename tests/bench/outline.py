"""`python -m tests.bench outline`: how much cheaper an outline is than the file, and how fast it is made.

Over real source trees that ship in the venv (Django's package: Python, plus the admin's
JavaScript; `--quick` takes every 10th file): for each file with a grammar, tokens of the
rendered outline against tokens of the whole file (both ~4 characters a token), and the
time to parse and outline it. Prints the median ratio (target ≥ 10×), the 10th percentile
(the least favourable files), the ratio over all bytes, and milliseconds per 1,000 lines.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

from memory.retrieval.outline.model import OutlineError
from memory.retrieval.outline.outline import smart_outline
from memory.retrieval.outline.symbols import source_files


def _trees() -> list[Path]:
    import django

    return [Path(django.__file__).parent]


def run(*, out: Any, options: dict[str, Any]) -> None:
    step = 10 if options.get("quick") else 1
    ratios: list[float] = []
    per_language: dict[str, list[float]] = {}
    outline_tokens = source_tokens = lines = 0
    seconds = cpu_seconds = 0.0
    for root in _trees():
        # source_files skips site-packages by name; walk the package itself.
        files = list(source_files(root, max_files=100_000))[::step]
        for path in files:
            started, started_cpu = time.perf_counter(), time.thread_time()
            try:
                # Shown as the agent names it: relative to the project root.
                outline = smart_outline(path, display=str(path.relative_to(root.parent)))
                text_tokens = outline.tokens
            except OutlineError:
                continue
            seconds += time.perf_counter() - started
            cpu_seconds += time.thread_time() - started_cpu
            if outline.source_tokens < 200:
                continue  # __init__.py stubs: nobody asks for their outline
            ratio = outline.source_tokens / max(1, text_tokens)
            ratios.append(ratio)
            per_language.setdefault(outline.language, []).append(ratio)
            outline_tokens += text_tokens
            source_tokens += outline.source_tokens
            lines += outline.lines
        out.write(f"tree: {root}")
    ratios.sort()
    out.write(
        f"files: {len(ratios)} ({', '.join(f'{lang} {len(v)}' for lang, v in sorted(per_language.items()))}), {lines:,} lines"
    )
    out.write(
        f"outline vs file tokens: median {statistics.median(ratios):.1f}x smaller, 10th percentile {ratios[len(ratios) // 10]:.1f}x, all bytes {source_tokens / max(1, outline_tokens):.1f}x ({outline_tokens:,} vs {source_tokens:,} tokens)"
    )
    for lang, values in sorted(per_language.items()):
        out.write(f"  {lang}: median {statistics.median(values):.1f}x over {len(values)} files")
    per_kline = 1_000_000 / max(1, lines)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    out.write(
        f"outline time per 1,000 lines (read + parse + outline + render): {seconds * per_kline:.1f} ms wall, "
        f"{cpu_seconds * per_kline:.1f} ms CPU (load average {load:.1f} on {os.cpu_count()} CPUs)"
    )
