"""Tools an agent offers a model: kinds, the one guarded call path, exports, artifacts."""
