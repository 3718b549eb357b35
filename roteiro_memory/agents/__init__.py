"""Where coding agents meet the memory: the MCP server and the session digest.

``server`` is the only module that imports the MCP SDK; ``tools`` describes
the tools and runs them without it, ``pack`` selects and renders the digest
without any I/O, and ``options``/``commands`` wire both into the CLI.
"""
