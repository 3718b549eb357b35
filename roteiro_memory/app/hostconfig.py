"""What ``roteiro-memory setup HOST`` writes into a coding agent host's
configuration, merged into what is there: pure, from text to text.

Each host keeps its project configuration in files of its own shape:

* **Claude Code** -- ``.mcp.json``: ``{"mcpServers": {NAME: {"type": "stdio",
  "command", "args", "env"}}}``; ``.claude/settings.json``: ``{"hooks":
  {EVENT: [{"matcher": TOOLS, "hooks": [{"type": "command", "command"}]}]}}``
  (``matcher`` only for tool events);
* **Cursor** -- ``.cursor/mcp.json``: ``{"mcpServers": {NAME: {"command",
  "args"}}}``;
* **Codex** -- ``.codex/config.toml`` (read in a trusted project): a table
  ``[mcp_servers.NAME]`` with ``command`` and ``args``.

What holds (:func:`merge`):

* **Only ours changes.**  Our server entry is the one named
  :data:`SERVER_NAME`: one that runs ``roteiro-memory mcp`` (at any path,
  with any options after ``mcp``) gets this installation's ``command`` and
  keeps the rest as the user left it -- an ``env`` naming the store, its
  options, a host's timeout; in TOML only its ``command`` line is
  rewritten -- and any other is replaced whole.  Our hooks are the command hooks whose command runs
  ``roteiro-memory hook`` (at any path, with any of ``hook``'s options, or
  as ``python -m roteiro_memory hook``).  One as ``setup`` writes it (the
  command's path and ``hook``) is rewritten with this installation's path
  (its other settings, a ``timeout``, kept), a second such copy in one
  event dropped; one the user changed (``hook
  --budget 800``) is theirs, kept as written, and stands for ours in its
  event.  Everything else in the file -- other servers, other hooks, other
  settings, their order -- is kept as it was.
* **Idempotent.**  Merging into what a merge wrote gives the same text: a
  second ``setup`` changes nothing and says so.
* **Never clobbering.**  A file that does not parse, or whose parts are not
  the shapes above (``mcpServers`` not an object, say), is refused by
  :class:`ConfigRefused` naming the file and what is wrong; nothing is
  written.  TOML is edited as text (the standard library reads TOML but does
  not write it): our table is appended, or replaced where it stands, and the
  result is parsed again and must hold exactly what was there besides it.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from typing import NoReturn

from roteiro_memory.errors import UsageError, byte_order_mark, excerpt, json_excerpt
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    JSON = Any

__all__ = [
    "HOOK_EVENTS",
    "HOSTS",
    "SERVER_NAME",
    "ConfigRefused",
    "Edit",
    "Host",
    "merge",
    "plan",
]

SERVER_NAME = "roteiro-memory"

HOOK_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("SessionStart", None),
    ("PreToolUse", "Read|Edit|Write|MultiEdit|NotebookEdit"),
    ("PostToolUse", "Edit|Write|MultiEdit|NotebookEdit"),
    ("PostToolUseFailure", "Bash"),
    ("Stop", None),
    ("PreCompact", None),
)
"""The Claude Code events ``roteiro-memory hook`` answers, with the tools
each is matched to (None: the event has no matcher, or every source)."""


class ConfigRefused(UsageError):
    """A configuration file ``setup`` will not touch: it names the file and
    what is wrong; nothing was written."""


@valueclass
class Host:
    """A host ``setup`` configures: its name and the files it writes."""

    name: str
    files: tuple[str, ...]
    hooks: bool
    """Whether the host runs ``roteiro-memory hook`` (Claude Code does)."""


HOSTS: dict[str, Host] = {
    "claude-code": Host("claude-code", (".mcp.json", ".claude/settings.json"), hooks=True),
    "cursor": Host("cursor", (".cursor/mcp.json",), hooks=False),
    "codex": Host("codex", (".codex/config.toml",), hooks=False),
}


@valueclass
class Edit:
    """One file's configuration before and after a merge."""

    path: str
    before: str | None
    """The file's text, or None when there was none."""
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


def _server(command: str, *, typed: bool) -> JSON:
    entry: JSON = {"command": command, "args": ["mcp"]}
    return {"type": "stdio", **entry, "env": {}} if typed else entry


def _serves_ours(entry: object) -> bool:
    """Whether a server entry runs ``roteiro-memory mcp`` (at any path, with
    any options after ``mcp``): one whose ``command`` alone is rewritten,
    the rest -- an ``env`` naming the store, options, a timeout -- the
    user's, kept."""
    if not isinstance(entry, dict):
        return False
    command, args = entry.get("command"), entry.get("args")
    return (
        isinstance(command, str)
        and os.path.basename(command) == SERVER_NAME
        and isinstance(args, list)
        and args[:1] == ["mcp"]
    )


def _our_server(entry: object, command: str, *, typed: bool) -> JSON:
    """The server entry to write where ``entry`` was: ours at this
    installation's path, or that entry, ours already, with only its
    ``command`` rewritten (:func:`_serves_ours`)."""
    if isinstance(entry, dict) and _serves_ours(entry):
        return {**entry, "command": command}
    return _server(command, typed=typed)


def _hook_command(command: str) -> str:
    return f"{shlex.quote(command)} hook"


_PYTHON = re.compile(r"python[0-9.]*")
"""An interpreter's name, as ``python -m roteiro_memory`` starts it."""

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)
"""An environment variable set before the command (``NAME=value``)."""


def _hook_words(hook: object) -> list[str] | None:
    """The words of a Claude Code command hook, or None when it is not one
    (or its command does not parse as a shell's words)."""
    if not isinstance(hook, dict) or hook.get("type") != "command":
        return None
    command = hook.get("command")
    if not isinstance(command, str):
        return None
    try:
        return shlex.split(command)
    except ValueError:
        return None


def _runs_hook(words: list[str]) -> bool:
    """Whether ``words`` run ``roteiro-memory hook``: after any ``NAME=value``
    (``env`` first or not), our command -- ``roteiro-memory`` at any path, or
    ``python -m roteiro_memory`` -- then, past its options before the
    command (``--db PATH``, ``--no-sync``), ``hook``, with whatever options
    follow.  Another program that only ends with our name
    (``my-roteiro-memory``), or ours running another command, is not it."""
    rest = words[1:] if words[:1] == ["env"] else words
    while rest and _ASSIGNMENT.fullmatch(rest[0]):
        rest = rest[1:]
    if not rest:
        return False
    program = os.path.basename(rest[0])
    if program == SERVER_NAME:
        rest = rest[1:]
    elif _PYTHON.fullmatch(program) and rest[1:3] == ["-m", "roteiro_memory"]:
        rest = rest[3:]
    else:
        return False
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] == "--db" else rest[1:]
    return rest[:1] == ["hook"]


_PLAIN = "plain"
"""A handler of ours as ``setup`` writes it: the command at some path and
``hook``, nothing else -- rewritten with this installation's path."""
_CHANGED = "changed"
"""A handler of ours the user wrote or changed (``hook``'s options, another
interpreter, environment variables): theirs, kept as written."""


def _ours(hook: object) -> str | None:
    """Whether a Claude Code hook handler runs ``roteiro-memory hook``
    (:func:`_runs_hook`), and how: :data:`_PLAIN` or :data:`_CHANGED`;
    None when it is not ours."""
    words = _hook_words(hook)
    if words is None or not _runs_hook(words):
        return None
    plain = len(words) == 2 and os.path.basename(words[0]) == SERVER_NAME
    return _PLAIN if plain else _CHANGED


def _object(value: object, where: str, path: str) -> dict[str, JSON]:
    if not isinstance(value, dict):
        raise ConfigRefused(
            f"{path}: {where} is {json_excerpt(value, 60)}, not an object; nothing was written"
        )
    return value


def _parse_json(path: str, text: str | None) -> dict[str, JSON]:
    """The file's object, refused when writing it back could not give the
    same JSON: a number no double holds (``1e999``, which would come back as
    ``Infinity``), ``NaN`` or ``Infinity`` (not JSON), a lone surrogate
    (``"\\udfff"``, no Unicode text), a key twice in one object (only the
    last would be written back), or nesting too deep to read."""
    if text is None or not text.strip():
        return {}
    marked = byte_order_mark(text)
    if marked is not None:
        raise ConfigRefused(f"{path} {marked} (an editor added it): remove it; nothing was written")
    try:
        data = json.loads(
            text, parse_float=_finite, parse_constant=_not_json, object_pairs_hook=_once_each
        )
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise ConfigRefused(
            f"{path} nests arrays or objects too deeply to be read; nothing was written"
        ) from None
    except _TooLarge as error:
        raise ConfigRefused(
            f"{path} holds the number {excerpt(error.args[0], 40)}, which no double holds, so "
            "it could not be written back as it is; nothing was written"
        ) from None
    except _Twice as error:
        raise ConfigRefused(
            f"{path} holds the key {json_excerpt(error.args[0], 60)} twice in one object, and "
            "writing it back would keep only the last; nothing was written"
        ) from None
    except UnicodeEncodeError as error:
        bad = excerpt(error.object[error.start : error.end])
        raise ConfigRefused(
            f"{path} holds a string with a lone surrogate ({bad}), which is not Unicode text "
            "and could not be written back; nothing was written"
        ) from None
    except ValueError as error:
        raise ConfigRefused(f"{path} is not JSON ({error}); nothing was written") from None
    return _object(data, "the file", path)


class _Twice(Exception):
    """A key an object holds twice (``args[0]``)."""


def _once_each(pairs: list[tuple[str, JSON]]) -> dict[str, JSON]:
    """An object's members, refused (:class:`_Twice`) when a key repeats."""
    members = dict(pairs)
    if len(members) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Twice(key)
            seen.add(key)
    return members


class _TooLarge(Exception):
    """A JSON number past a double's range (its literal as the one argument)."""


def _finite(literal: str) -> float:
    """A JSON number as a double, refused past a double's range."""
    value = float(literal)
    if not math.isfinite(value):
        raise _TooLarge(literal)
    return value


def _not_json(literal: str) -> NoReturn:
    """``NaN``, ``Infinity`` or ``-Infinity``, which Python reads and JSON has not."""
    raise ValueError(f"{literal} is not a JSON value")


def _dump_json(data: JSON, text: str | None) -> str:
    """``data`` as the file's text: ``text`` itself when it already holds
    exactly that (the user's own layout is kept), else indented JSON."""
    if text is not None and text.strip() and json.loads(text) == data:
        return text
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _merge_servers(path: str, text: str | None, command: str, *, typed: bool) -> str:
    data = _parse_json(path, text)
    servers = _object(data.setdefault("mcpServers", {}), '"mcpServers"', path)
    servers[SERVER_NAME] = _our_server(servers.get(SERVER_NAME), command, typed=typed)
    return _dump_json(data, text)


def _merge_hooks(path: str, text: str | None, command: str) -> str:
    data = _parse_json(path, text)
    events = _object(data.setdefault("hooks", {}), '"hooks"', path)
    for event, matcher in HOOK_EVENTS:
        groups = events.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigRefused(
                f'{path}: "hooks"."{event}" is {json_excerpt(groups, 60)}, not a list; '
                "nothing was written"
            )
        wanted: JSON = {"type": "command", "command": _hook_command(command)}
        groups[:] = [_object(g, f'an entry of "hooks"."{event}"', path) for g in groups]
        handlers = [
            [(handler, _ours(handler)) for handler in group["hooks"]]
            if isinstance(group.get("hooks"), list)
            else None
            for group in groups
        ]
        # A command of ours the user changed, wherever it stands, is the one
        # that runs: every plain copy beside it goes, before or after it.
        placed = any(kind == _CHANGED for pairs in handlers if pairs for _, kind in pairs)
        kept = []
        for group, pairs in zip(groups, handlers, strict=True):
            if pairs is None:
                kept.append(group)
                continue
            left = []
            for handler, kind in pairs:
                if kind != _PLAIN:
                    left.append(handler)  # another's, or ours as the user changed it
                elif not placed:
                    # ours, at this installation's path; the rest of the
                    # handler (a timeout the user gave it) as it was
                    left.append({**handler, "command": wanted["command"]})
                    placed = True
                # else: a second plain copy of ours, or one beside the user's: dropped
            if left or not pairs:
                group["hooks"] = left
                kept.append(group)
            # else: the group held only dropped copies of ours, and goes with them
        groups[:] = kept
        if not placed:
            entry: JSON = {"hooks": [wanted]}
            groups.append({"matcher": matcher, **entry} if matcher is not None else entry)
    return _dump_json(data, text)


def _toml_key(text: str) -> str:
    return json.dumps(text)  # a TOML basic string is a JSON string for these characters


def _toml_table(command: str) -> str:
    return (
        f'[mcp_servers.{_toml_key(SERVER_NAME)}]\ncommand = {_toml_key(command)}\nargs = ["mcp"]\n'
    )


def _header_of(line: str) -> str | None:
    """The table name a ``[...]`` header line opens, or None."""
    import tomllib

    stripped = line.strip()
    if not stripped.startswith("[") or stripped.startswith("[["):
        return None
    try:
        parsed = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None
    names: list[str] = []
    node: object = parsed
    while isinstance(node, dict) and len(node) == 1:
        name, node = next(iter(node.items()))
        names.append(name)
    return ".".join(names)


def _opens_table(lines: list[str], index: int) -> bool:
    """Whether line ``index`` of a TOML file's ``lines`` starts a statement
    of the file's own, not a line inside a multi-line string or array: the
    lines before it read as TOML whole."""
    import tomllib

    try:
        tomllib.loads("".join(lines[:index]))
    except tomllib.TOMLDecodeError:
        return False
    return True


def _blank_or_comment(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _float_as_written(text: str) -> tuple[str, str]:
    """A TOML float as its text, tagged: merging compares the file's values
    before and after, and ``nan`` (which TOML allows) equals no float."""
    return ("float", text)


def _merge_toml(path: str, text: str | None, command: str) -> str:
    import tomllib

    source = text or ""
    try:
        before = tomllib.loads(source, parse_float=_float_as_written)
    except tomllib.TOMLDecodeError as error:
        raise ConfigRefused(f"{path} is not TOML ({error}); nothing was written") from None
    servers = before.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise ConfigRefused(f'{path}: "mcp_servers" is not a table; nothing was written')
    # The file's own line end (CRLF when its first line ends so), for every line added.
    first = source.find("\n")
    newline = "\r\n" if first > 0 and source[first - 1] == "\r" else "\n"
    table = _toml_table(command).replace("\n", newline)
    ours = f"mcp_servers.{SERVER_NAME}"
    if SERVER_NAME not in servers:
        joined = source if not source or source.endswith("\n") else source + newline
        after = joined + (newline if joined.strip() else "") + table
    else:
        lines = source.splitlines(keepends=True)
        starts = [
            i for i, line in enumerate(lines) if _header_of(line) == ours and _opens_table(lines, i)
        ]
        if len(starts) != 1:
            raise ConfigRefused(
                f"{path}: the {SERVER_NAME} server is not one [mcp_servers.{SERVER_NAME}] "
                "table (written inline or across tables), so it is not replaced; edit it, or "
                "remove it and run setup again; nothing was written"
            )
        start = starts[0]
        if _serves_ours(servers[SERVER_NAME]):
            return _checked_toml(path, before, _new_command(lines, start, command), command)
        end = start + 1
        while end < len(lines):
            if lines[end].lstrip().startswith("[") and _opens_table(lines, end):
                name = _header_of(lines[end])  # None: an array of tables, [[...]]
                if name is None or not name.startswith(ours + "."):
                    break
            end += 1
        # The comments (and blank lines) last in the table are about what
        # follows it, the next table or the end: they are kept.
        while (
            end > start + 1 and _blank_or_comment(lines[end - 1]) and _opens_table(lines, end - 1)
        ):
            end -= 1
        kept_blank = newline if end < len(lines) and lines[end].strip() else ""
        after = "".join(lines[:start]) + table + kept_blank + "".join(lines[end:])
    return _checked_toml(path, before, after, command)


def _new_command(lines: list[str], start: int, command: str) -> str:
    """The file of ``lines`` with the ``command = ...`` line of our table,
    which opens at line ``start``, naming ``command``: the table's other
    keys and its subtables (``env``) stay as they are written.  Unchanged
    when no such line opens a statement before the next table (a command
    written otherwise), which :func:`_checked_toml` then refuses."""
    for at in range(start + 1, len(lines)):
        line = lines[at]
        if line.lstrip().startswith("[") and _opens_table(lines, at):
            break
        if _COMMAND_LINE.match(line) and _opens_table(lines, at):
            ending = line[len(line.rstrip("\r\n")) :]  # the line's own
            written = f"command = {_toml_key(command)}{ending}"
            return "".join([*lines[:at], written, *lines[at + 1 :]])
    return "".join(lines)


_COMMAND_LINE = re.compile(r"[ \t]*command[ \t]*=")
"""The line of a TOML table that sets its ``command`` (written bare)."""


def _checked_toml(path: str, before: dict[str, Any], after: str, command: str) -> str:
    """``after``, the merged text, when it holds what ``before`` held with
    our server at ``command``; else refused, nothing written."""
    import tomllib

    servers = before.get("mcp_servers", {})
    try:
        merged = tomllib.loads(after, parse_float=_float_as_written)
    except tomllib.TOMLDecodeError as error:
        raise ConfigRefused(
            f"{path}: with the {SERVER_NAME} server's table in it, it would not be TOML "
            f'({error}; is "mcp_servers" written inline?), so it is not written; add the '
            "server by hand; nothing was written"
        ) from None
    ours = _our_server(servers.get(SERVER_NAME), command, typed=False)
    expected = {**before, "mcp_servers": {**servers, SERVER_NAME: ours}}
    if merged != expected:
        raise ConfigRefused(
            f"{path}: merging the {SERVER_NAME} server would change other settings (its table "
            "is followed by keys of its own?), so it is not written; edit the file by hand"
        )
    return after


def merge(host: Host, path: str, text: str | None, command: str) -> str:
    """The text of ``path`` (one of ``host``'s files, holding ``text`` or
    nothing) with our entries for ``command`` merged in."""
    if path.endswith(".toml"):
        return _merge_toml(path, text, command)
    if path.endswith("settings.json"):
        return _merge_hooks(path, text, command)
    return _merge_servers(path, text, command, typed=host.name == "claude-code")


def plan(host: Host, read: dict[str, str | None], command: str) -> list[Edit]:
    """Every file of ``host`` before and after the merge; ``read`` holds the
    text of each (None when absent).  Any refusal refuses the whole plan."""
    return [Edit(path, read[path], merge(host, path, read[path], command)) for path in host.files]
