"""Sandbox tests: contract suite (both runtimes) and adversarial suite."""
