"""The ADR-0013 conformance suite as a pytest plugin.

``pytest --roteiro-conformance --roteiro-backend SPEC`` runs every YAML case in
``conformance/`` against a backend and reports, invariant by invariant, whether
it honours ADR-0013.  The pieces that do not need pytest -- :mod:`.cases`
(loading and validating case files), :mod:`.runner` (running one case),
:mod:`.backends` (resolving a backend) and :mod:`.report` -- import nothing from
pytest, so other tools can use them.  This module imports nothing at all, so
loading the plugin costs nothing while the suite is off.
"""

from __future__ import annotations

__all__: list[str] = []
