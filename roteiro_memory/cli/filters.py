"""The graph's key prefixes, as anchors are written from ``--anchor``: the
key rule's own (:mod:`roteiro_memory.repo.languages`, which loads no git
machinery), named here for the command line."""

from __future__ import annotations

from roteiro_memory.repo.languages import FILE_PREFIX, KEY_PREFIXES, PY_PREFIX

__all__ = ["FILE_PREFIX", "KEY_PREFIXES", "PY_PREFIX"]
