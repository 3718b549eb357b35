"""The stores: each a thin persistence layer over :mod:`roteiro_memory.semantics`.

* :mod:`.model` -- the in-memory model, the oracle the others are tested against;
* :mod:`.sql` -- the one SQL store both database stores are, written once over
  a dialect, with the rules rendered as SQL and the column lists;
* :mod:`.sqlite` and :mod:`.postgres` -- the two database stores, folders of the
  same shape (``store``, ``migrations``, ``failures``, ``check``, ``transfer``):
  what each engine truly does its own way;
* :mod:`.naming` -- opening a store by name: one parser for store names,
  :func:`~.naming.open_store`, the store the conformance suite names by an
  environment variable, and the backends the suite's entry points build.

Nothing is imported here, so naming one store never loads another.
"""
