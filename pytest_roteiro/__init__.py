"""The ADR-0013 conformance suite as a pytest plugin.

``pytest --roteiro-conformance --roteiro-backend SPEC`` runs every YAML case in
``conformance/`` against a backend and reports, invariant by invariant, whether
it honours ADR-0013.  This package is only the pytest integration -- options
(:mod:`.plugin`), their resolved configuration (:mod:`.config`), hookspecs
(:mod:`.hookspecs`), the items and their failure rendering (:mod:`.items`,
:mod:`.property_items`); the engine that loads and runs cases is
:mod:`roteiro_memory.suite`, which needs no pytest.

Importing this package (as pytest does for every run through the ``pytest11``
entry point) loads nothing.
"""
