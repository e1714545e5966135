"""cmem settings: one registry of every setting, read env > settings.json > default.

Stdlib only: Django's settings module imports it. The rooms, one way down:
- memory/config/registry.py: one record per setting (and per internal switch), the source of
  the defaults, bounds, the settings page, `cmem settings_table` and the reference page;
- memory/config/sources.py: the data dir, `settings.json`, `load()` and its snapshot, `save()`;
- memory/config/values.py: one value as text, whole number, switch or list, checked against
  its record;
- memory/config/typed.py: typed readers of the settings hot paths read (`read_gate()`...);
- memory/config/install_route.py: how the agent reached cmem (names the MCP tools);
- memory/config/reference.py: the Markdown made from the registry.
Callers use `from memory import config` and this module's names.
"""

from __future__ import annotations

import os

from memory.config import registry
from memory.config.install_route import MCP_TOOLS, install_route, install_route_setting
from memory.config.registry import INT_BOUNDS, SETTINGS
from memory.config.sources import (
    SETTLE_NS,
    data_dir,
    ensure_data_dir,
    ensure_settings_file,
    load,
    problems,
    read_file,
    save,
    settings_path,
    settings_snapshot,
    stat_settled,
    write_atomic,
)
from memory.config.typed import (
    codex_shell_read_gate,
    consolidate_every_hours,
    consolidate_max_tokens,
    consolidate_mode,
    context_observations,
    context_pinned_tokens,
    context_session_count,
    context_tokens,
    database_url,
    deliverables_enabled,
    deliverables_max_bytes,
    demote_after_weeks,
    excluded_projects,
    failure_recall,
    field_cap,
    project_identity,
    read_gate,
    read_gate_limit,
    read_gate_min_bytes,
    read_gate_turn_tokens,
    read_gate_window,
    redact_secrets,
    require_token,
    semantic_inject,
    semantic_inject_limit,
    skip_tools,
    time_zone,
    worker_host,
)
from memory.config.values import SettingsError, _clamp_logged, get, get_bool, get_int, get_list

VERSION = "0.1.0"
PROTOCOL_VERSION = 1
# The zone the user started cmem in. Django overwrites TZ with settings.TIME_ZONE (UTC) when
# it loads, and children inherit that, so the first process records the original for all
# (memory.clock shows the agent local times in it).
os.environ.setdefault("CMEM_MACHINE_TZ", os.environ.get("TZ", ""))

__all__ = [
    "INT_BOUNDS",
    "MCP_TOOLS",
    "PROTOCOL_VERSION",
    "SETTINGS",
    "SETTLE_NS",
    "VERSION",
    "SettingsError",
    "_clamp_logged",
    "codex_shell_read_gate",
    "context_observations",
    "context_session_count",
    "context_tokens",
    "context_pinned_tokens",
    "consolidate_mode",
    "consolidate_every_hours",
    "consolidate_max_tokens",
    "demote_after_weeks",
    "data_dir",
    "database_url",
    "deliverables_enabled",
    "deliverables_max_bytes",
    "ensure_data_dir",
    "ensure_settings_file",
    "excluded_projects",
    "failure_recall",
    "field_cap",
    "get",
    "get_bool",
    "get_int",
    "get_list",
    "install_route",
    "install_route_setting",
    "load",
    "problems",
    "project_identity",
    "read_file",
    "read_gate",
    "read_gate_limit",
    "read_gate_min_bytes",
    "read_gate_turn_tokens",
    "read_gate_window",
    "redact_secrets",
    "registry",
    "require_token",
    "save",
    "semantic_inject",
    "semantic_inject_limit",
    "settings_path",
    "settings_snapshot",
    "skip_tools",
    "stat_settled",
    "time_zone",
    "worker_host",
    "write_atomic",
]
