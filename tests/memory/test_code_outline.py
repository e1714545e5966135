from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memory.code_outline import LANGUAGES, OutlineError, outline_source, smart_outline, smart_search, smart_unfold

SAMPLES = Path(__file__).parent / "outline_samples"
GOLDEN = SAMPLES / "golden"
UPDATE = os.environ.get("CMEM_UPDATE_GOLDEN") == "1"

# One realistic file per grammar, and a nested symbol to unfold from it.
CASES = {
    "inventory.py": "Warehouse.Audit.report",
    "cart.js": "Cart.total",
    "router.ts": "Router.handle",
    "TodoList.tsx": "TodoErrorBoundary.render",
    "cache.go": "Cache.Get",
    "tokenizer.rs": "Tokenizer.number",
    "LibraryService.java": "LibraryService.Loan.overdue",
    "rate_limiter.rb": "Throttle::RateLimiter#refill",
    "ring_buffer.c": "rb_pop",
    "matrix.cpp": "Matrix::operator*",
    "OrderProcessor.cs": "OrderProcessor.SubmitAsync",
    "UserRepository.php": "UserRepository::find",
    "deploy.sh": "switch_current",
}


def _golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual + "\n")
    assert actual + "\n" == path.read_text()


def test_every_grammar_has_a_sample() -> None:
    covered = {smart_outline(SAMPLES / name).language for name in CASES}
    assert covered == set(LANGUAGES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_outline_matches_golden(name: str) -> None:
    outline = smart_outline(SAMPLES / name, display=name)
    assert not outline.has_errors
    _golden(f"{name}.outline.txt", outline.render())


@pytest.mark.parametrize("name", sorted(CASES))
def test_unfold_matches_golden(name: str) -> None:
    unfolded = smart_unfold(SAMPLES / name, CASES[name], display=name)
    lines = (SAMPLES / name).read_text().splitlines()
    # The body is the file's own text at the reported lines, byte for byte.
    assert unfolded.source == "\n".join(lines[unfolded.symbol.start_line - 1 : unfolded.symbol.end_line])
    _golden(f"{name}.unfold.txt", unfolded.render())


@pytest.mark.parametrize("name", sorted(CASES))
def test_outline_is_much_smaller_than_the_file(name: str) -> None:
    outline = smart_outline(SAMPLES / name)
    # Small samples carry headers; real files do far better (see `cmem bench outline`).
    assert outline.tokens * 1.4 < outline.source_tokens


def test_python_details(tmp_path: Path) -> None:
    outline = smart_outline(SAMPLES / "inventory.py")
    names = {s.qualified_name: s for s in outline.walk()}
    assert names["Warehouse.reserve"].kind == "method"
    assert names["Warehouse.reserve"].signature == "def reserve(self, sku: str, quantity: int, *, ttl: timedelta = RESERVATION_TTL) -> Reservation"
    assert names["Warehouse.reserve"].doc == "Hold stock for a checkout; raises OutOfStock."
    assert names["total_available.one"].kind == "function"
    # Decorators belong to the symbol's range.
    assert (names["Reservation"].start_line, names["Reservation.expired"].start_line) == (16, 22)
    assert outline.imports == ["__future__", "dataclasses", "collections", "datetime"]


def test_unfold_accepts_short_and_separator_variants() -> None:
    assert smart_unfold(SAMPLES / "inventory.py", "reserve").symbol.qualified_name == "Warehouse.reserve"
    assert smart_unfold(SAMPLES / "cache.go", "(c *Cache) Get".split()[-1]).symbol.qualified_name == "Cache.Get"
    assert smart_unfold(SAMPLES / "matrix.cpp", "linalg::Matrix::identity").symbol.start_line == 17


def test_unknown_symbol_names_the_candidates() -> None:
    with pytest.raises(OutlineError, match=r"no symbol 'Warehouse.restock'.*Warehouse"):
        smart_unfold(SAMPLES / "inventory.py", "Warehouse.restock")


def test_unsupported_binary_missing_and_huge_files_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(OutlineError, match="no grammar for '.txt'"):
        smart_outline(tmp_path / "notes.txt")
    (tmp_path / "blob.py").write_bytes(b"\x00\x01\x02def x(): pass")
    with pytest.raises(OutlineError, match="binary"):
        smart_outline(tmp_path / "blob.py")
    with pytest.raises(OutlineError, match="no such file"):
        smart_outline(tmp_path / "absent.py")
    (tmp_path / "folder.py").mkdir()
    with pytest.raises(OutlineError, match="not a regular file"):
        smart_outline(tmp_path / "folder.py")
    (tmp_path / "big.py").write_text("x = 1\n" * 1000)
    with pytest.raises(OutlineError, match="over the 100-byte limit"):
        smart_outline(tmp_path / "big.py", max_bytes=100)


def test_broken_source_still_outlines_what_parses(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def ok(a):\n    return a\n\ndef broken(:\n    pass\n\nclass Fine:\n    def m(self): ...\n")
    outline = smart_outline(path)
    assert outline.has_errors
    assert "ok" in [s.name for s in outline.walk()]
    assert "⚠" in outline.render()


def test_empty_and_non_utf8_files(tmp_path: Path) -> None:
    assert outline_source(b"", language="python").render().endswith("(no classes or functions)")
    outline = outline_source("def café(): pass\n".encode("latin-1"), language="python")
    assert len(outline.symbols) == 1


def test_smart_search_ranks_names_and_respects_gitignore(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "cache.go").write_text((SAMPLES / "cache.go").read_text())
    (tmp_path / "src" / "inventory.py").write_text((SAMPLES / "inventory.py").read_text())
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "copy.py").write_text((SAMPLES / "inventory.py").read_text())
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "dep.py").write_text("def total_available(): pass\n")
    (tmp_path / ".gitignore").write_text("generated/\n")
    matches = smart_search("total available", tmp_path)
    assert [(m.path, m.symbol.qualified_name) for m in matches][:1] == [("src/inventory.py", "total_available")]
    assert all(not m.path.startswith(("generated", "node_modules")) for m in matches)
    assert [m.symbol.qualified_name for m in smart_search("Cache.Get", tmp_path)][0] == "Cache.Get"
    assert smart_search("zzqx", tmp_path) == []
    assert smart_search("reserve", tmp_path, file_pattern=".go") == []


def test_outline_speed_is_reasonable() -> None:
    source = (SAMPLES / "inventory.py").read_bytes() * 40  # ~3,000 lines
    started = time.perf_counter()
    outline_source(source, language="python")
    assert time.perf_counter() - started < 2.0
