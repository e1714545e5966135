"""Private tags, secret redaction and field caps, with realistic samples."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from memory.privacy import redaction
from tests.support import CLAUDE_FIXTURES, LiveWorker

# Realistic shapes (fake values): each must disappear, and the kind must be named.
SECRETS = {
    "anthropic": "sk-ant-api03-Xy7Qp2Lm9Nc4Rt8Vb1Kd6Hg3Jf5Ws0Ze-Aq7Pl2Mn9Bc4Vx8Tr1Yu6Io3Lk5Jh0GfDsA_-Q1w2E3AA",
    "openai": "sk-proj-Tq8Wm3Zr6Yp1Nd4Kc7Vb2Hx5Lg9Js0Fe_Ua8Qo3Mi6Rt1Ws4Pk7Xc2Bn5Vz9",
    "aws-access-key": "AKIAZ7Q2LMN4P6R8T1VW",
    "github": "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s12",
    "slack": "xoxb-2638295105-5528391042517-Zq8Wm3Tr6Yp1Nd4Kc7Vb2Hx5",
    "google": "AIzaSyD9xQ2mL7pN4rT8vB1kH6gJ3fW5sZ0eA7q",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_provider_keys_are_redacted_by_kind(kind: str) -> None:
    secret = SECRETS[kind]
    text = f'export SOME_VAR={secret}\ncurl -d \'{{"k": "{secret}"}}\' https://api.example.com'
    out = redaction.redact_text(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws-secret-key",
        ),
        (
            "token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
            "github",
        ),
        ("DB_PASSWORD=hunter2-Correct-Horse", "hunter2-Correct-Horse", "password"),
        ('{"client_secret": "9f8e7d6c5b4a39281706"}', "9f8e7d6c5b4a39281706", "secret"),
        (
            "curl -H 'Authorization: Bearer abc.def-ghi_jkl012345678' http://x",
            "abc.def-ghi_jkl012345678",
            "bearer",
        ),
        (
            "postgres://app:Sup3rS3cretPw@db.internal:5432/app",
            "Sup3rS3cretPw",
            "basic-auth-credentials",
        ),
        ("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc", "stripe-access-key"),
    ],
)
def test_assignments_bearer_tokens_and_detect_secrets_plugins(
    text: str, secret: str, kind: str
) -> None:
    out = redaction.redact_text(text)
    assert secret not in out and f"[REDACTED:{kind}]" in out


def test_private_key_blocks_are_redacted_whole() -> None:
    body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw\n" * 20
    text = f"before\n-----BEGIN RSA PRIVATE KEY-----\n{body}-----END RSA PRIVATE KEY-----\nafter"
    out = redaction.redact_text(text)
    assert out == "before\n[REDACTED:private-key]\nafter"


def test_a_key_cut_by_the_field_cap_leaves_no_fragment() -> None:
    body = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=" * 200
    text = (
        "x" * 9000
        + f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"
        + "y" * 9000
    )
    out = redaction.Sanitizer(cap=12000, redact=True).text(text)
    assert "QUJDREVG" not in out


def test_ordinary_code_is_left_alone() -> None:
    code = (
        "token = get_token()\npassword = os.environ['PW']\nsecret = settings.SECRET_KEY\n"
        "def login(password: str) -> None: ...\nsha = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'\n"
        "task-list-abcdefghijklmnopqrstuvwxyz0123456789"
    )
    assert redaction.redact_text(code) == code


def test_a_guarded_trigger_is_searched_for_whenever_it_occurs() -> None:
    # The guards only skip searches that cannot succeed: every trigger is found wherever it
    # stands, alone or among the others, exactly as searching for each one finds it.
    literals = [literal for literal, _ in redaction._trigger_plan()]
    assert all(guard in literals for _, guard in redaction._trigger_plan() if guard)
    for literal in literals:
        assert literal in redaction.triggers_present(f"x {literal} y")
    texts = ["ghp_x sk-ant- passwd=1", "secretaccesskey accountkey=", *literals, "plain text"]
    for text in [*texts, " ".join(texts), "".join(reversed(literals))]:
        assert redaction.triggers_present(text) == {t for t in literals if t in text}


def test_redaction_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_REDACT_SECRETS", "false")
    assert redaction.Sanitizer().text(SECRETS["github"]) == SECRETS["github"]


def test_tags_are_stripped_with_their_content() -> None:
    text = 'a<private>x</private>b<system-reminder kind="1">y</system-reminder>c<claude-mem-context>z</claude-mem-context>d'
    assert redaction.strip_tags(text) == "abcd"
    assert redaction.strip_tags("keep <private>never closed secret") == "keep "


def test_secret_named_keys_are_redacted_in_json() -> None:
    value = {
        "env": {"API_KEY": "plain-looking-value", "HOME": "/home/dev"},
        "input_tokens": 12,
        "items": ["password=abcd1234"],
    }
    assert redaction.sanitize(value) == {
        "env": {"API_KEY": "[REDACTED:api-key]", "HOME": "/home/dev"},
        "input_tokens": 12,
        "items": ["password=[REDACTED:password]"],
    }


@pytest.mark.slow
def test_a_planted_secret_is_found_nowhere_in_the_data_dir(live_worker: LiveWorker) -> None:
    secret = SECRETS["anthropic"]
    aws = SECRETS["aws-access-key"]
    prompt = json.loads((CLAUDE_FIXTURES / "UserPromptSubmit.json").read_text())
    prompt["prompt"] = f"use key {secret} to call the api"
    observation = json.loads((CLAUDE_FIXTURES / "PostToolUse.bash.json").read_text())
    observation["tool_input"]["command"] = f"aws configure set aws_access_key_id {aws}"
    observation["tool_response"]["stdout"] = f"ANTHROPIC_API_KEY={secret}\nok"
    stop = json.loads((CLAUDE_FIXTURES / "Stop.json").read_text())
    stop["last_assistant_message"] = f"I used {secret}."
    for event, payload in [
        ("session-init", prompt),
        ("observation", observation),
        ("summarize", stop),
    ]:
        result = live_worker.run_hook(event, json.dumps(payload).encode())
        assert result.returncode == 0 and result.stdout == b"{}", result.stderr
    time.sleep(1.5)  # let the consumer compress what was queued
    live_worker.stop()  # checkpoints the WAL and flushes logs
    files = [p for p in Path(live_worker.data_dir).rglob("*") if p.is_file()]
    assert any(p.name.startswith("cmem.sqlite3") for p in files)
    for path in files:
        data = path.read_bytes()
        assert secret.encode() not in data, path
        assert aws.encode() not in data, path
