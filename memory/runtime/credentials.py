"""Who may talk to the local worker: the owner's secret, the Unix socket, one-time login tokens.

Three ways in, all of them readable only by the owner of the 0700 data dir:
- `<data dir>/worker.sock`: the hook client, CLI and MCP server connect here. Only the owner
  can connect (the dir is 0700, the socket 0600), and only a process of the owner can have
  created it, so the socket also authenticates the *server* to the hook: a process squatting
  the TCP port learns nothing and decides nothing.
- `<data dir>/worker.secret` (0600): `Authorization: Bearer <secret>` for any TCP client.
- `<data dir>/login-tokens/<sha256>`: one-time tokens in the URL `cmem open` prints; used once
  within LOGIN_TOKEN_TTL_S, they set the owner's session cookie (memory/access/owner_auth.py).
"""

from __future__ import annotations

import base64
import importlib
import os
import stat
import time
from pathlib import Path
from urllib.parse import urlencode

from memory import config

SOCKET_NAME = "worker.sock"
SECRET_NAME = "worker.secret"
# Long enough to click the link `make run` printed; single use makes a copy worthless after.
LOGIN_TOKEN_TTL_S = 600.0
# The WSGI environ key cmem_site/wsgi.py sets for connections that arrived on the Unix socket.
# Dotted keys cannot come from a client: HTTP headers only ever become HTTP_* keys.
OWNER_SOCKET_ENVIRON = "cmem.owner_socket"


def _random_token(nbytes: int) -> str:
    # The recipe of secrets.token_urlsafe; that module pulls in hmac and OpenSSL, which the
    # supervisor (it makes the secret and the login tokens) is kept free of.
    return base64.urlsafe_b64encode(os.urandom(nbytes)).rstrip(b"=").decode("ascii")


def _sha256_hex(text: str) -> str:
    """SHA-256 from CPython's built-in module, the same digest as hashlib's without mapping
    OpenSSL (~4 MB resident) into the supervisor."""
    for name in ("_sha2", "_sha256"):  # 3.12+, 3.11
        try:
            return str(importlib.import_module(name).sha256(text.encode()).hexdigest())
        except ImportError:
            continue
    # fallback only: hashlib maps OpenSSL, which the supervisor is kept free of
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def socket_path() -> Path:
    return config.data_dir() / SOCKET_NAME


def secret_path() -> Path:
    return config.data_dir() / SECRET_NAME


def login_tokens_dir(data_dir: Path | None = None) -> Path:
    return (data_dir or config.data_dir()) / "login-tokens"


def ensure_secret() -> str:
    """The worker's bearer secret, created (0600, O_EXCL) when missing."""
    path = secret_path()
    config.ensure_data_dir()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return read_secret() or _replace_secret()
    with os.fdopen(fd, "w") as fh:
        fh.write(_random_token(32) + "\n")
    return read_secret()


def _replace_secret() -> str:
    # An empty or unreadable file: write a fresh one atomically.
    config.write_atomic(secret_path(), (_random_token(32) + "\n").encode(), mode=0o600)
    return read_secret()


def read_secret() -> str:
    """The secret, or "" when there is none (or it is not a private regular file of ours)."""
    path = secret_path()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd, "r") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return ""
        return fh.read().strip()


def secret_matches(offered: str) -> bool:
    # supervisor start: hmac (and OpenSSL) only when a secret is checked
    import hmac

    expected = read_secret()
    return bool(expected) and bool(offered) and hmac.compare_digest(expected, offered)


def auth_headers() -> dict[str, str]:
    """Headers for an in-process TCP client of the local worker (CLI, benchmarks)."""
    secret = read_secret()
    return {"Authorization": f"Bearer {secret}"} if secret else {}


# --- one-time login tokens -----------------------------------------------------------------


def _token_file(raw: str) -> Path:
    return login_tokens_dir() / _sha256_hex(raw)


def login_token_create(data_dir: Path | None = None) -> str:
    """A fresh one-time token; only its hash is stored (a leaked directory listing grants nothing)."""
    folder = login_tokens_dir(data_dir)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _prune_tokens(folder)
    raw = _random_token(24)
    fd = os.open(
        folder / _sha256_hex(raw),
        os.O_WRONLY | os.O_CREAT | os.O_EXCL,
        0o600,
    )
    os.close(fd)
    return raw


def login_token_redeem(raw: str) -> bool:
    """True once per token, within its TTL. The rename is atomic, so two racing requests
    cannot both redeem it."""
    if not raw or len(raw) > 200:
        return False
    path = _token_file(raw)
    claimed = path.with_name(f"{path.name}.used.{os.getpid()}.{time.monotonic_ns()}")
    try:
        os.rename(path, claimed)
    except OSError:
        return False
    try:
        fresh = time.time() - claimed.stat().st_mtime <= LOGIN_TOKEN_TTL_S
    finally:
        claimed.unlink(missing_ok=True)
    return fresh


def _prune_tokens(folder: Path) -> None:
    now = time.time()
    for entry in folder.iterdir():
        try:
            if now - entry.stat().st_mtime > LOGIN_TOKEN_TTL_S:
                entry.unlink()
        except OSError:
            continue


def owner_login_url(base_url: str, next_path: str = "/", data_dir: Path | None = None) -> str:
    """The URL `cmem open` / `cmem start` print: it logs the owner's browser in once."""
    query = urlencode({"token": login_token_create(data_dir), "next": next_path})
    return f"{base_url.rstrip('/')}/auth/?{query}"


# --- what doctor reports ---------------------------------------------------------------------


def mode_report() -> list[tuple[str, bool, str]]:
    """(label, ok, detail) for the data dir, the secret and the socket."""
    rows: list[tuple[str, bool, str]] = []
    uid = os.getuid()
    for label, path, want in (
        ("data dir", config.data_dir(), 0o700),
        ("credential", secret_path(), 0o600),
    ):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            rows.append((label, False, f"{path} is missing"))
            continue
        mode = stat.S_IMODE(info.st_mode)
        ok = mode & 0o077 == 0 and info.st_uid == uid and not stat.S_ISLNK(info.st_mode)
        rows.append(
            (label, ok, f"{path} mode {mode:04o} (want {want:04o}), owner uid {info.st_uid}")
        )
    sock = socket_path()
    try:
        info = os.lstat(sock)
    except FileNotFoundError:
        rows.append(("socket", True, f"{sock} absent (worker not running)"))
    else:
        mode = stat.S_IMODE(info.st_mode)
        ok = stat.S_ISSOCK(info.st_mode) and info.st_uid == uid and mode & 0o077 == 0
        rows.append(("socket", ok, f"{sock} mode {mode:04o}, owner uid {info.st_uid}"))
    return rows
