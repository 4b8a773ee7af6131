"""Adapters that let other agent hosts ask the engine for decisions (one leaf module each:
Claude Code and Codex, MCP, LangChain, the OpenAI Agents SDK)."""
