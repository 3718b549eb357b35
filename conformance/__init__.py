"""The conformance cases, their JSON Schema and the invariant registry.

Data only: shipped inside the wheel as ``roteiro_memory.conformance`` and found
at run time through :mod:`importlib.resources`.
"""
