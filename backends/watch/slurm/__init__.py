"""The Slurm clients a watcher runs: sacct and squeue (accounting), scancel (cancel)."""
