"""Log lines go through the redactor too: a log line is stored text like any other.

A warning that quotes a tool input, an exception whose message holds a prompt, a traceback
of a request body: all of it lands in <data dir>/logs/cmem.log. The formatter applies the
same rules as the database and the spool (private passages emptied, secrets redacted) to
every formatted record, traceback included, so no call site has to remember to.
"""

from __future__ import annotations

import logging

from memory.privacy import redaction


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redaction.redact_text(redaction.strip_tags(super().format(record)))
