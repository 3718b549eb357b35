"""A protocol server that breaks one rule of the wire form, for the tests.

``python tests/wire_mutant.py FLAW`` serves the in-memory model over stdin and
stdout like ``roteiro-memory protocol``, except for FLAW:

* ``extra-fields`` -- unknown request fields are ignored instead of refused;
* ``string-ids`` -- an id written as a string of digits is read as the integer;
* ``get-answered-twice`` -- every ``memory.get`` is answered twice, the
  second line the same as the first;
* ``get-marked`` -- every answer to ``memory.get`` starts with a UTF-8
  byte-order mark (U+FEFF), which RFC 8259 forbids before JSON text sent.
"""

from __future__ import annotations

import json
import sys

from roteiro_memory import protocol
from roteiro_memory.stores.model import ModelStore

_HANDLE_LINE = protocol.handle_line


def _loosened(flaw: str) -> object:
    def handle_line(ops: protocol.Ops, line: bytes) -> tuple[str, bool]:
        try:
            request = json.loads(line)
        except ValueError:
            return _HANDLE_LINE(ops, line)
        if not isinstance(request, dict):
            return _HANDLE_LINE(ops, line)
        loosened = dict(request)
        if flaw == "extra-fields":
            loosened = {k: v for k, v in request.items() if k in ("id", "op", "args")}
        elif flaw == "string-ids" and str(request.get("id")).isdigit():
            loosened["id"] = int(request["id"])
        if loosened != request:
            line = json.dumps(loosened).encode("utf-8")
        response, done = _HANDLE_LINE(ops, line)
        if flaw == "get-answered-twice" and request.get("op") == "memory.get":
            response = f"{response}\n{response}"  # the server ends it with one more newline
        elif flaw == "get-marked" and request.get("op") == "memory.get":
            response = f"\ufeff{response}"
        return response, done

    return handle_line


def main() -> int:
    protocol.handle_line = _loosened(sys.argv[1])  # type: ignore[assignment]  # the flaw
    return protocol.serve(ModelStore())


if __name__ == "__main__":
    raise SystemExit(main())
