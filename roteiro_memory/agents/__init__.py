"""Where coding agents meet the memory: the MCP server.

``server`` is the only module that imports the MCP SDK; ``tools`` describes
the tools and runs them through the use cases of :mod:`roteiro_memory.app`,
without the SDK; ``schemas`` holds the JSON Schemas of what they return.
"""
