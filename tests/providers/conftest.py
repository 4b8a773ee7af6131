"""The scripted OpenAI-compatible server (tests/llm_server.py)."""

from tests.llm_server import llm

__all__ = ["llm"]
