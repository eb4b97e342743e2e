"""Submission core: site config, plans, local and slurm backends, job states.

Importable without Textual: the console is one of several faces of this core.
"""
