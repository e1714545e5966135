"""The provider seam: `auto` selection for each case, the claude-mem aliases, and the
Chat Completions providers through the real `openai` SDK against a fake server."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from memory.compression import health, llm
from memory.compression.pipeline import compressor_mode
from memory.compression.providers import NOTHING_CONFIGURED, claude_cli, provider_choice
from memory.compression.tasks import session_events_process_task
from memory.models import Event, LedgerEntry, Observation
from tests.factories import SessionFactory
from tests.fakes import add_event, read_payload
from tests.fakes.chat_completions import ChatReply, FakeChatCompletions

pytestmark = pytest.mark.django_db


def make_session(
    root: Path, *, prompt: str = "Make the gate rank rows by specificity", project: str = "demo"
):
    return SessionFactory(root=root, project=project, prompt=prompt)


OBS = (
    '<observation uses="1"><type>discovery</type><title>Gate module defines gate_decide</title>'
    "<subtitle>read of the gate</subtitle><facts><fact>gate.py defines gate_decide()</fact></facts>"
    "<narrative>The gate decides reads.</narrative><concepts><concept>how-it-works</concept>"
    "</concepts></observation>"
)


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_MEM_API_BACKOFF_MS", "5")
    monkeypatch.setenv("CLAUDE_MEM_API_TIMEOUT_MS", "3000")
    claude_cli._auth_cache.clear()


def fake_claude(tmp_path: Path, *, logged_in: bool) -> Path:
    """A stand-in `claude` that answers `auth status --json` only (selection never runs -p)."""
    exe = tmp_path / "bin" / "claude"
    exe.parent.mkdir(parents=True, exist_ok=True)
    status = json.dumps({"loggedIn": logged_in, "authMethod": "claude.ai" if logged_in else "none"})
    exe.write_text(f"#!/bin/sh\necho '{status}'\nexit {0 if logged_in else 1}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


# -- auto -------------------------------------------------------------------------------------
def test_auto_with_nothing_configured_is_offline() -> None:
    choice = provider_choice()
    assert (choice.name, choice.why) == ("offline", NOTHING_CONFIGURED)
    assert compressor_mode() == ("offline", NOTHING_CONFIGURED)


def test_auto_prefers_an_anthropic_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CLAUDE_PATH", str(fake_claude(tmp_path, logged_in=True)))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-auto-1234567890")
    choice = provider_choice()
    assert choice.name == "anthropic"
    assert choice.why == "auto: Anthropic API key from ANTHROPIC_API_KEY (environment)"


def test_auto_takes_a_logged_in_claude_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    exe = fake_claude(tmp_path, logged_in=True)
    monkeypatch.setenv("CLAUDE_MEM_CLAUDE_PATH", str(exe))
    choice = provider_choice()
    assert choice.name == "claude"
    assert choice.why == f"auto: `claude` CLI at {exe}, logged in (claude.ai)"


def test_auto_reads_the_claude_credentials_file_without_running_the_cli(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    exe = fake_claude(tmp_path, logged_in=False)  # `auth status` would say no
    creds = tmp_path / "home" / ".claude" / ".credentials.json"
    creds.parent.mkdir(parents=True)
    creds.write_text(json.dumps({"claudeAiOauth": {"accessToken": "x", "expiresAt": 1}}))
    monkeypatch.setenv("CLAUDE_MEM_CLAUDE_PATH", str(exe))
    assert provider_choice().why == f"auto: `claude` CLI at {exe}, logged in (credentials file)"


def test_auto_skips_a_claude_cli_that_is_not_logged_in(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CLAUDE_PATH", str(fake_claude(tmp_path, logged_in=False)))
    assert provider_choice().name == "offline"
    monkeypatch.setenv("CLAUDE_MEM_OPENROUTER_API_KEY", "sk-or-v1-abcdefghijkl")
    assert provider_choice().name == "openrouter"


def test_auto_order_openrouter_gemini_then_openai_compatible(
    monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert provider_choice().name == "openai-compatible"
    (data_dir / ".env").write_text(
        "GEMINI_API_KEY=AIzaFakeGeminiKey000000000000\n"
    )  # claude-mem's place
    choice = provider_choice()
    assert (choice.name, choice.why) == (
        "gemini",
        "auto: Gemini key from GEMINI_API_KEY in <data dir>/.env",
    )
    monkeypatch.setenv("CLAUDE_MEM_OPENROUTER_API_KEY", "sk-or-v1-abcdefghijkl")
    assert provider_choice().name == "openrouter"


def test_claude_codes_inherited_env_is_not_the_observers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "claude-code-gateway-token")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://gateway.invalid")
    assert provider_choice().name == "offline"
    from memory.compression.providers import anthropic_api

    assert anthropic_api.base_url_and_source()[0] == "https://api.anthropic.com"
    monkeypatch.setenv("CLAUDE_MEM_INHERIT_ANTHROPIC_ENV", "true")
    assert provider_choice().why.startswith("auto: Anthropic API key from ANTHROPIC_AUTH_TOKEN")
    assert anthropic_api.base_url_and_source()[0] == "http://gateway.invalid"
    env = claude_cli.child_env()
    assert env["ANTHROPIC_BASE_URL"] == "http://gateway.invalid"  # only because asked


def test_claude_cli_child_env_is_marked_and_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://gateway.invalid")
    monkeypatch.setenv("CLAUDE_CODE_ENTRYPOINT", "cli")
    monkeypatch.setenv("CLAUDE_MEM_CLAUDE_BASE_URL", "http://127.0.0.1:4000")
    env = claude_cli.child_env()
    assert env["CLAUDE_MEM_INTERNAL"] == "1"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:4000"
    assert "CLAUDE_CODE_ENTRYPOINT" not in env
    assert not [k for k in env if k.startswith("CLAUDE_MEM_") and k != "CLAUDE_MEM_INTERNAL"]
    args = claude_cli.args("claude", "SYSTEM")
    for flag in ("--tools", "--setting-sources", "--strict-mcp-config", "--no-session-persistence"):
        assert flag in args
    assert args[args.index("--tools") + 1] == "" and args[args.index("--setting-sources") + 1] == ""


# -- explicit choices and aliases -------------------------------------------------------------
def test_claude_mem_provider_names_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_PROVIDER", "gemini")
    monkeypatch.setenv("CLAUDE_MEM_GEMINI_API_KEY", "AIzaFakeGeminiKey000000000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-ignored-1234567890")
    assert provider_choice().name == "gemini"
    assert (
        provider_choice().why
        == "CLAUDE_MEM_PROVIDER=gemini: Gemini key from CLAUDE_MEM_GEMINI_API_KEY"
    )


def test_compressor_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-alias-1234567890")
    monkeypatch.setenv("CLAUDE_MEM_COMPRESSOR", "offline")
    assert provider_choice().name == "offline"
    monkeypatch.setenv("CLAUDE_MEM_COMPRESSOR", "api")
    assert provider_choice().name == "anthropic"
    monkeypatch.setenv("CLAUDE_MEM_PROVIDER", "offline")  # the new key wins
    assert provider_choice().name == "offline"


def test_a_chosen_claude_that_is_not_logged_in_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_PROVIDER", "claude")
    monkeypatch.setenv("CLAUDE_MEM_CLAUDE_PATH", str(fake_claude(tmp_path, logged_in=False)))
    assert compressor_mode()[0] == "offline"
    line = health.observer_health_line()
    assert line.startswith(
        "⚠ cmem memory is degraded: CLAUDE_MEM_PROVIDER=claude but the `claude` CLI"
    )
    assert "is not logged in (run `claude auth login`)" in line


def test_a_rate_limit_pauses_the_provider_with_a_health_line() -> None:
    health.observer_record_failure(error="the `claude` CLI is rate-limited: 429", rate_limited=True)
    assert health.api_paused()
    assert "the observer is rate-limited" in health.observer_health_line()
    health.observer_record_success(tokens=1)
    assert not health.api_paused() and health.observer_health_line() == ""


# -- openai-compatible through the real SDK ---------------------------------------------------
@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch):
    with FakeChatCompletions(default=ChatReply(text=OBS)) as fake:
        monkeypatch.setenv("CLAUDE_MEM_PROVIDER", "openai-compatible")
        monkeypatch.setenv("CLAUDE_MEM_OPENAI_BASE_URL", fake.url)
        monkeypatch.setenv("CLAUDE_MEM_OPENAI_MODEL", "qwen2.5-coder:7b")
        yield fake


def _one_read(tmp_path: Path):
    root = tmp_path / "demo"
    root.mkdir()
    (root / "gate.py").write_text("def gate_decide(event):\n    return 'allow'\n" * 30)
    session = make_session(root)
    add_event(session, read_payload(root / "gate.py", root))
    session_events_process_task(session.pk)
    return session


@pytest.mark.slow  # seconds: out of `make test-quick`
@pytest.mark.parametrize("stream", ["false", "true"])
def test_openai_compatible_compresses_streaming_and_not(
    chat: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stream: str
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_OPENAI_STREAM", stream)
    chat.default = ChatReply(text=OBS, cached_tokens=40)
    session = _one_read(tmp_path)
    obs = Observation.objects.get(session=session)
    assert obs.title == "Gate module defines gate_decide"
    assert obs.compressor == "qwen2.5-coder:7b"
    [body] = chat.requests
    assert body["model"] == "qwen2.5-coder:7b" and bool(body.get("stream")) == (stream == "true")
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][0]["content"].startswith("You are cmem's memory observer")
    assert "<batch project=" in body["messages"][1]["content"]
    row = LedgerEntry.objects.get(kind="observer")
    assert row.provider == "openai-compatible" and row.model == "qwen2.5-coder:7b"
    assert row.cached_tokens == 40 and row.input_tokens > 0 and row.output_tokens > 0
    assert obs.cache_read_tokens == 40


def test_openai_compatible_retries_429_after_retry_after_and_5xx(
    chat: FakeChatCompletions, tmp_path: Path
) -> None:
    chat.script(ChatReply(status=429, headers={"retry-after": "0"}), ChatReply(status=503))
    session = _one_read(tmp_path)
    assert len(chat.requests) == 3
    assert Observation.objects.get(session=session).compressor == "qwen2.5-coder:7b"
    assert health.observer_status()["consecutive_failures"] == 0


def test_openai_compatible_malformed_json_falls_back_offline(
    chat: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_API_RETRIES", "1")
    chat.default = ChatReply(raw=b"<html>502 from a proxy</html>")
    session = _one_read(tmp_path)
    assert len(chat.requests) == 2  # one retry, then offline
    obs = Observation.objects.get(session=session)
    assert obs.compressor == "offline"
    event = Event.objects.get(session=session)
    assert "unusable answer" in event.last_error
    assert health.observer_status()["consecutive_failures"] == 1


def test_openai_compatible_4xx_is_not_retried(chat: FakeChatCompletions, tmp_path: Path) -> None:
    chat.default = ChatReply(status=401)
    session = _one_read(tmp_path)
    assert len(chat.requests) == 1
    assert Observation.objects.get(session=session).compressor == "offline"
    assert "answered 401" in Event.objects.get(session=session).last_error


def test_openrouter_sends_claude_mem_headers_and_keeps_its_cost(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with FakeChatCompletions(default=ChatReply(text=OBS, cost=0.00042)) as fake:
        monkeypatch.setenv("CLAUDE_MEM_PROVIDER", "openrouter")
        monkeypatch.setenv("CLAUDE_MEM_OPENROUTER_BASE_URL", fake.url)
        monkeypatch.setenv("CLAUDE_MEM_OPENROUTER_API_KEY", "sk-or-v1-testkey-abcdefgh")
        _one_read(tmp_path)
        assert fake.headers[0]["authorization"] == "Bearer sk-or-v1-testkey-abcdefgh"
        assert fake.headers[0]["x-title"] == "claude-mem"
        assert fake.requests[0]["model"] == "xiaomi/mimo-v2-flash:free"
        assert fake.requests[0]["usage"] == {"include": True}
    row = LedgerEntry.objects.get(kind="observer")
    assert (row.provider, row.cost_usd) == ("openrouter", pytest.approx(0.00042))


def test_errors_never_carry_a_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_GEMINI_API_KEY", "AIzaSecretGeminiKey1234567890")
    assert "AIzaSecret" not in llm.scrub("bad key AIzaSecretGeminiKey1234567890 given")
    assert os.environ["CLAUDE_MEM_GEMINI_API_KEY"]  # the key itself is untouched
