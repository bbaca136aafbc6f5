-- 0005: the audit trail covers every MCP request, not only tool calls: one
-- row per JSON-RPC message (initialize, ping, tools/list, tools/call,
-- notifications ...). method is the JSON-RPC method ("tools/call"; action
-- stays the tool name for a tool call, the method otherwise); session is the
-- first 8 characters of the Mcp-Session-Id (enough to group a client's
-- requests, too short to reuse it), NULL for stateless requests and the CLI.

ALTER TABLE audit ADD COLUMN method TEXT;
ALTER TABLE audit ADD COLUMN session TEXT;
