"""The PostgreSQL store (psycopg 3, the ``[postgres]`` extra): :mod:`.store`,
:mod:`.migrations`, :mod:`.check` and :mod:`.transfer`, the same shape as
:mod:`roteiro_memory.stores.sqlite`."""
