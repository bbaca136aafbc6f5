// What three client libraries make of chat2sbx's tools/list, for e2e 38
// (issue 25): the OpenAI Agents SDK (@openai/agents: MCPServerStreamableHttp,
// the MCP tools turned into function tools with convertSchemasToStrict true
// and false), LangChain's MCP adapters (@langchain/mcp-adapters:
// MultiServerMCPClient's tools, and what @langchain/core would send to an
// OpenAI model, strict or not) and the AI SDK (@ai-sdk/mcp: tools()). Each
// connects to the running serve over Streamable HTTP (E2E_URL, E2E_TOKEN),
// lists the tools and converts them; no model is called. Prints one JSON line:
//   { raw: {tool: inputSchema}, converted: {library: {tool: parameters}}, strict: {tool: bool} }
// Runs on Node 22 (the Agents SDK's openai package needs it).
import { createMCPClient } from '@ai-sdk/mcp';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { MCPServerStreamableHttp, mcpToFunctionTool } from '@openai/agents';

const url = process.env.E2E_URL;
const headers = process.env.E2E_TOKEN ? { Authorization: `Bearer ${process.env.E2E_TOKEN}` } : {};
const out = { raw: {}, converted: {}, strict: {} };

// The OpenAI Agents SDK, as an Agent does with mcpServers (getAllMcpTools).
const server = new MCPServerStreamableHttp({ url, name: 'chat2sbx', requestInit: { headers } });
await server.connect();
try {
  const tools = await server.listTools();
  for (const t of tools) out.raw[t.name] = t.inputSchema;
  for (const strict of [true, false]) {
    const key = strict ? 'agents-strict' : 'agents';
    out.converted[key] = {};
    for (const t of tools) {
      const f = mcpToFunctionTool(t, server, strict);
      out.converted[key][t.name] = f.parameters;
      if (strict) out.strict[t.name] = f.strict;
    }
  }
} finally {
  await server.close();
}

// LangChain's MCP adapters.
const lc = new MultiServerMCPClient({ mcpServers: { chat2sbx: { transport: 'http', url, headers } }, prefixToolNameWithServerName: false });
try {
  const tools = await lc.getTools();
  out.converted.langchain = {};
  out.converted['langchain-openai'] = {};
  out.converted['langchain-openai-strict'] = {};
  for (const t of tools) {
    out.converted.langchain[t.name] = t.schema;
    out.converted['langchain-openai'][t.name] = convertToOpenAITool(t).function.parameters;
    out.converted['langchain-openai-strict'][t.name] = convertToOpenAITool(t, { strict: true }).function.parameters;
  }
} finally {
  await lc.close();
}

// The AI SDK.
const ai = await createMCPClient({ transport: { type: 'http', url, headers } });
try {
  const tools = await ai.tools();
  out.converted['ai-sdk'] = {};
  for (const [name, t] of Object.entries(tools)) out.converted['ai-sdk'][name] = await t.inputSchema.jsonSchema;
} finally {
  await ai.close();
}

process.stdout.write(`${JSON.stringify(out)}\n`);
