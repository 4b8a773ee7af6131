"""Adapters that let other agent hosts (Claude Code, Codex) ask the engine for decisions."""
