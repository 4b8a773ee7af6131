"""Adapters that let other agent hosts ask the engine for decisions (one leaf module each)."""
