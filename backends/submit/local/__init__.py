"""The local side of submitting: one child process per array value, in order."""
