"""Building and running a submission: site config -> options -> plan -> local or Slurm runner.

``model`` holds the option and plan types; ``plan`` builds a plan from them
(pure); ``commandline`` parses hyperion-submit's arguments on top of the
planner; ``local`` and ``slurm`` render and run what the plan says.
"""
