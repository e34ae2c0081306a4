"""Paper methods, each a standalone torch/numpy library exposed to actors as JSON tools.

Nothing here imports the workbench; the workbench only reads :mod:`methods.registry`.
"""
