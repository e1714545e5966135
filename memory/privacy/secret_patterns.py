"""The regex plugins of detect-secrets, as data: the one rule set every redaction uses.

Importing detect-secrets costs ~0.2-1 s, which the hook client cannot pay on its spool path;
so the worker and the spool used different rules, and the spool kept what only a plugin
knows. This snapshot makes them the same: memory.privacy compiles these patterns
lazily (only those whose trigger literal occurs) without importing detect-secrets.
Generated from detect-secrets 1.5.0 by `python -m memory.privacy.secret_patterns`;
tests/privacy/test_redactor_everywhere.py fails when the installed plugins differ.
"""

from __future__ import annotations

import re

# detect-secrets plugins left out: public IPs are not secrets; the entropy and keyword plugins
# (not regex-based, so never collected) flag every hash and `token = …` line of ordinary code.
# The keyword-assignment plugins (IBM, Cloudant, SoftLayer) cost a millisecond each per 16 kB
# and are covered by cmem's own `*key=`/`*password=` assignment rule.
SKIPPED_PLUGINS = {
    "IPPublicDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "CloudantDetector",
    "SoftlayerDetector",
}

DETECT_SECRETS_VERSION = "1.5.0"

# (kind, pattern, flags): kind is the plugin's secret_type slugged.
PLUGIN_PATTERNS: tuple[tuple[str, str, int], ...] = (
    ("artifactory-credentials", '(?:\\s|=|:|"|^)AKC[a-zA-Z0-9]{10,}(?:\\s|"|$)', 0),
    ("artifactory-credentials", '(?:\\s|=|:|"|^)AP[\\dABCDEF][a-zA-Z0-9]{8,}(?:\\s|"|$)', 0),
    ("aws-access-key", "(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}", 0),
    (
        "aws-access-key",
        "aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[\\'\\\"]([0-9a-zA-Z/+]{40})[\\'\\\"]",
        re.IGNORECASE,
    ),
    ("azure-storage-account-access-key", "AccountKey=[a-zA-Z0-9+\\/=]{88}", 0),
    (
        "basic-auth-credentials",
        "://[^:/\\?\\#\\[\\]@!\\$\\&'\\(\\)\\*\\+,;=\\s]+:([^:/\\?\\#\\[\\]@!\\$\\&'\\(\\)\\*\\+,;=\\s]+)@",
        0,
    ),
    ("discord-bot-token", "[MNO][a-zA-Z\\d_-]{23,25}\\.[a-zA-Z\\d_-]{6}\\.[a-zA-Z\\d_-]{27}", 0),
    ("github-token", "(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}", 0),
    ("gitlab-token", "(glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_\\-]{20,50}(?!\\w)", 0),
    ("gitlab-token", "GR1348941[A-Za-z0-9_\\-]{20,50}(?!\\w)", 0),
    ("gitlab-token", "glcbt-([0-9a-fA-F]{2}_)?[A-Za-z0-9_\\-]{20,50}(?!\\w)", 0),
    ("gitlab-token", "glimt-[A-Za-z0-9_\\-]{25}(?!\\w)", 0),
    ("gitlab-token", "glptt-[A-Za-z0-9_\\-]{40}(?!\\w)", 0),
    ("gitlab-token", "glagent-[A-Za-z0-9_\\-]{50,1024}(?!\\w)", 0),
    ("gitlab-token", "gloas-[A-Za-z0-9_\\-]{64}(?!\\w)", 0),
    ("json-web-token", "eyJ[A-Za-z0-9-_=]+\\.[A-Za-z0-9-_=]+\\.?[A-Za-z0-9-_.+/=]*?", 0),
    ("mailchimp-access-key", "[0-9a-z]{32}-us[0-9]{1,2}", 0),
    ("npm-tokens", "\\/\\/.+\\/:_authToken=\\s*((npm_.+)|([A-Fa-f0-9-]{36})).*", 0),
    ("openai-token", "sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}", 0),
    ("private-key", "BEGIN DSA PRIVATE KEY", 0),
    ("private-key", "BEGIN EC PRIVATE KEY", 0),
    ("private-key", "BEGIN OPENSSH PRIVATE KEY", 0),
    ("private-key", "BEGIN PGP PRIVATE KEY BLOCK", 0),
    ("private-key", "BEGIN PRIVATE KEY", 0),
    ("private-key", "BEGIN RSA PRIVATE KEY", 0),
    ("private-key", "BEGIN SSH2 ENCRYPTED PRIVATE KEY", 0),
    ("private-key", "PuTTY-User-Key-File-2", 0),
    ("pypi-token", "pypi-AgEIcHlwaS5vcmc[A-Za-z0-9-_]{70,}", 0),
    ("pypi-token", "pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9-_]{70,}", 0),
    ("sendgrid-api-key", "SG\\.[a-zA-Z0-9_-]{22}\\.[a-zA-Z0-9_-]{43}", 0),
    ("slack-token", "xox(?:a|b|p|o|s|r)-(?:\\d+-)+[a-z0-9]+", re.IGNORECASE),
    (
        "slack-token",
        "https://hooks\\.slack\\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+",
        re.IGNORECASE | re.VERBOSE,
    ),
    ("square-oauth-secret", "sq0csp-[0-9A-Za-z\\\\\\-_]{43}", 0),
    ("stripe-access-key", "(?:r|s)k_live_[0-9a-zA-Z]{24}", 0),
    ("telegram-bot-token", "\\d{8,10}:[0-9A-Za-z_-]{35}", 0),
    ("twilio-api-key", "AC[a-z0-9]{32}", 0),
    ("twilio-api-key", "SK[a-z0-9]{32}", 0),
)


def live_plugin_patterns() -> list[tuple[str, str, int]]:
    """The same list read from the installed detect-secrets (for the drift test and to
    regenerate this file); imports detect-secrets, so never on a hot path."""
    # detect-secrets: the drift test and regeneration only, never on a hot path
    import importlib
    import pkgutil

    import detect_secrets.plugins as plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    found: list[tuple[str, str, int]] = []
    for info in pkgutil.iter_modules(plugins.__path__):
        module = importlib.import_module(f"detect_secrets.plugins.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, RegexBasedDetector)
                and obj is not RegexBasedDetector
                and obj.__module__ == module.__name__
                and obj.__name__ not in SKIPPED_PLUGINS
            ):
                for pattern in obj.denylist:  # type: ignore[attr-defined]
                    flags = pattern.flags & ~re.UNICODE
                    kind = re.sub(r"[^a-z0-9]+", "-", str(obj.secret_type).lower()).strip("-")
                    found.append((kind, pattern.pattern, flags))
    return found


if __name__ == "__main__":
    for entry in live_plugin_patterns():
        print(entry)
