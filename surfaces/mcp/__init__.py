"""The MCP server: drsg's reads, `ask`, `diff`, the digest and the log as tools for a model.

The tools run the JSON-RPC methods in process (same param checks, same errors), over stdio
(`drsg mcp`) or Streamable HTTP at `/mcp` on `drsg serve` (surfaces/mcp/http.py).
"""
