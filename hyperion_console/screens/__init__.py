"""The console's screens: Submit, Jobs, Checkpoint, and the Help and Confirm dialogs."""
