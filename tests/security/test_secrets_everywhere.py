"""Secrets and `<private>` passages planted in every kind of event never reach the database
(WAL included), the logs, the spool, the huey queue, or a compression request.

A real `cmem serve` with the fake Anthropic API: part of the session is captured while the
worker is down (the spool), the rest live; then every file in the data dir and every
request body the fake API recorded is searched for each planted value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.anthropic import FakeAnthropic, Reply
from tests.reliability.helpers import (
    KEY,
    Session,
    api_settings,
    echo_observations,
    hook,
    new_worker,
    scalar,
    spooled,
    wait_for,
)

pytestmark = pytest.mark.slow

SECRETS = {
    "anthropic": "sk-ant-api03-Pl4nt3dS3cr3tV4lu3-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "openai": "sk-proj-Pl4nt3dOpenAiKeyTq8Wm3Zr6Yp1Nd4Kc7Vb2Hx5",
    "aws": "AKIAPLANTEDQ2LMN4P6R",
    "github": "ghp_Pl4nt3dGitHubT0k3nF0rT3st1ngPurp0s36",  # ghp_ + 36, like a real one
    "slack": "xoxb-2638295105-5528391042517-Pl4nt3dSlackT0k3n",
    "google": "AIzaSyPl4nt3dGoogleKeyxQ2mL7pN4rT8vB1kH",
    "password": "Pl4nt3d-hunter2-pw",
    "bearer": "eyPl4nt3dBearerT0k3nAbCdEfGhIjKlMn0123",
    "pem": "MIIEPl4nt3dPr1v4teK3yB0dyAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "named": "Pl4nt3dNamedValue",
    # The kinds issue 15 found stored or spooled:
    "mysql -p": "Pl4nt3dMysqlPw77",
    "sshpass -p": "Pl4nt3dSshpassPw88",
    "url password": "Pl4nt3dUrlPw99",
    "sk_live_": "sk_live_51Pl4nt3dStr1peK3yAbCdEfGh",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJQbDRudDNkIn0.Pl4nt3dJwtS1gn4tur3",
    "key in a path": "ghp_Pl4nt3dK3yInAP4thF0rT3st1ngPurp0s3sXY",
}
PRIVATE = [
    "PRIV-PROMPT-PASSAGE",
    "PRIV-TOOL-OUTPUT",
    "PRIV-WHOLE-PROMPT",
    "PRIV-TURN-TOOL",
    "PRIV-LAST-MESSAGE",
    "PRIV-SPOOLED",
    "PRIV-FILE",
    "PRIV-UPPERCASE-TAG",
]
VISIBLE = ["VISIBLE-PROMPT-TEXT", "VISIBLE-TOOL-OUTPUT"]
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{SECRETS['pem']}\n-----END RSA PRIVATE KEY-----"


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_planted_secrets_and_private_passages_are_found_nowhere(tmp_path: Path) -> None:
    fake = FakeAnthropic(default=Reply(fn=echo_observations)).start()
    worker = new_worker(
        tmp_path, **api_settings(fake.url, CLAUDE_MEM_BATCH_SIZE="3", CLAUDE_MEM_LOG_LEVEL="DEBUG")
    )
    data = worker.data_dir
    project = tmp_path / "proj"
    project.mkdir()
    config_file = project / "settings_local.py"
    config_file.write_text(
        f'API_KEY = "{SECRETS["anthropic"]}"\n{PEM}\n# <private>PRIV-FILE</private>\n'
    )
    keyed_file = project / SECRETS["key in a path"] / "notes.txt"
    keyed_file.parent.mkdir()
    keyed_file.write_text("tool-7 notes\n")
    s = Session(project, session_id="secrets")
    try:
        # 1. Worker down: these go to the spool, which must be clean before any ingest.
        (data / "worker.spawn.lock").write_text("0 0\n")
        down = [
            (
                "session-init",
                s.prompt(
                    f"VISIBLE-PROMPT-TEXT use {SECRETS['aws']} <private>PRIV-PROMPT-PASSAGE</private>"
                    " <PRIVATE>PRIV-UPPERCASE-TAG</PRIVATE>",
                    prompt_id="p1",
                ),
            ),
            (
                "observation",
                s.bash(
                    1,
                    command=f"export OPENAI_API_KEY={SECRETS['openai']} && deploy tool-1",
                    stdout="<private>PRIV-SPOOLED</private> ok",
                ),
            ),
            (
                "observation",
                s.bash(
                    6,
                    command=(
                        f"mysql -u root -p{SECRETS['mysql -p']} app; "
                        f"sshpass -p {SECRETS['sshpass -p']} ssh deploy@host tool-6"
                    ),
                    stdout=(
                        f"postgres://app:{SECRETS['url password']}@db:5432/app "
                        f"{SECRETS['sk_live_']} {SECRETS['jwt']}"
                    ),
                ),
            ),
        ]
        for event, payload in down:
            result, _ = hook(worker.env, event, payload)
            assert result.returncode == 0 and b"saved to the spool" in result.stderr
        assert len(spooled(data)) == 3
        for path in _files(data):
            raw = path.read_bytes()
            for value in [*SECRETS.values(), *PRIVATE]:
                assert value.encode() not in raw, (value, path)
        (data / "worker.spawn.lock").unlink()

        # 2. Live: every other event type.
        worker.start()
        tool_input = json.loads(s.bash(2))
        tool_input["tool_input"] = {
            "command": "curl tool-2",
            "headers": {"Authorization": f"Bearer {SECRETS['bearer']}"},
            "api_key": SECRETS["named"],
        }
        tool_input["tool_response"]["stdout"] = (
            f"VISIBLE-TOOL-OUTPUT token {SECRETS['github']}\n<private>PRIV-TOOL-OUTPUT</private>\npassword={SECRETS['password']}"
        )
        live = [
            ("observation", json.dumps(tool_input).encode()),
            (
                "observation",
                s.failure(3, f"tool-3 failed: slack said invalid_auth for {SECRETS['slack']}"),
            ),
            ("observation", s.read(4, config_file, config_file.read_text())),
            ("observation", s.read(7, keyed_file, "tool-7 notes\n")),
            (
                "summarize",
                s.stop(f"Done. I used {SECRETS['google']} <private>PRIV-LAST-MESSAGE</private>"),
            ),
            # A fully private prompt: neither it nor its turn's tool use is stored.
            (
                "session-init",
                s.prompt("<private>PRIV-WHOLE-PROMPT and its secret</private>", prompt_id="p2"),
            ),
            (
                "observation",
                s.bash(5, command="echo PRIV-TURN-TOOL tool-5", stdout="PRIV-TURN-TOOL"),
            ),
            ("summarize", s.stop("PRIV-TURN-TOOL summary")),
            ("context", s.start()),
            ("session-end", s.end()),
        ]
        for event, payload in live:
            result, _ = hook(worker.env, event, payload)
            assert result.returncode == 0, result.stderr
        db = data / "cmem.sqlite3"
        wait_for(
            lambda: (
                not spooled(data)
                and scalar(db, "select count(*) from memory_event where status='done'") == 7
            ),
            90,
            "every event compressed",
        )
        assert scalar(db, "select count(*) from memory_summary") == 1
    finally:
        worker.stop()  # flushes the logs; the WAL stays on disk and is searched too
        fake.stop()

    haystacks = {str(p): p.read_bytes() for p in _files(data)}
    haystacks["compression requests"] = json.dumps([r.body for r in fake.requests]).encode()
    assert any(name.endswith("cmem.sqlite3") for name in haystacks)
    assert fake.requests and b"[REDACTED:" in haystacks["compression requests"]
    everything = b"\n".join(haystacks.values())
    for visible in VISIBLE:  # the test is not vacuous: the ordinary text got through
        assert visible.encode() in everything, visible
    for name, value in [*SECRETS.items(), *((p, p) for p in PRIVATE), ("worker API key", KEY)]:
        leaks = [where for where, raw in haystacks.items() if value.encode() in raw]
        assert not leaks, f"{name} leaked into {leaks}"
