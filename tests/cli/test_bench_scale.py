"""`cmem bench scale` (tests/bench/scale.py): its smallest matrix runs end to end through the
command, a kept store is reused and brought back to its seed, and an install without the
checkout says where the benchmark runs."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from memory.management.commands import bench


def _results(out: str) -> list[dict]:
    return json.loads(next(line for line in reversed(out.splitlines()) if line.startswith("[{")))


@pytest.mark.slow
def test_cmem_bench_scale_runs_its_smallest_matrix_and_reuses_a_kept_store(capfd, tmp_path) -> None:
    args = ["scale", "--sizes", "300", "--backend", "sqlite", "--runs", "1"]
    call_command("bench", *args, "--keep", str(tmp_path / "keep"))
    out = capfd.readouterr().out
    assert "| observations | 300 |" in out
    (first,) = _results(out)
    assert first["rows"] == 300 and not first.get("reused")
    assert first["keyword_hits"] > 0 and first["http_keyword_p50_ms"] > 0
    assert first["gate_decisions"].get("deny", 0) > 0
    assert first["context_p50_ms"] > 0 and first["ingest1_p50_ms"] > 0
    assert first["ingest16_errors"] == 0 and first["ingest16_per_s"] > 0
    assert first["import_rows"] == 300 and first["import_per_s"] > 0
    assert first["db_mb"] > 0 and all(mb > 20 for mb in first["rss_after_mb"])
    if first["vectors"]:  # run with the embeddings extra: by meaning too, with hits
        assert first["semantic_hits"] > 0 and first["http_hybrid_p50_ms"] > 0
    else:
        assert "semantic p50 / p99, HTTP (ms) | skipped |" in out

    # Again on the kept store: what the first run added (ingest, import) is gone first.
    call_command("bench", *args, "--keep", str(tmp_path / "keep"))
    out = capfd.readouterr().out
    (second,) = _results(out)
    assert second["reused"] and second["reset_rows"] == 300
    assert "reusing the kept store" in out and "| seed (s; reused: kept store) | reused |" in out


def test_cmem_bench_scale_without_a_checkout_says_where_it_runs(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(bench, "checkout", lambda: tmp_path)
    with pytest.raises(CommandError, match=r"needs a checkout of cmem .*make bench NAME=scale"):
        call_command("bench", "scale", "--sizes", "300")
