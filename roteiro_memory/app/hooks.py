"""What to tell a coding agent at each moment its host runs a hook.

The events and their JSON are Claude Code's (its hooks reference): every
event has ``session_id``, ``transcript_path``, ``cwd`` and
``hook_event_name``; tool events add ``tool_name`` and ``tool_input`` (whose
``file_path``, or ``notebook_path`` for NotebookEdit, names the file).  What
reaches the agent's context is ``hookSpecificOutput.additionalContext`` for
SessionStart, PreToolUse and PostToolUse; a Stop hook speaks to the agent
only by ``"decision": "block"`` and a ``reason`` (it then goes on working,
and the next Stop has ``stop_hook_active``); PreCompact takes no context, so
its ``systemMessage`` is shown to the person, and the SessionStart that
follows compaction (``source``: ``compact``) tells the agent.

What each event gets (:func:`respond`):

* **SessionStart** -- the ``pack`` digest (:mod:`.pack`); after ``clear`` or
  ``compact`` the context no longer holds what was shown, so it may all be
  shown again; after ``compact``, the reminder below when one is due.  The
  whole answer -- :data:`UNCHECKED` and the reminder too -- is within the
  budget: the digest's records give way first, then the reminder, which
  then stays due for the next Stop (:func:`_room`).
* **PreToolUse / PostToolUse of Read, Edit, Write, MultiEdit, NotebookEdit**
  -- the live records anchored to that file and to the symbols in it, best
  first, those that apply first and those whose code changed since under a
  heading saying so, within :data:`FILE_BUDGET` tokens (one line a record,
  :mod:`.brief`); a path so long that not one record would fit beside it
  is shown cut, its end kept, and records whose lines no cut makes fit are
  still said, by id (:func:`_notice`).  A record is not shown
  twice in a session unless its anchor state changed since (valid before
  an edit, drifted after it).
  After an edit, a file with records is remembered for the reminder.
* **PostToolUseFailure of Bash** -- nothing said; the failure is counted.
* **Stop** -- when this session edited code that has records, or commands
  failed, since the last reminder: once, how to record a lesson or an
  attempt, or supersede a stale record.  No model is called.
* **PreCompact** -- that a reminder is due, to the person (see above),
  and when the agent gets it: after compaction, or at its next Stop where
  the session start has no room for it (:data:`AFTER_COMPACTION`).
* Anything else, a file outside the repository, nothing new: no answer.
  Where no repository is found because git is missing from ``PATH`` or
  fails, the session start says so to the person
  (:meth:`~roteiro_memory.app.session.Session.git_fault`), as every failure
  of the hook.  Where the stat cache finds the repository but git is
  needed to list a changed tree, the event that needs it fails the same
  way; the command says that once a session -- at each session start, and
  at the first other event -- and the events after it nothing.

Stored text and file names are quoted on one line, their control characters
escaped (:func:`_quoted`), as the digest shows them.

The anchor states the agent reads are the code's as it is: synced, or
worked out in memory where the store could not take a sync
(:meth:`~roteiro_memory.app.session.Session.sync`; no remedy is offered
then); under ``--no-sync`` they are said to be the last sync's
(:data:`UNCHECKED`).

Pure over the session and the session's state: reading the event from
stdin, writing the answer -- or, when the hook fails, telling the person --
and keeping the state are the command's
(:mod:`roteiro_memory.cli.commands.hook`) and :mod:`.hookstate`'s.
"""

from __future__ import annotations

from roteiro_memory.app import brief
from roteiro_memory.errors import UsageError, json_excerpt
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from roteiro_memory.app.hookstate import SessionState
    from roteiro_memory.app.session import Session
    from roteiro_memory.app.shown import Marks
    from roteiro_memory.results import Recalled

    JSON = Any

__all__ = [
    "EDIT_TOOLS",
    "FILE_BUDGET",
    "FILE_TOOLS",
    "Event",
    "read_event",
    "reminder",
    "respond",
]

FILE_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"})
"""The host's tools that read or change one file, named by ``file_path`` (or,
for NotebookEdit, ``notebook_path``)."""

EDIT_TOOLS = FILE_TOOLS - {"Read"}

FILE_BUDGET = 500
"""Tokens (ceil(UTF-8 bytes / 4)) the records about one file may take in an
answer: a dozen lines, small beside the file being read."""

_PATH_FIELDS = ("file_path", "notebook_path")

UNCHECKED = (
    "(Anchor states are as of the code graph's last sync -- this hook runs with --no-sync -- "
    "so the code may have changed since.)"
)
"""Said with the records when their anchor states were not checked against
the code: what the agent reads never claims a state nobody checked."""


AFTER_COMPACTION = (
    "the agent is reminded to record what it learned after compaction, or at its next stop "
    "when the session start has no room for the reminder within its budget."
)
"""What PreCompact's message tells the person of the reminder: it comes with
the session start that follows compaction only when that answer's budget
has room for it beside the smallest digest (:func:`_room`), which the
PreCompact hook cannot know (each event's command may give its own
``--budget``); else the next Stop says it."""


@valueclass
class Event:
    """The facts of a host's event this package acts on."""

    name: str
    session_id: str
    cwd: str | None = None
    tool: str | None = None
    path: str | None = None
    source: str | None = None
    stop_active: bool = False


def _text(data: Mapping[str, JSON], name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) and value else None


def read_event(data: object) -> Event:
    """The event ``data`` (the host's JSON, parsed) describes;
    :class:`~roteiro_memory.errors.UsageError` naming what is missing."""
    if not isinstance(data, dict):
        raise UsageError(
            f"a hook event is a JSON object, not {json_excerpt(data, 40)}: run this as a host's "
            "hook command, which writes the event on standard input"
        )
    name, session_id = _text(data, "hook_event_name"), _text(data, "session_id")
    if name is None or session_id is None:
        missing = "hook_event_name" if name is None else "session_id"
        raise UsageError(f"the hook event has no {missing!r} (a non-empty string)")
    tool_input = data.get("tool_input")
    path = None
    if isinstance(tool_input, dict):
        path = next((p for f in _PATH_FIELDS if (p := _text(tool_input, f))), None)
    return Event(
        name=name,
        session_id=session_id,
        cwd=_text(data, "cwd"),
        tool=_text(data, "tool_name"),
        path=path,
        source=_text(data, "source"),
        stop_active=data.get("stop_hook_active") is True,
    )


def _context(event: str, text: str) -> JSON:
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def respond(
    session: Session, event: Event, state: SessionState, budget: object, *, every: bool = False
) -> JSON | None:
    """The JSON to answer ``event`` with, or None to say nothing; ``state``
    is updated in place.  ``budget`` is the session-start digest's, in tokens
    (text or a number, as ``pack`` takes it); ``every`` shows near-duplicates
    on lines of their own (``--all``), in the digest and about a file."""
    if event.name == "SessionStart":
        return _session_start(session, event, state, budget, every)
    if event.name in ("PreToolUse", "PostToolUse") and event.tool in FILE_TOOLS:
        return _file(session, event, state, every)
    if event.name == "PostToolUseFailure" and event.tool == "Bash":
        state.failed += 1
        return None
    if event.name == "Stop" and not event.stop_active:
        said = reminder(state)
        if said is None:
            return None
        _reminded(state)
        return {"decision": "block", "reason": said}
    if event.name == "PreCompact":
        due = _due(state)
        if due is None:
            return None
        return {"systemMessage": f"roteiro-memory: {due}; {AFTER_COMPACTION}"}
    return None


def _due(state: SessionState) -> str | None:
    """What a reminder would be about, in a clause; None when none is due."""
    fresh = state.edited[state.reminded :]
    parts = []
    if fresh:
        more = len(fresh) + state.unlisted - 5  # unlisted: fresh paths the state left out
        shown = ", ".join(map(_quoted, fresh[:5])) + (f" and {more} more" if more > 0 else "")
        parts.append(f"this session changed code that has recorded memory ({shown})")
    if state.failed:
        noun = "command" if state.failed == 1 else "commands"
        parts.append(f"{state.failed} {noun} failed")
    return ", and ".join(parts) if parts else None


def _quoted(text: str) -> str:
    """Stored text or a file's name as an answer quotes it: on one line, its
    control characters escaped (``\\x1b``), as the session-start digest and
    a failure's message show them.  A file's name is its repository's to
    choose, and what the hook says reaches the person's terminal too
    (PreCompact's ``systemMessage``, a Stop's ``reason``)."""
    from roteiro_memory.terminal import printable

    return printable(text, one_line=True)


def _reminded(state: SessionState) -> None:
    state.reminded = len(state.edited)
    state.failed = state.unlisted = 0


def reminder(state: SessionState) -> str | None:
    """How to record what this session learned, when it edited code that has
    records or commands failed since the last reminder; else None."""
    due = _due(state)
    if due is None:
        return None
    said = [due[0].upper() + due[1:] + "."]
    if state.edited[state.reminded :]:
        said.append(
            "If you learned something about that code which the code does not say, record it "
            "with the `remember` tool (kind `lesson`, anchored to the function or file; or "
            "`roteiro-memory add TEXT --anchor PATH::NAME`); if a record about it no longer "
            "holds, remember the corrected one with `supersedes` set to its id."
        )
    if state.failed:
        said.append(
            "If an approach did not work, record it with the `remember` tool, kind `attempt` (or "
            "`roteiro-memory add TEXT --kind attempt`): what was tried and why it failed, so "
            "nobody tries it again."
        )
    said.append("If there is nothing worth recording, you are done.")
    return " ".join(said)


def _session_start(
    session: Session, event: Event, state: SessionState, budget: object, every: bool
) -> JSON | None:
    """The digest, and after compaction the reminder, all within ``budget``
    tokens: every byte the agent is told counts, :data:`UNCHECKED` and the
    reminder included (:func:`_room`)."""
    from roteiro_memory.app.pack import budget_tokens, digest
    from roteiro_memory.errors import GitError

    allowed = budget_tokens(session, budget)  # a bad --budget refused before anything is read
    why = None if session.place() is not None or session.has_store() else session.git_fault()
    if why is not None:
        # Silence would hide a misconfiguration behind what looks like an
        # empty memory; said at session start only, it is said once a session.
        raise GitError(f"hook needs a git repository: {why}")
    if event.source in ("clear", "compact"):
        state.shown.clear()  # the context no longer holds what it was shown
    aside = [] if session.syncs else [UNCHECKED]
    said = _room(reminder(state), aside, allowed) if event.source == "compact" else None
    spent = brief.lines_bytes([*aside, *([said] if said else [])])
    pack = digest(session, allowed, every=every, spent=spent)
    parts = []
    if pack.chosen or pack.omitted:  # none fit: it still says how many, and where they are
        parts += aside
        parts.append(pack.markdown())
        _said(state, pack.chosen, pack.marks)
    if said is not None:
        parts.append(said)
        _reminded(state)
    return _context("SessionStart", "\n".join(parts)) if parts else None


def _room(said: str | None, aside: list[str], allowed: int) -> str | None:
    """The reminder ``said`` when a session-start answer of ``allowed``
    tokens has room for it beside the ``aside`` lines and the smallest
    digest (:data:`~roteiro_memory.app.pack.MIN_BUDGET` tokens, which its
    title, summary and footer always fit in); else None, and it stays due:
    the next Stop says it.  So when room is short the digest's records give
    way first, then the reminder; :data:`UNCHECKED` never does."""
    from roteiro_memory.app.pack import MIN_BUDGET

    if said is None:
        return None
    needed = brief.lines_bytes([*aside, said]) + MIN_BUDGET * 4
    return said if needed <= allowed * 4 else None


def _file(session: Session, event: Event, state: SessionState, every: bool) -> JSON | None:
    from roteiro_memory.app import records, shown
    from roteiro_memory.errors import AnchorError

    if event.path is None or not session.has_store() or session.repo is None:
        return None
    try:
        found = records.ranked(session, records.Selection(anchors=(event.path,)), limit=0)
    except AnchorError:
        return None  # not a file of this repository: nothing recorded about it
    if not found.results:
        return None
    where = _relative(found.results, event.path)
    if event.name == "PostToolUse" and event.tool in EDIT_TOOLS and where not in state.edited:
        state.edited.append(where)
    view = shown.ranked(session, found, every=every)
    fresh = [
        r for r in view.items if state.shown.get(str(r.record.id)) != r.record.anchor_state.value
    ]
    checked = session.syncs
    text, said = _notice(fresh, where, _Remedies(session), view.marks, checked)
    if not said:
        return None
    _said(state, said, view.marks)
    return _context(event.name, text)


def _said(state: SessionState, said: Iterable[Recalled], marks: Marks) -> None:
    """Remember what ``said`` showed: each record, and the near-duplicates
    its line stands for, with the anchor state it was shown in."""
    for recalled in said:
        for record_id in marks.stands_for(recalled.record.id) or (recalled.record.id,):
            state.shown[str(record_id)] = recalled.record.anchor_state.value


def _remedies(session: Session, fresh: list[Recalled]) -> dict[int, str]:
    """What to do about each drifted or vanished record of ``fresh`` which
    has something: the command that settles it (``reanchor --apply`` where
    its code moved, ``confirm`` where it changed:
    :func:`~roteiro_memory.app.reanchor.proposals`), or, where following its
    code would read its file's history -- which may take long, and the agent
    waits on the hook -- the ``reanchor`` that does.  A notice without them
    is still a notice: what cannot be worked out is left out, never a
    failure of the hook."""
    stale = [r.record.id for r in fresh if r.record.anchor_state.is_stale]
    if not stale or session.unsynced is not None:
        return {}  # unsynced, the store's graph is not the code's: no proposal holds
    from roteiro_memory.app.reanchor import proposals
    from roteiro_memory.errors import RoteiroError

    try:
        found = proposals(session, stale, history=False, synced=True)  # as the read synced it
    except RoteiroError:
        return {}
    said = {record_id: f"settle it with `{line}`" for record_id, line in found.remedies().items()}
    for record_id in found.unsearched():
        said[record_id] = f"see where its code went with `roteiro-memory reanchor {record_id}`"
    return said


class _Remedies:
    """What to do about the stale records a notice shows (:func:`_remedies`),
    worked out once the notice has room for one of them: for it and those
    after it the notice would show if none still to be worked out had a
    remedy (:func:`_room_for`) -- usually one
    :func:`~roteiro_memory.app.reanchor.proposals` a notice, and none when
    no stale record is shown; it reads of the graph the read synced only
    what those records need, but for code moved unchanged, checked against
    its witness tree, it lists that tree and reads its file nodes.  A record
    whose line has no room even without a remedy never needs one, so the
    notice is the one every remedy worked out first would give."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._asked: set[int] = set()
        self._said: dict[int, str] = {}

    def known(self, recalled: Recalled) -> bool:
        """Whether what to do about ``recalled`` is known: it is not stale,
        or it was worked out."""
        return not recalled.record.anchor_state.is_stale or recalled.record.id in self._asked

    def want(self, records: Iterable[Recalled]) -> None:
        """Work out what to do about each of ``records`` not known yet."""
        new = [r for r in records if not self.known(r)]
        if new:
            self._asked.update(r.record.id for r in new)
            self._said.update(_remedies(self._session, new))

    def get(self, record_id: int) -> str | None:
        """What to do about the record ``record_id``, when worked out and
        there is something."""
        return self._said.get(record_id)


def _with(line: str, remedy: str | None) -> str:
    """A record's ``line`` as a notice shows it, with what to do about it."""
    return line if remedy is None else f"{line} -- {remedy}"


def _room_for(
    entries: list[tuple[Recalled, str]],
    remedies: _Remedies,
    used: int,
    limit: int,
    extra: list[str],
) -> list[Recalled]:
    """The records of ``entries`` (each with its line) a notice that spent
    ``used`` of its ``limit`` bytes would go on to show -- the ``extra``
    lines coming with the first -- were a remedy not yet worked out none:
    those whose remedies :class:`_Remedies` works out together."""
    picked = []
    for recalled, line in entries:
        size = brief.lines_bytes([*extra, _with(line, remedies.get(recalled.record.id))])
        if used + size <= limit:
            picked.append(recalled)
            used += size
            extra = []
    return picked


def _relative(results: list[Recalled], given: str) -> str:
    """The repository path the records are about (their anchor's path)."""
    for recalled in results:
        anchor = recalled.record.anchor
        if anchor is not None and anchor.path is not None:
            return anchor.path
    return given


def _more(left: int, where: str, keep: int | None = None) -> str:
    """The line that counts the records about ``where`` a notice left out:
    as long as the path, so the room it needs is measured, not guessed.  A
    notice that cuts the path (``keep``) cannot name it as an anchor: it
    points at the file's full path, which the agent has given its tool."""
    if keep is not None:
        return (
            f"({left} more: the `search` tool with the file's full path as anchor lists them all.)"
        )
    return f"({left} more: the `search` tool with anchor {where!r} lists them all.)"


def _cut(where: str, keep: int | None) -> str:
    """``where`` as a notice names it: whole, or -- ``keep`` -- its last
    ``keep`` characters after ``...``."""
    return where if keep is None else "..." + where[len(where) - keep :]


def _notice(
    fresh: list[Recalled],
    where: str,
    remedies: _Remedies,
    marks: Marks,
    checked: bool = True,
) -> tuple[str, list[Recalled]]:
    """The answer about one file (:func:`_lines`), naming its path whole --
    or, where the path is so long that not one record fits beside it (the
    heading, each record's anchor and the closing count repeat it), cut to
    the longest end of it that lets one fit: the agent still learns what is
    recorded about the file it reads.  Each try is :func:`_lines`, which
    alone measures against the budget; a shorter end never takes more room,
    so the longest that fits is found by halving.  Where no line fits even
    so (a symbol's name, or the near-duplicates a line names, longer than
    the budget), the records are still said, by id (:func:`_unshown`)."""
    text, said = _lines(fresh, where, remedies, marks, checked)
    if said or not fresh:
        return text, said
    low, high = 1, len(where) - len(_cut("", 0)) - 1  # a cut shorter than the whole path
    while low <= high:
        keep = (low + high) // 2
        cut_text, cut_said = _lines(fresh, where, remedies, marks, checked, keep)
        if cut_said:
            text, said = cut_text, cut_said
            low = keep + 1
        else:
            high = keep - 1
    return (text, said) if said else _unshown(fresh)


UNSHOWN_NAMED = 3
"""How many records a notice that could show none of them names by id."""


def _unshown(fresh: list[Recalled]) -> tuple[str, list[Recalled]]:
    """The answer about one file when not one record's line fits the
    budget, whatever the path's cut: how many records there are, the first
    :data:`UNSHOWN_NAMED` by id in the order a notice lists them (those
    that apply first) and how to read each -- a few hundred bytes whatever
    the records hold -- and the records it names, which count as shown."""
    ordered = [r for r in fresh if r.record.applies] + [r for r in fresh if not r.record.applies]
    named = ordered[:UNSHOWN_NAMED]
    ids = [r.record.id for r in named]
    first = ids[0]
    if len(ordered) == 1:
        said = (
            f"roteiro-memory: 1 record about this file is not shown, its line being longer than "
            f"this notice may be: `get` {first} (`roteiro-memory show {first}`) shows it."
        )
    else:
        said = (
            f"roteiro-memory: {len(ordered)} records about this file are not shown, each line "
            "being longer than this notice may be: `get` shows each in full (`roteiro-memory "
            f"show ID`), {brief.ids_text(ids)} first; the `search` tool with the file's full "
            "path as anchor lists them all."
        )
    return said, named


def _line(recalled: Recalled, where: str, marks: Marks, keep: int | None) -> str:
    """The line of ``recalled`` in a notice about ``where`` (named by its
    last ``keep`` characters when given), before what to do about it."""
    record = recalled.record
    label = brief.anchor_text(record.anchor.key) if record.anchor is not None else ""
    anchor = None
    if keep is not None and label.startswith(where):
        anchor = _cut(where, keep) + label[len(where) :]
    return _quoted(
        brief.line(
            record,
            recalled.score,
            stands_for=marks.stands_for(record.id),
            against=marks.against(record.id),
            anchor=anchor,
        )
    )


def _lines(
    fresh: list[Recalled],
    where: str,
    remedies: _Remedies,
    marks: Marks,
    checked: bool = True,
    keep: int | None = None,
) -> tuple[str, list[Recalled]]:
    """The answer about one file -- the records that apply, then those whose
    code changed (each with what to do about it, from ``remedies``),
    within :data:`FILE_BUDGET`, near-duplicates folded and conflicting
    decisions marked (``marks``), :data:`UNCHECKED` first unless the states
    were ``checked`` -- and the records it shows.  ``keep``: the path
    ``where`` is named by its last ``keep`` characters, the cut said."""
    room = FILE_BUDGET * 4
    shown_path = _cut(where, keep)
    head = f"roteiro-memory: recorded about {_quoted(shown_path)}"
    if keep is not None:
        head += f" (its path cut to its last {keep} of {len(where)} characters)"
    head += ", best first (`get` shows one in full):"
    if not checked:
        head += "\n" + UNCHECKED
    applying = [r for r in fresh if r.record.applies]
    stale = [r for r in fresh if not r.record.applies]
    stale_head = (
        "Written about code that has changed since (drifted), is gone (vanished) or cannot "
        "be compared -- they may no longer hold; check the code before relying on them:"
    )
    lines = [head]
    used = brief.lines_bytes([head])
    shown: list[Recalled] = []
    note = brief.conflicts_note() if marks.conflicts else ""
    folded = brief.duplicates_note() if marks.alike else ""
    notes = brief.lines_bytes([note, folded])
    closing = brief.lines_bytes([_more(len(fresh), where, keep)])  # its count at most this
    limit = room - closing - notes  # room for the closing lines
    for group, title in ((applying, None), (stale, stale_head)):
        entries = [(r, _line(r, where, marks, keep)) for r in group]
        for index, (recalled, bare) in enumerate(entries):
            extra = [title] if title is not None and title not in lines else []
            if used + brief.lines_bytes([*extra, bare]) > limit:
                continue  # no room even before what to do about it is said
            if not remedies.known(recalled):
                remedies.want(_room_for(entries[index:], remedies, used, limit, extra))
            line = _with(bare, remedies.get(recalled.record.id))
            size = brief.lines_bytes([*extra, line])
            if used + size > limit:
                continue
            lines += [*extra, line]
            used += size
            shown.append(recalled)
    left = len(fresh) - len(shown)
    if left:
        lines.append(_more(left, where, keep))
    if any(marks.against(r.record.id) for r in shown):
        lines.append(note)
    if any(marks.stands_for(r.record.id) for r in shown):
        lines.append(folded)
    return "\n".join(lines), shown
