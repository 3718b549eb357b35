"""What the SQLite and PostgreSQL stores share: the rules of
:mod:`roteiro_memory.semantics` rendered as SQL (:mod:`.expressions`), the SQL
text both dialects run (:mod:`.shape`) and the column lists (:mod:`.columns`)."""
