"""The Slurm backend: batch script, sbatch argv, submission, waiting and cancelling."""
