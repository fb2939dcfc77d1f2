"""pytest plugin for tie-stability checks (see issue: pytest plugin)."""
