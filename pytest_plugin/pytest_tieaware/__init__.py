"""pytest plugin of tieaware: fail a test when tie order alone can move a retrieval metric too far.

Registered through the ``pytest11`` entry point ``tieaware`` (module `pytest_tieaware.plugin`).
"""
