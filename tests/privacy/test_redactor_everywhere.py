"""Issue 15 §6: one redactor, the same everywhere: the spool gets the worker's rules
(detect-secrets' plugins included) and log lines are redacted like stored text."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from memory.privacy import redaction
from memory.privacy.secret_patterns import PLUGIN_PATTERNS, live_plugin_patterns
from memory.privacy.spool_scrub import spool_scrub

# Secrets only a detect-secrets plugin knows (no explicit cmem pattern matches them).
SENDGRID = "SG." + "aB3dE6gH9jK2mN5pQ8sT1v" + "." + "wX4yZ7bC0eF3hJ6kM9nP2qS5tV8wY1zA4cD7fG0iL3o"
NPM = "npm_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ"


def test_the_plugin_snapshot_matches_the_installed_detect_secrets() -> None:
    assert list(PLUGIN_PATTERNS) == live_plugin_patterns()


def test_the_spool_applies_detect_secrets_plugins_too() -> None:
    body = json.dumps(
        {
            "hook_event_name": "PostToolUse",
            "tool_input": {"command": f"curl -H 'x: {SENDGRID}' https://api.sendgrid.com"},
            "tool_response": {"stdout": f"//registry.npmjs.org/:_authToken={NPM}\n"},
        }
    ).encode()
    scrubbed = spool_scrub(body)
    assert scrubbed is not None
    assert SENDGRID.encode() not in scrubbed and NPM.encode() not in scrubbed
    # ...exactly as the worker stores it.
    assert SENDGRID not in redaction.Sanitizer().text(SENDGRID + " tail")


def test_log_lines_are_redacted_and_private_passages_dropped() -> None:
    handler = next(h for h in logging.getLogger().handlers if isinstance(h, logging.FileHandler))
    key = "sk-ant-api03-" + "LOGLEAK" * 5
    logging.getLogger("memory.capture.ingest").warning(
        "tool use refused: %s <private>my diary</private> done", {"command": f"export K={key}"}
    )
    try:
        raise ValueError(f"prompt was: deploy with {SENDGRID}")
    except ValueError:
        logging.getLogger("memory.hooks.dispatch").exception("hook failed")
    handler.flush()
    text = Path(handler.baseFilename).read_text()
    assert "tool use refused" in text and "hook failed" in text
    assert key not in text and SENDGRID not in text and "my diary" not in text
    assert "[REDACTED:" in text
