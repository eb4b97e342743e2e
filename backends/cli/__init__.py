"""Command-line faces of the core (hyperion-submit, hyperion-jobs)."""
