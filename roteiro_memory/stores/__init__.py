"""The stores: each a thin persistence layer over :mod:`roteiro_memory.semantics`.

* :mod:`.model` -- the in-memory model, the oracle the others are tested against;
* :mod:`.sql` -- what both database stores share: the rules rendered as SQL,
  the shared SQL text and the column lists;
* :mod:`.sqlite` and :mod:`.postgres` -- the two database stores, folders of the
  same shape (``store``, ``migrations``, ``check``, ``transfer``);
* :mod:`.naming` -- one parser for store names, and :func:`open_store`.

Nothing is imported here, so naming one store never loads another.
"""
