"""The Slurm side of submitting: batch script, sbatch argv, sbatch itself."""
