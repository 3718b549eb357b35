"""What one agent session has been told, kept between its hook calls.

A hook is a new process per event, so "the same record is not injected twice
in one session" needs a memory of what was injected.  It is kept here, and
never in the store: reads never write to the store, and this is not memory
about the code but about one conversation.

Where and how much:

* one file per session, under the worktree's git directory beside the stat
  cache (``roteiro/sessions/``), named by the session id when it is a plain
  word, else by a hash of it (an id is the host's, and may hold anything),
  mode ``0600`` like every file holding facts about the repository, in
  folders made ``0700`` as the store's is
  (:func:`~roteiro_memory.repo.location.private_folder`);
* written only once there is something to keep: a hook in a repository
  with no store yet writes nothing for a session start or a file, and keeps
  a state once a command fails (the Stop reminder then asks for a first
  record, of the failed attempt);
* bounded: a file keeps the last :data:`MAX_SHOWN` records shown and
  :data:`MAX_EDITED` files edited, is read only when it is a regular file of
  at most :data:`MAX_STATE_BYTES` (else the session starts afresh), and the
  folder keeps the :data:`MAX_SESSIONS` most recently used sessions;
* written whole and renamed into place (:func:`roteiro_memory.privatefile.replace`),
  so a hook killed half-way leaves the previous state; two hooks of one
  session at once may lose one's update, which only means a record may be
  shown again.
"""

from __future__ import annotations

import json
import os

from roteiro_memory.valueclass import field, valueclass

__all__ = [
    "MAX_EDITED",
    "MAX_SESSIONS",
    "MAX_SHOWN",
    "MAX_STATE_BYTES",
    "SESSIONS_DIR",
    "SessionState",
    "load",
    "save",
]

SESSIONS_DIR = os.path.join("roteiro", "sessions")
"""Below the worktree's git directory."""

MAX_SHOWN = 2000
MAX_EDITED = 200
MAX_SESSIONS = 64
MAX_STATE_BYTES = 256 * 1024

_VERSION = 1


@valueclass(frozen=False)
class SessionState:
    """What a session has been shown and done.

    ``shown`` maps a record's id to the anchor state it was shown with: a
    record is shown again only when its state changed (a lesson read valid
    before an edit is shown again, drifted, after it).  ``edited`` are the
    repository paths the session changed that records are anchored to;
    ``failed`` counts the commands that failed since the last reminder, and
    ``reminded`` is how many edited paths (the first of ``edited``) the last
    reminder covered.  Only the last :data:`MAX_EDITED` paths are kept:
    ``unlisted`` counts those left out that no reminder covered yet, so a
    reminder still counts every file, and ``reminded`` is moved back by as
    many as were left out, to stay at the same path.  ``git_fault`` is why
    git could not be run here (missing from ``PATH``, or failing), as the
    person was last told it in this session: the events after it need not
    say it again."""

    shown: dict[str, str] = field(default_factory=dict)
    edited: list[str] = field(default_factory=list)
    failed: int = 0
    reminded: int = 0
    unlisted: int = 0
    git_fault: str | None = None

    def to_json(self) -> dict[str, object]:
        shown = dict(list(self.shown.items())[-MAX_SHOWN:])
        left_out = max(0, len(self.edited) - MAX_EDITED)
        return {
            "version": _VERSION,
            "shown": shown,
            "edited": self.edited[left_out:],
            "failed": self.failed,
            "reminded": max(0, self.reminded - left_out),
            "unlisted": self.unlisted + max(0, left_out - self.reminded),
            "git_fault": self.git_fault,
        }


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def _path(git_dir: str, session_id: str) -> str:
    """The state file of ``session_id``: the id itself when it is a plain
    word (Claude Code's are UUIDs), else a hash of it, so no id can name a
    path elsewhere; hashing only then keeps a hook from loading OpenSSL."""
    if 0 < len(session_id) <= 64 and set(session_id) <= _PLAIN:
        name = "s-" + session_id
    else:
        import hashlib

        name = "h-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return os.path.join(git_dir, SESSIONS_DIR, name + ".json")


def _well_formed(data: object) -> SessionState | None:
    if not isinstance(data, dict) or data.get("version") != _VERSION:
        return None
    shown, edited = data.get("shown"), data.get("edited")
    failed, reminded = data.get("failed"), data.get("reminded")
    unlisted = data.get("unlisted", 0)  # absent from what earlier versions wrote
    git_fault = data.get("git_fault")  # so is this
    if not (
        isinstance(shown, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in shown.items())
        and isinstance(edited, list)
        and all(isinstance(p, str) for p in edited)
        and type(failed) is int
        and type(reminded) is int
        and type(unlisted) is int
        and failed >= 0  # counts, which only a hand makes negative
        and reminded >= 0
        and unlisted >= 0
        and (git_fault is None or isinstance(git_fault, str))
    ):
        return None
    # Past the paths kept, as an earlier version left it when it dropped some:
    # the reminder covered them all.
    reminded = min(reminded, len(edited))
    return SessionState(shown, edited, failed, reminded, unlisted, git_fault)


def load(git_dir: str, session_id: str) -> SessionState:
    """The session's state; a fresh one when there is none, or what is
    there is not a state this version wrote."""
    from roteiro_memory.repo.regular import read_regular

    raw = read_regular(_path(git_dir, session_id), MAX_STATE_BYTES)
    if raw is None:
        return SessionState()
    try:
        return _well_formed(json.loads(raw)) or SessionState()
    except (ValueError, RecursionError):
        return SessionState()


def save(git_dir: str, session_id: str, state: SessionState) -> None:
    """Write the session's state, then keep only the newest sessions'.
    A session with nothing to keep -- a fresh state, and no file yet --
    writes nothing, not even the folder.  :class:`OSError` when it cannot be
    written."""
    from roteiro_memory import privatefile
    from roteiro_memory.repo.location import private_folder

    target = _path(git_dir, session_id)
    if state == SessionState() and not os.path.lexists(target):
        return
    folder = os.path.dirname(target)
    private_folder(os.path.dirname(folder))  # the store's own folder, or beside it
    private_folder(folder)
    data = state.to_json()
    privatefile.replace(
        target, lambda out: json.dump(data, out, separators=(",", ":")), durable=False
    )
    _prune(folder, target)


def _prune(folder: str, kept: str) -> None:
    """Remove all but the :data:`MAX_SESSIONS` most recently written states,
    ``kept`` (the one just written) always among them: written within the
    clock's grain of others, or under a clock set back, it would otherwise
    sort among the oldest.  Another session's hook may be pruning at the
    same time: a file it removed between listing and reading is gone, as it
    would have been."""
    entries = []
    with os.scandir(folder) as found:
        for entry in found:
            if entry.path == kept:
                continue
            if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                try:
                    written = entry.stat(follow_symlinks=False).st_mtime_ns
                except FileNotFoundError:
                    continue  # another session's hook pruned it since it was listed
                entries.append((written, entry.path))
    for _, path in sorted(entries, reverse=True)[MAX_SESSIONS - 1 :]:
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue  # another session's hook pruned it first
