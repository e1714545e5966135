from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memory.retrieval.outline.languages import LANGUAGES
from memory.retrieval.outline.model import OutlineError
from memory.retrieval.outline.outline import smart_outline
from memory.retrieval.outline.parse import outline_source
from memory.retrieval.outline.symbols import smart_search
from memory.retrieval.outline.unfold import smart_unfold
from tests.factories import SessionFactory

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
    assert unfolded.source == "\n".join(
        lines[unfolded.symbol.start_line - 1 : unfolded.symbol.end_line]
    )
    _golden(f"{name}.unfold.txt", unfolded.render())


@pytest.mark.parametrize("name", sorted(CASES))
def test_outline_is_much_smaller_than_the_file(name: str) -> None:
    outline = smart_outline(SAMPLES / name)
    # Small samples carry headers; real files do far better (see `python -m tests.bench outline`).
    assert outline.tokens * 1.4 < outline.source_tokens


def test_python_details(tmp_path: Path) -> None:
    outline = smart_outline(SAMPLES / "inventory.py")
    names = {s.qualified_name: s for s in outline.walk()}
    assert names["Warehouse.reserve"].kind == "method"
    # The icon says def, self is implied and long defaults are elided: none of it costs tokens.
    assert (
        names["Warehouse.reserve"].signature
        == "reserve(sku: str, quantity: int, *, ttl: timedelta=…) -> Reservation"
    )
    assert (
        names["refresh_forever"].signature == "async refresh_forever(warehouse: Warehouse) -> None"
    )
    assert names["Warehouse.reserve"].doc == "Hold stock for a checkout; raises OutOfStock."
    assert names["total_available.one"].kind == "function"
    # Helpers inside a function are counted, not listed; unfold still finds them.
    assert (
        "\ntotal_available(warehouses: list[Warehouse], sku: str) -> int L64-68 (+1 nested)\n"
        in outline.render()
    )
    assert smart_unfold(SAMPLES / "inventory.py", "total_available.one").symbol.start_line == 65
    # Decorators belong to the symbol's range.
    assert (names["Reservation"].start_line, names["Reservation.expired"].start_line) == (16, 22)
    assert outline.imports == ["__future__", "dataclasses", "collections", "datetime"]


def test_unfold_accepts_short_and_separator_variants() -> None:
    assert (
        smart_unfold(SAMPLES / "inventory.py", "reserve").symbol.qualified_name
        == "Warehouse.reserve"
    )
    assert (
        smart_unfold(SAMPLES / "cache.go", ["(c", "*Cache)", "Get"][-1]).symbol.qualified_name
        == "Cache.Get"
    )
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
    path.write_text(
        "def ok(a):\n    return a\n\ndef broken(:\n    pass\n\nclass Fine:\n    def m(self): ...\n"
    )
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
    assert [(m.path, m.symbol.qualified_name) for m in matches][:1] == [
        ("src/inventory.py", "total_available")
    ]
    assert all(not m.path.startswith(("generated", "node_modules")) for m in matches)
    assert [m.symbol.qualified_name for m in smart_search("Cache.Get", tmp_path)][0] == "Cache.Get"
    assert smart_search("zzqx", tmp_path) == []
    assert smart_search("reserve", tmp_path, file_pattern=".go") == []


def test_outline_speed_is_reasonable() -> None:
    source = (SAMPLES / "inventory.py").read_bytes() * 40  # ~3,000 lines
    started = time.perf_counter()
    outline_source(source, language="python")
    assert time.perf_counter() - started < 2.0


def test_outline_text_is_frugal_but_complete() -> None:
    source = b'''"""Module doc."""
import os
from a import b


class A:
    """A thing that does a great many things, described at some length here."""

    def __init__(self, x):
        self.x = x

    def _helper(self, a, b=1):
        """Helper docs never show."""
        return a

    def __repr__(self):
        return 'A'

    def public(self, y: int) -> int:
        return y


def top(flag=False):
    """Top-level docs show a few words."""
'''
    outline = outline_source(source, language="python", path="pkg/a.py")
    text = outline.render()
    # Every symbol, its parameters (self implied) and its line range; nesting by indent.
    assert text.splitlines() == [
        "24 lines, ~109 tokens, 2 imports",
        "◆ A L6-20 — A thing that does a great many things…",
        " __init__(x) L9-10",
        " _helper(a, b=1) L12-14",
        " __repr__() L16-17",
        " public(y: int) -> int L19-20",
        "top(flag=False) L23-24 — Top-level docs show a few words.",
    ]
    # What the text leaves out is still in the data the API returns.
    body = outline.as_dict()
    assert body["path"] == "pkg/a.py" and body["imports"] == ["os", "a"]
    assert body["symbols"][0]["children"][1]["doc"] == "Helper docs never show."
    assert body["symbols"][0]["doc"].startswith("A thing that does a great many things, described")


# --- the HTTP endpoints: they read local files, so they refuse what they should not read ---


@pytest.mark.django_db
def test_outline_endpoint_reads_an_absolute_path(client) -> None:
    SessionFactory(root=SAMPLES, project="samples")  # a recorded project root
    response = client.get("/api/outline", {"path": str(SAMPLES / "cache.go")})
    assert response.status_code == 200
    body = response.json()
    assert (
        body["language"] == "go"
        and "Cache.Get"
        in [c["qualified_name"] for s in body["symbols"] for c in [s, *s["children"]]]
        or "func (c *Cache[V]) Get" in body["text"]
    )
    assert body["tokens"] < body["source_tokens"]


@pytest.mark.django_db
def test_outline_endpoints_refuse_what_they_should_not_read(
    client, tmp_path: Path, data_dir: Path
) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "ok.py").write_text("def ok():\n    return 1\n")
    (tmp_path / "secret.py").write_text("def secret():\n    return 1\n")
    (tmp_path / "proj" / "link.py").symlink_to(tmp_path / "secret.py")
    (data_dir / "cmem.py").write_text("def inside_data_dir(): pass\n")
    root = str(tmp_path / "proj")
    SessionFactory(root=tmp_path / "proj", project="proj")  # a recorded project root
    assert client.get("/api/outline", {"path": "ok.py", "root": root}).status_code == 200
    relative = client.get("/api/outline", {"path": "ok.py"})
    assert relative.status_code == 400 and "relative" in relative.json()["error"]
    assert client.get("/api/outline", {"path": "../secret.py", "root": root}).status_code == 403
    assert client.get("/api/outline", {"path": "link.py", "root": root}).status_code == 403
    assert client.get("/api/outline", {"path": str(data_dir / "cmem.py")}).status_code == 403
    folder = client.get("/api/outline", {"path": root})
    assert folder.status_code == 422 and "not a regular file" in folder.json()["error"]
    assert (
        client.get("/api/outline", {"path": str(tmp_path / "proj" / "absent.py")}).status_code
        == 422
    )
    missing = client.get("/api/outline/unfold", {"path": "ok.py", "root": root, "symbol": "nope"})
    assert missing.status_code == 422 and "no symbol 'nope'" in missing.json()["error"]
    unfold = client.get(
        "/api/outline/unfold", {"path": "ok.py", "root": root, "symbol": "ok"}
    ).json()
    assert unfold["source"] == "def ok():\n    return 1" and unfold["start_line"] == 1


@pytest.mark.django_db
def test_symbol_search_endpoint(client) -> None:
    SessionFactory(root=SAMPLES, project="samples")  # a recorded project root
    body = client.get("/api/outline/search", {"q": "rate limiter", "root": str(SAMPLES)}).json()
    assert body["matches"][0]["symbol"] == "Throttle.RateLimiter"
    assert (
        client.get("/api/outline/search", {"q": "x", "root": str(SAMPLES / "cache.go")}).status_code
        == 422
    )


@pytest.mark.django_db
def test_a_shared_worker_serves_no_files(monkeypatch: pytest.MonkeyPatch) -> None:
    # Over HTTP a shared worker first demands a token (team mode); even with one, no files.
    from memory.api.retrieval import _local_path

    SessionFactory(root=SAMPLES, project="samples")  # a recorded project root
    assert _local_path(str(SAMPLES / "cache.go"), None) == SAMPLES / "cache.go"
    monkeypatch.setenv("CLAUDE_MEM_WORKER_HOST", "0.0.0.0")
    with pytest.raises(PermissionError, match="shared worker"):
        _local_path(str(SAMPLES / "cache.go"), None)


def test_smart_search_sees_edits_between_calls(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text("def alpha_widget():\n    pass\n")
    assert [m.symbol.name for m in smart_search("widget", tmp_path)] == ["alpha_widget"]
    path.write_text("def alpha_widget():\n    pass\n\n\ndef beta_widget():\n    pass\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert [m.symbol.name for m in smart_search("widget", tmp_path)] == [
        "alpha_widget",
        "beta_widget",
    ]
