"""Optional encryption of what sync pushes: a git remote keeps whatever was ever pushed.

Each file is sealed with AES-256-GCM (the `cryptography` library's AEAD: maintained by
PyCA, audited primitives, already a dependency of the stack) under a fresh random nonce,
with a key kept outside the remote (<data dir>/sync/key, mode 0600). A git filter such
as git-crypt was not used: it needs its own binary, and it leaves file names readable.

File names are opaque: objects/<2 hex>/<HMAC-SHA256(key, gid)>, so a listing of the
remote shows neither projects nor dates. The associated data of each file is that name,
and the gid inside the sealed file must hash to it again: a file moved to another name,
or one sealed with another key, fails to open instead of being imported as something else.
(The gid itself is not the associated data because a reader must know it before
opening the file, and a ULID in the clear would give away when the memory was made.)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from memory import config
from memory.travel.sync.state import sync_dir

KEY_BYTES = 32
NONCE_BYTES = 12
MAGIC = b"cmem-sealed-1\n"
KEY_ENV = "CLAUDE_MEM_SYNC_KEY"


class KeyProblem(ValueError):
    """A key that cannot be used (malformed, or not the key the remote was sealed with)."""


def key_generate() -> str:
    return _encode(secrets.token_bytes(KEY_BYTES))


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def key_parse(text: str) -> bytes:
    cleaned = text.strip()
    try:
        raw = base64.urlsafe_b64decode(cleaned + "=" * (-len(cleaned) % 4))
    except ValueError:
        raw = b""
    if len(raw) != KEY_BYTES:
        raise KeyProblem("not a cmem sync key (43 characters, as `cmem sync --export-key` prints)")
    return raw


def key_path() -> os.PathLike[str]:
    return sync_dir() / "key"


def key_text() -> str:
    """The key in use: CLAUDE_MEM_SYNC_KEY (a container's environment), else the key file;
    "" when this machine has none."""
    given = config.get(KEY_ENV).strip()
    if given:
        return given
    try:
        return (sync_dir() / "key").read_text().strip()
    except FileNotFoundError:
        return ""


def key_save(text: str) -> None:
    key_parse(text)
    config.write_atomic(sync_dir() / "key", (text.strip() + "\n").encode(), mode=0o600)


class Sealer:
    """Seals and opens the files of one encrypted remote."""

    def __init__(self, raw: bytes) -> None:
        def derive(purpose: bytes) -> bytes:
            kdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose)
            return kdf.derive(raw)

        # Separate keys per use, so the name HMAC never shares a key with the cipher.
        self._aead = AESGCM(derive(b"cmem sync: files"))
        self._names = derive(b"cmem sync: names")
        self.key_id = derive(b"cmem sync: key id").hex()[:32]

    def name_for(self, gid: str) -> str:
        digest = hmac.new(self._names, gid.encode(), hashlib.sha256).hexdigest()
        return f"objects/{digest[:2]}/{digest}"

    def seal(self, name: str, plaintext: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE_BYTES)
        return MAGIC + nonce + self._aead.encrypt(nonce, plaintext, name.encode())

    def open(self, name: str, sealed: bytes) -> bytes:
        if not sealed.startswith(MAGIC):
            raise KeyProblem(f"{name}: not a sealed cmem file")
        body = sealed[len(MAGIC) :]
        nonce, ciphertext = body[:NONCE_BYTES], body[NONCE_BYTES:]
        try:
            return self._aead.decrypt(nonce, ciphertext, name.encode())
        except InvalidTag:
            raise KeyProblem(
                f"{name}: does not open with this key (altered, or another key)"
            ) from None
