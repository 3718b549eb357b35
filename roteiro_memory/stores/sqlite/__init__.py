"""The embedded SQLite store (standard library only): :mod:`.store`,
:mod:`.migrations`, :mod:`.check` and :mod:`.transfer`."""

__all__ = ["IN_MEMORY", "SIDE_FILES"]

IN_MEMORY = ":memory:"
"""The file name SQLite opens as a database in memory, as :mod:`sqlite3`
does: a store named so lives and dies with its connection, and no file is
made.  Here, where naming a store file needs nothing else loaded."""

SIDE_FILES = ("-wal", "-shm", "-journal")
"""The suffixes of the files SQLite keeps beside a database file: its
write-ahead log, the log's shared-memory index, and a rollback journal."""
