"""`cmem install --opencode` / `uninstall --opencode` / doctor: cmem's plugin and MCP server in
OpenCode's global config folder (`$OPENCODE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/opencode`,
else `~/.config/opencode`).

OpenCode loads every `.js`/`.ts` file in `plugin/` at start, with no trust step, so cmem's
hooks are one file of its own there (opencode_plugin.js with the `cmem` command filled in):
nothing of the user's is touched, uninstall removes exactly that file. The MCP server goes
into `opencode.json` under `mcp.cmem`, the rest of the file kept (backed up first).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory import config
from memory.agents.install import claude_code as installer
from memory.agents.install.check import Check

name = "opencode"
label = "OpenCode"
PLUGIN_FILE = "cmem.js"
MCP_SERVER = "cmem"
# cmem event -> ms the plugin waits for `cmem hook` before answering {} itself.
TIMEOUTS_MS = {
    "context": 30_000,
    "session-init": 30_000,
    "file-context": 10_000,
    "observation": 30_000,
    "summarize": 60_000,
    "session-end": 10_000,
}


def opencode_home() -> Path:
    explicit = os.environ.get("OPENCODE_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".config") / "opencode"


def plugin_source(*, command: str) -> str:
    template = (Path(__file__).with_name("opencode_plugin.js")).read_text(encoding="utf-8")
    return template.replace('"__CMEM_COMMAND__"', json.dumps(command)).replace(
        "__CMEM_TIMEOUTS__", json.dumps(TIMEOUTS_MS)
    )


@dataclass(frozen=True)
class PluginFolder:
    """An agent that loads cmem's plugin file from a folder and keeps MCP servers under
    `mcp` in a JSON config beside it: OpenCode, and Kilo (its fork) pointed elsewhere."""

    platform: str  # `cmem install --<platform>`
    label: str
    binary: str
    home: Callable[[], Path]
    config_file: str
    source: Callable[[str], str]  # the plugin's text for a `cmem` command
    new_config: dict[str, Any] = field(default_factory=dict)  # a config file made from nothing

    def plugin_path(self, home: Path | None = None) -> Path:
        return (home or self.home()) / "plugin" / PLUGIN_FILE

    def config_path(self, home: Path | None = None) -> Path:
        return (home or self.home()) / self.config_file

    def detected(self) -> bool:
        return bool(shutil.which(self.binary)) or self.home().is_dir()

    def _mcp_set(self, path: Path, entry: dict[str, Any] | None) -> str:
        if not path.exists() and path.with_suffix(".jsonc").exists():
            return f"MCP server not registered: {path.with_suffix('.jsonc')} is JSONC; add mcp.cmem by hand"
        state, backup = installer.server_entry_set(
            path, key="mcp", name=MCP_SERVER, entry=entry, new_file=self.new_config
        )
        return installer.server_entry_report(path, state, backup, name=MCP_SERVER)

    def install(self, *, command: str, home: Path | None = None, mcp: bool = True) -> list[str]:
        path = self.plugin_path(home)
        source = self.source(command).encode()
        lines = []
        if path.exists() and path.read_bytes() == source:
            lines.append(f"cmem {self.label} plugin already installed in {path}")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            backup = None
            if path.exists():
                backup = path.with_name(f".{path.name}.bak")
                backup.write_bytes(path.read_bytes())
            config.write_atomic(path, source, mode=0o644)
            note = f" (backup: {backup})" if backup else ""
            lines.append(f"cmem {self.label} plugin installed in {path}{note}")
        if mcp:
            entry = {"type": "local", "command": [command, "mcp"], "enabled": True}
            lines.append(self._mcp_set(self.config_path(home), entry))
        return lines

    def uninstall(self, *, home: Path | None = None, keep_mcp: bool = False) -> list[str]:
        path = self.plugin_path(home)
        lines = [
            installer.file_remove_with_backup(path, f"cmem {self.label} plugin")
            or f"no cmem plugin in {path}"
        ]
        if not keep_mcp:
            note = self._mcp_set(self.config_path(home), None)
            if note:
                lines.append(note)
        return lines

    def doctor_checks(self, *, home: Path | None = None) -> list[Any]:
        path = self.plugin_path(home)
        if not path.exists():
            return []
        again = f"run `cmem install --{self.platform}`"
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            command = json.loads(text.split("const CMEM = ", 1)[1].split(";", 1)[0])
        except (IndexError, ValueError):
            return [Check("fail", f"{path} is not cmem's plugin as written", again)]
        checks = [Check("ok", f"cmem {self.label} plugin in {path}")]
        if command != "cmem" and not os.access(command, os.X_OK):
            checks.append(
                Check(
                    "fail",
                    f"the {self.label} plugin runs {command}, which is not executable",
                    f"{again} again",
                )
            )
        elif command == "cmem" and not shutil.which("cmem"):
            checks.append(
                Check(
                    "fail",
                    f"the {self.label} plugin runs `cmem`, which is not on the PATH",
                    f"{again} from the installation you use",
                )
            )
        try:
            data, _ = installer.settings_read(self.config_path(home))
        except installer.InstallError as exc:
            data = {}
            checks.append(Check("warn", str(exc)))
        if MCP_SERVER not in (data.get("mcp") or {}):
            checks.append(
                Check("warn", f"cmem's MCP server is not in {self.config_path(home)}", again)
            )
        return checks


AGENT = PluginFolder(
    platform=name,
    label=label,
    binary="opencode",
    home=opencode_home,
    config_file="opencode.json",
    source=lambda command: plugin_source(command=command),
    new_config={"$schema": "https://opencode.ai/config.json"},
)
detected = AGENT.detected
install = AGENT.install
uninstall = AGENT.uninstall
doctor_checks = AGENT.doctor_checks
