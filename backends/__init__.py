"""Submission core: site config, plans, local and slurm backends, job states.

Importable without Textual: the console is one of several faces of this core.
Layers, lowest first (a module imports only from its own layer or below):

- ``errors``, ``ranges``, ``states``, ``logheader``: plain facts shared by all.
- ``records``: what a submission leaves on disk (the record, local results, the runner).
- ``submit`` (site config -> options -> plan -> local and Slurm runners) and
  ``watch`` (Slurm queries, poller, rows, logs, waiting); neither imports the other.
- ``launch``: the synchronous runs that submit a plan and then wait for it.
- ``cli``: hyperion-submit and hyperion-jobs.
"""
