"""Issue 15 §5: numeric settings have bounds; a value outside is clamped with a log line."""

from __future__ import annotations

import logging

import pytest

from memory import config
from memory.privacy import redaction


def test_a_negative_field_cap_does_not_disable_the_cap(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_FIELD_CAP", "-5")
    config._clamp_logged.clear()
    with caplog.at_level(logging.WARNING, logger="memory.config"):
        cap = config.get_int("CLAUDE_MEM_FIELD_CAP")
    low, _high = config.INT_BOUNDS["CLAUDE_MEM_FIELD_CAP"]
    assert cap == low > 0
    assert "CLAUDE_MEM_FIELD_CAP: -5 is outside" in caplog.text
    assert any("CLAUDE_MEM_FIELD_CAP" in p for p in config.problems())
    stored = redaction.Sanitizer().text("x" * 50_000)
    assert len(stored) < 1000 and "characters cut" in stored


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("CLAUDE_MEM_BATCH_SIZE", "0", 1),
        ("CLAUDE_MEM_BATCH_SIZE", "100000", 500),
        ("CLAUDE_MEM_WORKER_PORT", "70000", 65535),
        ("CLAUDE_MEM_API_RETRIES", "-1", 0),
        ("CLAUDE_MEM_EXCERPT_CAP", "-5", 100),
        ("CLAUDE_MEM_READ_GATE_LIMIT", "0", 1),
        ("CLAUDE_MEM_RETENTION_DAYS", "-3", 0),
        ("CLAUDE_MEM_CONTEXT_TOKENS", "999999999", 200_000),
    ],
)
def test_numeric_settings_are_clamped(
    monkeypatch: pytest.MonkeyPatch, key: str, raw: str, expected: int
) -> None:
    monkeypatch.setenv(key, raw)
    assert config.get_int(key) == expected


def test_every_numeric_setting_has_bounds_and_its_default_is_inside() -> None:
    from memory.forms import INT_RANGES

    assert INT_RANGES == config.INT_BOUNDS  # the form refuses what readers would clamp
    for key, (low, high) in config.INT_BOUNDS.items():
        assert low <= int(config.SETTINGS[key][0]) <= high, key
