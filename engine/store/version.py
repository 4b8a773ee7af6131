"""The store's schema version, apart from the schema so that reading it needs no SQLAlchemy."""

SCHEMA_VERSION = 13
"""The version engine/store/schema.py creates; a store at it needs no migration."""
