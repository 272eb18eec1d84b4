"""A package whose ``target`` module is the record test_targets builds (registered by
that test only)."""
