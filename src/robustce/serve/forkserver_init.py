"""The first module the solver pool's forkserver preloads: it arms the forkserver's
parent-death signal (:func:`robustce.serve.lifeline.arm_forkserver`) before the heavy imports.
Imported anywhere else it does nothing (the parent it names is not that process's parent)."""

from robustce.serve.lifeline import arm_forkserver

arm_forkserver()
