"""The embedded SQLite store (standard library only): :mod:`.store`,
:mod:`.migrations`, :mod:`.check` and :mod:`.transfer`."""
