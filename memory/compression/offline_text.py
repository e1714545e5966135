"""The offline compressor's sentences, per language (CLAUDE_MEM_LANGUAGE).

English and Simplified Chinese ship; any other language falls back to English (the model
providers write every language). Placeholders hold paths, symbols and commands, which stay
verbatim in every language.
"""

from __future__ import annotations

from memory.compression.language import language

TEMPLATES: dict[str, dict[str, str]] = {
    "en": {
        "edited": "Edited {path}: {gist}",
        "edited_many": "Edited {n} files: {gist}",
        "created": "Created {path}",
        "wrote": "Wrote {path}",
        "defines": "defines {symbols}",
        "gist_renamed": "renamed {old} to {new}",
        "gist_added": "added {symbols}",
        "gist_removed": "removed {symbols}",
        "gist_changed": "changed {symbols}",
        "gist_removed_line": "removed `{line}`",
        "gist_edited": "edited",
        "n_lines": " ({n} lines)",
        "full_stop": ".",
        "read": "Read {path}",
        "shell_appended": "Appended to {paths}",
        "shell_wrote": "Wrote {paths}",
        "shell_edited": "Edited {paths} with {tool}",
        "shell_moved": "Moved {src} to {dst}",
        "shell_copied": "Copied a file to {paths}",
        "shell_removed": "Removed {paths}",
        "shell_touched": "Created or touched {paths}",
        "shell_restored": "Restored {paths} from git",
        "shell_patched": "Applied a patch to {paths}",
        "shell_patched_unknown": "Applied a patch ({tool})",
        "shell_formatted": "Formatted {paths} with {tool}",
        "shell_hash": "Changed {paths} ({purpose})",
        "changed_outside": "{paths} changed outside the session",
        "tests_passed": "Tests passed ({tool})",
        "tests_failed": "Tests failed ({tool})",
        "failed": "{purpose} failed",
        "searched": "Searched for “{pattern}”",
        "listed": "Listed {target}",
        "viewed": "Viewed {target}",
        "counted": "Counted lines of {target}",
        "ran": "Ran {target}",
        "installed": "Installed {target} ({tool})",
        "committed": "Committed: {target}",
        "git": "Ran git {target}",
        "fetched": "Fetched {target}",
        "summary_session": "Session work",
        "summary_read": "read {paths}",
        "summary_modified": "modified {paths}",
        "summary_no_changes": "No file changes.",
        "summary_failures": "{n} failing step(s), last: {last}",
        "summary_last_message": "Agent's last message: {text}",
        "summary_fix_next": "Fix: {failure}",
        "summary_more": "{first} and {n} more",
    },
    "zh": {
        "edited": "编辑了 {path}：{gist}",
        "edited_many": "编辑了 {n} 个文件：{gist}",
        "created": "新建了 {path}",
        "wrote": "写入了 {path}",
        "defines": "定义了 {symbols}",
        "gist_renamed": "将 {old} 重命名为 {new}",
        "gist_added": "新增了 {symbols}",
        "gist_removed": "删除了 {symbols}",
        "gist_changed": "修改了 {symbols}",
        "gist_removed_line": "删除了 `{line}`",
        "gist_edited": "做了修改",
        "n_lines": "（{n} 行）",
        "full_stop": "。",
        "read": "阅读了 {path}",
        "shell_appended": "向 {paths} 追加了内容",
        "shell_wrote": "写入了 {paths}",
        "shell_edited": "用 {tool} 编辑了 {paths}",
        "shell_moved": "将 {src} 移动到 {dst}",
        "shell_copied": "复制文件到 {paths}",
        "shell_removed": "删除了 {paths}",
        "shell_touched": "创建或更新了 {paths}",
        "shell_restored": "从 git 恢复了 {paths}",
        "shell_patched": "对 {paths} 应用了补丁",
        "shell_patched_unknown": "应用了补丁（{tool}）",
        "shell_formatted": "用 {tool} 格式化了 {paths}",
        "shell_hash": "修改了 {paths}（{purpose}）",
        "changed_outside": "{paths} 在会话之外被修改",
        "tests_passed": "测试通过（{tool}）",
        "tests_failed": "测试失败（{tool}）",
        "failed": "{purpose}失败",
        "searched": "搜索了“{pattern}”",
        "listed": "列出了 {target}",
        "viewed": "查看了 {target}",
        "counted": "统计了 {target} 的行数",
        "ran": "运行了 {target}",
        "installed": "安装了 {target}（{tool}）",
        "committed": "提交了：{target}",
        "git": "运行了 git {target}",
        "fetched": "获取了 {target}",
        "summary_session": "本次会话的工作",
        "summary_read": "阅读了 {paths}",
        "summary_modified": "修改了 {paths}",
        "summary_no_changes": "没有文件改动。",
        "summary_failures": "{n} 个步骤失败，最后一个：{last}",
        "summary_last_message": "助手的最后一条消息：{text}",
        "summary_fix_next": "修复：{failure}",
        "summary_more": "{first}，以及另外 {n} 项",
    },
}


def t(key: str, **values: object) -> str:
    """The sentence `key` in the user's language, filled in."""
    table = TEMPLATES.get(language(), TEMPLATES["en"])
    return table.get(key, TEMPLATES["en"][key]).format(**values)


def joined(paths: list[str], limit: int = 3) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" (+{len(paths) - limit})" if len(paths) > limit else "")
