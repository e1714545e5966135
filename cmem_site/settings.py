"""The one settings module: env-driven, works with zero env vars.

Everything a user sets lives in `<data dir>/settings.json` or `CLAUDE_MEM_*` env vars
(see memory/config/); the few Django-only knobs below are `CMEM_*` env vars, listed as
internal switches in memory/config/registry.py.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

from memory import config


def envbool(name: str, default: str = "False") -> bool:
    return os.environ.get(name, default).strip().lower() in {"1", "true", "yes", "on"}


def envint(name: str, default: str) -> int:
    return int(os.environ.get(name, default))


BASE_DIR = Path(__file__).resolve().parent.parent
# templates/ and static/ sit at the top of a checkout; a wheel carries them inside cmem_site/
# (pyproject.toml force-include), since site-packages/templates would be no package's.
_PACKAGE_DIR = Path(__file__).resolve().parent
ASSET_DIR = _PACKAGE_DIR if (_PACKAGE_DIR / "templates").is_dir() else BASE_DIR
# Everything cmem writes (database, queue, logs, spool, deliverables) is for this user only.
os.umask(0o077)
CMEM = config.load()
DATA_DIR = config.ensure_data_dir()
config.ensure_settings_file()


def _secret_key() -> str:
    if os.environ.get("CMEM_SECRET_KEY"):
        return os.environ["CMEM_SECRET_KEY"]
    path = DATA_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        key = secrets.token_urlsafe(50)
        config.write_atomic(path, key.encode())
        return key


SECRET_KEY = _secret_key()
DEBUG = envbool("CMEM_DEBUG")

# Loopback names only: a web page cannot reach the API through DNS rebinding, because its
# Host header carries the attacker's name. Team mode adds the shared worker's own name.
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]", "::1"] + [
    h.strip() for h in os.environ.get("CMEM_ALLOWED_HOSTS", "").split(",") if h.strip()
]

INSTALLED_APPS = [
    "whitenoise.runserver_nostatic",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "huey.contrib.djhuey",
    # Installed so /api/docs serves Swagger UI from ninja's own static files, not a CDN.
    "ninja",
    "memory",
    "deliverables",
]

MIDDLEWARE = [
    # /api/ requests take this list minus static files, CSRF and messages (memory/api/short_chain.py).
    "memory.api.short_chain.ApiLane",
    "django.middleware.security.SecurityMiddleware",
    # Browser writes from other sites are refused; the JSON API has no CSRF token (memory/access/cross_site.py).
    "memory.access.cross_site.CrossSiteWriteGuard",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Team mode: every /api/ call carries a valid per-user token (memory/team/auth.py).
    "memory.team.auth.ApiTokenMiddleware",
    # Local mode: only the owner (Unix socket, worker.secret, or session from `cmem open`).
    "memory.access.owner_auth.OwnerOnlyMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # One Content-Security-Policy on every response (django-csp): pages load nothing remote,
    # so a hostile deliverable or recorded text cannot pull in a tracker or a script.
    "memory.access.csp_headers.StaticCSPMiddleware",
]

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

ROOT_URLCONF = "cmem_site.urls"
WSGI_APPLICATION = "cmem_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [ASSET_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # A degraded observer (API down, no key, budget spent) is shown on every page.
                "memory.context_processors.observer_banner",
            ],
        },
    },
]


def _team_extra(setting: str, module: str) -> None:
    """Team mode's drivers are the `team` extra: say so in one line instead of Django's
    "Error loading psycopg2 or psycopg module" traceback."""
    if importlib.util.find_spec(module) is None:
        raise ImproperlyConfigured(
            f"{setting} names a team-mode server, but {module} is not installed: install the "
            "team extra into cmem's environment (`pipx install 'cmemory[team]'`, "
            "`uv tool install 'cmemory[team]'`, or from a checkout `make run EXTRAS=team`)"
        )


def _database() -> dict[str, object]:
    url = CMEM.get("CLAUDE_MEM_DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        _team_extra("CLAUDE_MEM_DATABASE_URL", "psycopg")
        parts = urlparse(url)
        # libpq's spelling for a Unix socket: postgresql://user@/db?host=/run/postgresql
        socket = parse_qs(parts.query).get("host", [""])[0]
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")) or "cmem",
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": socket or parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": DATA_DIR / "cmem.sqlite3",
        # Persistent connections: the pragmas below run once per thread, not per request.
        "CONN_MAX_AGE": None,
        "OPTIONS": {
            # The web process, hook requests and the huey consumer all write: wait for the
            # lock instead of failing, and take it up front so two writers never deadlock.
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                "PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON; "
                # No mmap: each connection mapped the file itself, and the kernel's
                # fault-around mapped 64 kB around every index page read, so one count over
                # an index showed as 9 MB more resident per connection (idle RSS).
                # Pages come from the OS page cache by pread into a private cache of 4 MB at
                # most per connection, filled only as pages are touched: the hot indexes of
                # 10k observations (FTS, by-file, recent) fit, the rest is a syscall away.
                "PRAGMA mmap_size=0; PRAGMA cache_size=-4096; PRAGMA temp_store=MEMORY;"
            ),
            "transaction_mode": "IMMEDIATE",
            "timeout": 5,
        },
    }


DATABASES = {"default": _database()}

AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in (
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    )
]
# The admin login counts failures per username and client in the cache (memory/access/login_throttle.py).
AUTHENTICATION_BACKENDS = ["memory.access.login_throttle.ThrottledModelBackend"]
# The owner's session (memory/access/owner_auth.py): never readable by scripts, never sent cross-site.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Strict"
LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("CMEM_TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [ASSET_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns about a missing root on every start
WHITENOISE_USE_FINDERS = True

DATA_UPLOAD_MAX_MEMORY_SIZE = envint("CMEM_MAX_REQUEST_BYTES", str(8 * 1024 * 1024))

_queue_url = CMEM.get("CLAUDE_MEM_QUEUE_URL", "")
HUEY: dict[str, object] = {
    # One Redis serves many queues by name; tests and side-by-side installs pick their own.
    "name": os.environ.get("CMEM_HUEY_NAME", "cmem"),
    "immediate": envbool("CMEM_HUEY_IMMEDIATE"),
    "consumer": {"workers": 2, "worker_type": "thread", "periodic": True},
}
if _queue_url.startswith("redis"):
    _team_extra("CLAUDE_MEM_QUEUE_URL", "redis")
    HUEY.update({"huey_class": "huey.PriorityRedisHuey", "url": _queue_url})
else:
    HUEY.update({"huey_class": "huey.SqliteHuey", "filename": str(DATA_DIR / "huey.sqlite3")})

LOG_DIR = DATA_DIR / "logs"
LOG_DIR.mkdir(mode=0o700, exist_ok=True)
_level = {"WARN": "WARNING", "SILENT": "CRITICAL"}.get(
    CMEM.get("CLAUDE_MEM_LOG_LEVEL", "INFO").upper(),
    CMEM.get("CLAUDE_MEM_LOG_LEVEL", "INFO").upper(),
)
if _level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    _level = "INFO"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        # Every line redacted like stored text (memory/privacy/log_redaction.py).
        "plain": {
            "()": "memory.privacy.log_redaction.RedactingFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(process)d: %(message)s",
        }
    },
    "handlers": {
        # Several processes write this file, so none of them may rotate it (each would keep
        # writing to the renamed file): the supervisor rotates it (memory/worker/supervisor.py), and
        # WatchedFileHandler reopens the new file when it notices the rename.
        "file": {
            "class": "logging.handlers.WatchedFileHandler",
            "filename": str(LOG_DIR / "cmem.log"),
            "formatter": "plain",
        },
    },
    "root": {"handlers": ["file"], "level": _level},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

LOGIN_URL = "/admin/login/"
