"""The package as a user gets it: a wheel built from this checkout, installed into a fresh
venv outside it, started from an empty folder with a data dir of its own.

The wheel is built once per run (module fixture). Its dependencies are installed by pip into
the fresh venv (pip's cache and the configured index; no other network). Everything below
runs the installed `cmem`, never the checkout's.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import REPO, uv_path
from tests.support.worker import free_port, make_worker_env

# pip resolving and installing the runtime set into a fresh venv is most of the module's
# time (minutes on a loaded 2-core machine): above pytest's default 300 s per test.
pytestmark = [pytest.mark.package, pytest.mark.slow, pytest.mark.timeout(900)]

PAGES = ["/", "/live/", "/search/?q=checkout", "/settings/", "/stats/", "/work/", "/admin/login/", "/api/docs", "/api/health"]  # fmt: skip


@dataclass
class Installed:
    venv: Path
    cmem: Path
    folder: Path  # an empty working folder, outside the checkout
    env: dict[str, str]
    url: str
    wheel: Path


def _run(installed: Installed, *args: str, stdin: str = "", timeout: float = 180) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [str(installed.cmem), *args], input=stdin, cwd=installed.folder, env=installed.env,
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


# Pages and the API answer the owner only: the tests sign in as a user does, through the
# one-time link `cmem open` prints; the opener keeps the session cookie it sets.
_OWNER = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())


def _sign_in(installed: Installed) -> None:
    link = _run(installed, "open", "--print")
    assert link.returncode == 0, link.stdout + link.stderr
    url = link.stdout.strip().splitlines()[-1]
    assert "/auth/?token=" in url
    status, _, _ = _get(url)
    assert status == 200


def _get(url: str) -> tuple[int, str, bytes]:
    try:
        with _OWNER.open(url, timeout=30) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


@pytest.fixture(scope="module")
def installed() -> Iterator[Installed]:
    outside = Path(tempfile.mkdtemp(prefix="cmem-wheel-"))
    assert not outside.is_relative_to(REPO)
    dist = outside / "dist"
    venv = outside / "venv"
    # The fresh venv's own pip builds the wheel: the test venv may have none (uv seeds no pip).
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = dist.glob("cmemory-*.whl")
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    folder = outside / "empty"
    folder.mkdir()
    data = outside / "data"
    port = free_port()
    env = make_worker_env(data, port, HOME=str(outside / "home"))
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    env.pop("PYTHONPATH", None)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    it = Installed(
        venv=venv,
        cmem=venv / "bin" / "cmem",
        folder=folder,
        env=env,
        url=f"http://127.0.0.1:{port}",
        wheel=wheel,
    )
    started = _run(it, "start")
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield it
    finally:
        _run(it, "stop")


def test_the_installed_package_is_not_the_checkout(installed: Installed) -> None:
    code = "import cmem_site, memory; print(cmem_site.__file__); print(memory.__file__)"
    done = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", code],
        cwd=installed.folder, env=installed.env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    for line in done.stdout.split():
        assert str(installed.venv) in line and str(REPO) not in line
    version = _run(installed, "--version")
    assert version.returncode == 0 and version.stdout.startswith("cmem ")


def test_every_page_and_static_file_answers_200(installed: Installed) -> None:
    status, _, _ = _get(f"{installed.url}/api/search?q=checkout&limit=1")
    assert status == 401  # before signing in, nothing
    _sign_in(installed)
    demo = _run(installed, "demo")
    assert demo.returncode == 0, demo.stderr
    status, _, body = _get(f"{installed.url}/api/search?q=checkout&limit=1")
    assert status == 200
    first = json.loads(body)["results"][0]
    pages = [*PAGES, f"/observations/{first['id']}/", f"/sessions/{first['session']}/"]
    assets: set[str] = set()
    for page in pages:
        status, kind, body = _get(installed.url + page)
        assert status == 200, f"{page}: {status} {body[:300]!r}"
        if "html" in kind:
            assets |= set(re.findall(r'(?:src|href)="(/static/[^"?#]+)', body.decode()))
    # Every file the wheel carries in cmem_site/static, whether a page names it or not.
    site = next(installed.venv.glob("lib/python3*/site-packages"))
    shipped = {f"/static/{p.relative_to(site / 'cmem_site' / 'static')}" for p in (site / "cmem_site" / "static").rglob("*") if p.is_file()}  # fmt: skip
    assert {"/static/css/cmem.css", "/static/js/cmem.js"} <= shipped
    for asset in sorted(assets | shipped):
        status, _, body = _get(installed.url + asset)
        assert status == 200 and body, asset


def test_a_hook_is_captured(installed: Installed) -> None:
    payload = {
        "session_id": "wheel-s1", "transcript_path": "", "cwd": str(installed.folder),
        "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_wheel_1",
        "tool_input": {"command": "ls", "description": "list"},
        "tool_response": {"stdout": "a\nb\n", "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False},
    }  # fmt: skip
    done = _run(installed, "hook", "claude-code", "observation", stdin=json.dumps(payload))
    assert done.returncode == 0 and done.stdout.strip() in {"", "{}"}, done.stderr
    db = Path(installed.env["CLAUDE_MEM_DATA_DIR"]) / "cmem.sqlite3"
    with sqlite3.connect(db) as conn:
        (count,) = conn.execute(
            "select count(*) from memory_event where tool_use_id = 'toolu_wheel_1'"
        ).fetchone()
    assert count == 1


def test_the_mcp_server_lists_its_tools_under_cmems_name(installed: Installed) -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]  # fmt: skip
    proc = subprocess.Popen(
        [str(installed.cmem), "mcp"], cwd=installed.folder, env=installed.env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin and proc.stdout
    replies = {}
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                reply = json.loads(proc.stdout.readline())
                replies[reply["id"]] = reply
    finally:
        proc.kill()
        proc.wait(10)
    server = replies[1]["result"]["serverInfo"]
    from memory import config

    assert server == {"name": "cmem", "version": config.VERSION} or (
        server["name"] == "cmem" and server["version"] == config.VERSION
    )
    names = {tool["name"] for tool in replies[2]["result"]["tools"]}
    assert {"search", "timeline", "get_observations", "smart_outline", "smart_unfold"} <= names


def test_bench_hooks_runs_without_the_test_tree(installed: Installed) -> None:
    env = {**installed.env}
    env["CLAUDE_MEM_DATA_DIR"] = str(installed.folder.parent / "bench-data")
    done = subprocess.run(
        [str(installed.cmem), "bench", "hooks", "--quick", "--runs", "3"], cwd=installed.folder,
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "== bench hooks ==" in done.stdout and "Traceback" not in done.stderr
    assert "cmem hook claude-code file-context" in done.stdout


def test_the_wheel_carries_no_tests_nor_benchmarks(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        entries = wheel.infolist()
    names = [entry.filename for entry in entries]
    assert not [n for n in names if n.startswith("tests/") or "/tests/" in n]
    assert not [n for n in names if "benchmarks" in n or n.startswith("memory/bench")]
    # Without the embedding model's data files, what users run compresses to at most 1 MB.
    model = "memory/retrieval/embeddings/data/"
    code = sum(e.compress_size for e in entries if not e.filename.startswith(model))
    assert code <= 1_000_000, code


def test_unknown_api_paths_answer_json_and_pages_a_styled_404(installed: Installed) -> None:
    status, kind, body = _get(f"{installed.url}/api/no-such-thing")
    assert status == 404 and kind.startswith("application/json")
    assert "detail" in json.loads(body)
    status, kind, body = _get(f"{installed.url}/no-such-page/")
    assert status == 404 and "html" in kind and b"/static/css/cmem.css" in body


def test_starting_twice_reports_the_running_worker(installed: Installed) -> None:
    again = _run(installed, "start")
    assert again.returncode == 0 and "already running" in again.stdout
    served = _run(installed, "serve")
    assert served.returncode == 0 and "already running" in served.stdout
    status = _run(installed, "status", "--json")
    pid = json.loads(status.stdout)["pid"]
    assert f"(pid {pid})" in again.stdout and f"(pid {pid})" in served.stdout


def test_the_runtime_set_is_lean_and_search_says_it_is_keyword_only(installed: Installed) -> None:
    # Team mode, search by meaning and the test tools are extras: not in a plain install.
    site = next(installed.venv.glob("lib/python3*/site-packages"))
    for name in ("numpy", "onnxruntime", "tokenizers", "psycopg", "redis", "pytest", "playwright"):
        assert not (site / name).exists(), name
    _sign_in(installed)
    status, _, body = _get(f"{installed.url}/api/search?q=checkout&mode=hybrid")
    data = json.loads(body)
    assert status == 200 and data["mode"] == "keyword"
    assert "search by meaning is off" in data["note"] and "cmemory[embeddings]" in data["note"]
    doctor = _run(installed, "doctor")
    assert "search: keyword only, search by meaning is off" in doctor.stdout
    status_text = _run(installed, "status").stdout
    assert "search   keyword only" in status_text
    # Team mode without its extra: one sentence naming it, not Django's driver traceback
    # (`doctor` opens the database; `status` asks the running worker, without Django).
    team = subprocess.run(
        [str(installed.cmem), "doctor"], cwd=installed.folder, capture_output=True, text=True,
        env={**installed.env, "CLAUDE_MEM_DATABASE_URL": "postgres://cmem@127.0.0.1:9/cmem"}, timeout=120,
    )  # fmt: skip
    assert (
        team.returncode == 1 and "psycopg is not installed: install the team extra" in team.stderr
    )
    assert "Traceback" not in team.stderr


def test_uv_tool_install_of_the_wheel_with_and_without_embeddings(installed: Installed) -> None:
    """The install guide's wheel line: `uv tool install WHEEL`, and the extra spelled as it says."""
    root = installed.folder.parent / "uv-tool"
    env = {
        **installed.env,
        "UV_TOOL_DIR": str(root / "tools"),
        "UV_TOOL_BIN_DIR": str(root / "bin"),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_PYTHON": sys.executable,
    }
    for spec in (str(installed.wheel), f"cmemory[embeddings] @ {installed.wheel}"):
        done = subprocess.run(
            [uv_path(), "tool", "install", "-q", "--force", spec], env=env, capture_output=True,
            text=True, timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        version = subprocess.run(
            [str(root / "bin" / "cmem"), "--version"], env=env, cwd=installed.folder,
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert version.returncode == 0 and version.stdout.startswith("cmem "), version.stderr
    # With the extra, doctor in that install finds search by meaning.
    doctor = subprocess.run(
        [str(root / "bin" / "cmem"), "doctor"], env={**env, "CLAUDE_MEM_DATA_DIR": str(root / "data")},
        cwd=installed.folder, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "search: hybrid (words and meaning" in doctor.stdout, doctor.stdout
    # The bundled transformer loads from that install's site-packages alone (cmem's wheel
    # carries the model, ONNX Runtime runs it), offline, outside any checkout; neither
    # tokenizers nor huggingface_hub is installed by the extra.
    probe = (
        "import importlib.util as u; from memory.retrieval.embeddings.model import get_model; "
        "from memory.retrieval.embeddings.transformer import DATA; m = get_model(); "
        "v = m.embed(['refunds match checkout']); "
        "print(m.version, v.shape[1], round(float((v * v).sum()), 2), DATA, "
        "u.find_spec('tokenizers') is None and u.find_spec('huggingface_hub') is None)"
    )
    embedded = subprocess.run(
        [str(root / "tools" / "cmemory" / "bin" / "python"), "-c", probe],
        env={**env, "CLAUDE_MEM_DATA_DIR": str(root / "data"), "HF_HUB_OFFLINE": "1"},
        cwd=installed.folder, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert embedded.returncode == 0, embedded.stderr[-3000:]
    version, dim, norm, data, lean = embedded.stdout.split()
    assert version.startswith("all-MiniLM-L6-v2/onnx-int8@") and (dim, norm, lean) == (
        "384",
        "1.0",
        "True",
    )
    assert str(REPO) not in data and "site-packages" in data


def test_make_dist_builds_the_wheel_alone_without_a_venv(tmp_path: Path) -> None:
    """`make dist` (the install guide's wheel): one wheel under the distribution name, no
    sdist, and no venv or dev toolchain made on the way."""
    out = tmp_path / "dist"
    done = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), "dist", f"DIST={out}", "VENV=/nonexistent/venv"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert [p.name for p in out.iterdir() if p.suffix in {".whl", ".gz"}] == [
        "cmemory-0.1.0-py3-none-any.whl"
    ]
    assert not Path("/nonexistent/venv").exists()


def test_uv_tool_install_from_a_git_url(installed: Installed) -> None:
    """The install guide's line for a git URL, here the checkout's own history (`git+file`)."""
    root = installed.folder.parent / "uv-git"
    env = {
        **installed.env,
        "UV_TOOL_DIR": str(root / "tools"),
        "UV_TOOL_BIN_DIR": str(root / "bin"),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_PYTHON": sys.executable,
    }
    done = subprocess.run(
        [uv_path(), "tool", "install", "-q", "--force", f"cmemory @ git+file://{REPO}"],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    version = subprocess.run(
        [str(root / "bin" / "cmem"), "--version"], env=env, cwd=installed.folder,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert version.returncode == 0 and version.stdout.startswith("cmem "), version.stderr
