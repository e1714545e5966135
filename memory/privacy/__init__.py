"""What never gets stored, in one room: `redaction` (private tags, secrets and the bulk of huge
fields, removed from everything captured), `secret_patterns` (detect-secrets' regexes as
data), `secret_locations` (the paths no file tool's content is kept from), `spool_scrub` (the
same rules for what the hook client spools) and `log_redaction` (and for log lines).

This package body stays empty: `secret_locations` is imported by the MCP server and the
hook's handover, which must not pay for compiling the redactor's rules."""
