"""The one SQL store both database stores are: :mod:`.store` (the reads, and
the transaction each operation runs in) with :mod:`.writes`, :mod:`.cache` and
:mod:`.graph` (the writes, loaded when one is made), all written once over a
:class:`~.dialects.Dialect` (each engine's, :mod:`.dialects`), with the rules
of :mod:`roteiro_memory.semantics` rendered in it (:mod:`.expressions`); the
ranked reads and their early stop (:mod:`.ranking`); the term index
(:mod:`.index`); and the column lists (:mod:`.columns`)."""
